// A participant's steps as a resumable sequence made on demand: a C++20 coroutine that yields
// its steps in order, so that a schedule need not hold them all (a ring at 16,384 ranks has a billion).
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <span>
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
//
// A generator that makes steps by the billion may also yield a batch, `co_yield std::span<const
// Step>(made, count)` over steps it keeps until it resumes: next() then walks the batch and
// resumes the coroutine only past its end, since a resume costs about as much as making a step.
// The reader sees one step at a time either way, or the rest of a batch at once (next_batch).
template <typename Value>
class Sequence {
 public:
  // The promise keeps where the yielded value is, not a copy of it: the value (a temporary of the
  // co_yield expression, or a generator's variable) lives until the coroutine resumes, as
  // std::generator has it. (Copying a Step just made, its fields freshly stored, into the promise
  // stalled on store forwarding and took a third of the ring generator's time.)
  struct promise_type {
    const Value* current = nullptr;  // the first value of the batch yielded last
    std::size_t yielded = 0;         // how many values that batch holds
    std::exception_ptr failure;

    Sequence get_return_object() { return Sequence(Handle::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept {
      yielded = 0;  // nothing more to walk, however often next() is asked
      return {};
    }
    std::suspend_always yield_value(const Value& value) noexcept {
      current = &value;
      yielded = 1;
      return {};
    }
    std::suspend_always yield_value(std::span<const Value> values) noexcept {
      current = values.data();
      yielded = values.size();
      return {};
    }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { failure = std::current_exception(); }
  };
  using Handle = std::coroutine_handle<promise_type>;

  Sequence() = default;
  Sequence(Sequence&& other) noexcept
      : handle_(std::exchange(other.handle_, {})), at_(std::exchange(other.at_, nullptr)),
        begin_(std::exchange(other.begin_, nullptr)), end_(std::exchange(other.end_, nullptr)) {}
  Sequence& operator=(Sequence&& other) noexcept {
    if (this != &other) {
      if (handle_) handle_.destroy();
      handle_ = std::exchange(other.handle_, {});
      at_ = std::exchange(other.at_, nullptr);
      begin_ = std::exchange(other.begin_, nullptr);
      end_ = std::exchange(other.end_, nullptr);
    }
    return *this;
  }
  Sequence(const Sequence&) = delete;
  Sequence& operator=(const Sequence&) = delete;
  ~Sequence() {
    if (handle_) handle_.destroy();
  }

  bool next() {
    if (!handle_) return false;
    if (at_ != end_ && ++at_ != end_) return true;
    promise_type& promise = handle_.promise();
    do {  // an empty batch yields nothing: on to the next one
      if (handle_.done()) return false;
      handle_.resume();
      if (promise.failure) std::rethrow_exception(std::exchange(promise.failure, {}));
    } while (!handle_.done() && promise.yielded == 0);
    if (handle_.done()) return false;
    at_ = promise.current;
    begin_ = at_;
    end_ = promise.current + promise.yielded;
    return true;
  }
  // What the coroutine writes when it resumes next, for a reader that asks the cache for it ahead:
  // the batch yielded last (a generator yields each batch from the same storage, kept in its frame)
  // and the frame's start; nothing while steps of the batch are left to walk.
  bool resumes_next() const { return handle_ && (at_ == end_ || at_ + 1 == end_); }
  std::span<const Value> last_batch() const { return {begin_, end_}; }
  const void* frame() const { return handle_.address(); }
  const Value& step() const { return *at_; }
  // The steps from the next one to the end of the batch they were yielded in (empty at the end),
  // the cursor left on the last of them: for a reader that walks a batch in a loop of its own.
  // They stay valid until the next call.
  std::span<const Value> next_batch() {
    if (!next()) return {};
    const std::span<const Value> batch(at_, end_);
    at_ = end_ - 1;
    return batch;
  }

 private:
  explicit Sequence(Handle handle) : handle_(handle) {}
  Handle handle_;
  // The batch yielded last, [at_, end_), as the promise said when the coroutine stopped: read
  // from here, the promise's line of the frame is read only when the coroutine resumes (at
  // thousands of ranks each frame is a cache miss of its own, and a step's would be two).
  const Value* at_ = nullptr;  // the value step() is
  const Value* begin_ = nullptr;
  const Value* end_ = nullptr;
};

using StepSequence = Sequence<Step>;

}  // namespace collcheck
