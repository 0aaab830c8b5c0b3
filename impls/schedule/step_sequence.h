// A participant's steps as a resumable sequence made on demand: a C++20 coroutine that yields
// its steps in order, so that a schedule need not hold them all (a ring at 16,384 ranks has a billion).
#pragma once

#include <coroutine>
#include <exception>
#include <utility>

namespace collcheck {

struct Step;

// Read with one cursor, in order: `next()` makes the next step and says whether there was one,
// `step()` is that step until the following `next()`. A generator writes
//
//   StepSequence steps_of_rank(...) { for (...) co_yield Step{...}; }
//
// and its body runs only as far as the step asked for; a generator's own invariant that breaks
// throws out of next(). Move-only; destroying it ends the sequence where it stands.
template <typename Value>
class Sequence {
 public:
  // The promise keeps where the yielded value is, not a copy of it: the value (a temporary of the
  // co_yield expression, or a generator's variable) lives until the coroutine resumes, as
  // std::generator has it. (Copying a Step just made, its fields freshly stored, into the promise
  // stalled on store forwarding and took a third of the ring generator's time.)
  struct promise_type {
    const Value* current = nullptr;
    std::exception_ptr failure;

    Sequence get_return_object() { return Sequence(Handle::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(const Value& value) noexcept {
      current = &value;
      return {};
    }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { failure = std::current_exception(); }
  };
  using Handle = std::coroutine_handle<promise_type>;

  Sequence() = default;
  Sequence(Sequence&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Sequence& operator=(Sequence&& other) noexcept {
    if (this != &other) {
      if (handle_) handle_.destroy();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;
  ~Sequence() {
    if (handle_) handle_.destroy();
  }

  bool next() {
    if (!handle_ || handle_.done()) return false;
    handle_.resume();
    if (handle_.promise().failure) std::rethrow_exception(std::exchange(handle_.promise().failure, {}));
    return !handle_.done();
  }
  const Value& step() const { return *handle_.promise().current; }

 private:
  explicit Sequence(Handle handle) : handle_(handle) {}
  Handle handle_;
};

using StepSequence = Sequence<Step>;

}  // namespace collcheck
