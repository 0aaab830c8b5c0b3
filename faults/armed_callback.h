// The armed state of the libraries collcheck loads into other programs' processes (the socket
// interposer, the NCCL net plugin): a callback and its context that the worker sets for one run,
// and a count of calls inside the callback so that disarming can wait until the context may be
// destroyed. Constant-initialised atomics only: no static constructors, no locks, no exceptions.
#pragma once

#include <atomic>
#include <cerrno>
#include <ctime>

namespace collcheck {

// Sleeps `seconds`, through signals.
inline void sleep_seconds(double seconds) {
  const auto whole = static_cast<time_t>(seconds);
  timespec left{whole, static_cast<long>((seconds - static_cast<double>(whole)) * 1e9)};
  while (::nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

template <typename Callback>
class ArmedCallback {
 public:
  // Starts passing calls to `given_callback` with `given_context`; false when armed already.
  bool arm(Callback given_callback, void* given_context) {
    if (armed_.load(std::memory_order_acquire)) return false;
    context_.store(given_context, std::memory_order_release);
    callback_.store(given_callback, std::memory_order_release);
    armed_.store(true, std::memory_order_release);
    return true;
  }

  // Stops calling the callback; returns once no call is inside it any more.
  void disarm() {
    armed_.store(false, std::memory_order_release);
    while (inside_.load(std::memory_order_acquire) > 0) sleep_seconds(0.0005);
    callback_.store(nullptr, std::memory_order_release);
    context_.store(nullptr, std::memory_order_release);
  }

  // True, and the caller must leave(), when armed: callback() and context() are then valid until
  // leave(). One atomic load when not armed.
  bool enter() {
    if (!armed_.load(std::memory_order_acquire)) return false;
    inside_.fetch_add(1, std::memory_order_acq_rel);
    if (armed_.load(std::memory_order_acquire)) return true;
    inside_.fetch_sub(1, std::memory_order_acq_rel);
    return false;
  }
  void leave() { inside_.fetch_sub(1, std::memory_order_acq_rel); }

  bool armed() const { return armed_.load(std::memory_order_acquire); }
  Callback callback() const { return callback_.load(std::memory_order_acquire); }
  void* context() const { return context_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> armed_{false};
  std::atomic<int> inside_{0};
  std::atomic<Callback> callback_{nullptr};
  std::atomic<void*> context_{nullptr};
};

}  // namespace collcheck
