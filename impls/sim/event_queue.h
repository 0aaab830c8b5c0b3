// The simulator's queues of events on virtual time: a 4-ary min-heap of compact event records,
// and a small indexed heap of timers that can be cancelled. Private to impls/sim/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace collcheck::sim {

enum class EventKind : std::uint8_t { Wake, StepDone, Arrival, GoBack, Timeout, Release };

// 32 bytes. `tie` is mix64(seed ^ mix64(n)) of the event's number n, a bijection of n: no two
// events share it, so (time, tie) orders every pair, and a seed fixes one interleaving.
struct Event {
  double time;
  std::uint64_t tie;
  std::int32_t participant;
  std::int32_t step;
  std::uint32_t message;  // Arrival: into the wire's records; GoBack, Release: into go-backs; Timeout: the call
  EventKind kind;

  bool before(const Event& other) const { return time < other.time || (time == other.time && tie < other.tie); }
};

// A 4-ary heap: half the depth of a binary one, and a node's children share a cache line or two.
class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }

  void push(const Event& event) {
    std::size_t at = heap_.size();
    heap_.push_back(event);
    while (at > 0) {
      const std::size_t parent = (at - 1) / kArity;
      if (!event.before(heap_[parent])) break;
      heap_[at] = heap_[parent];
      at = parent;
    }
    heap_[at] = event;
  }

  void pop() {
    const Event last = heap_.back();
    heap_.pop_back();
    if (heap_.empty()) return;
    const std::size_t count = heap_.size();
    std::size_t at = 0;
    for (;;) {
      const std::size_t first = at * kArity + 1;
      if (first >= count) break;
      std::size_t least = first;
      const std::size_t end = first + kArity < count ? first + kArity : count;
      for (std::size_t child = first + 1; child < end; ++child) {
        if (heap_[child].before(heap_[least])) least = child;
      }
      if (!heap_[least].before(last)) break;
      heap_[at] = heap_[least];
      at = least;
    }
    heap_[at] = last;
  }

 private:
  static constexpr std::size_t kArity = 4;
  std::vector<Event> heap_;
};

// Timers, at most one per slot (a participant's stream): arming a slot again moves its timer, and
// cancelling removes it at once, so a timer whose wait ended never occupies memory or an event.
class TimerQueue {
 public:
  explicit TimerQueue(std::size_t slots = 0) : position_(slots, kNone) {}

  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.front().event; }
  std::size_t top_slot() const { return heap_.front().slot; }
  bool armed(std::size_t slot) const { return position_[slot] != kNone; }

  void arm(std::size_t slot, const Event& event) {
    cancel(slot);
    position_[slot] = heap_.size();
    heap_.push_back(Entry{event, slot});
    rise(heap_.size() - 1);
  }

  void cancel(std::size_t slot) {
    const std::size_t at = position_[slot];
    if (at == kNone) return;
    position_[slot] = kNone;
    const std::size_t last = heap_.size() - 1;
    if (at != last) {
      heap_[at] = heap_[last];
      position_[heap_[at].slot] = at;
    }
    heap_.pop_back();
    if (at == last) return;
    // The last timer moved into the hole: up if it is earlier than its parent, else down (when it
    // went up, what came down into the hole is earlier than everything below it).
    rise(at);
    sink(at);
  }

 private:
  struct Entry {
    Event event;
    std::size_t slot;
  };
  static constexpr std::size_t kNone = ~std::size_t{0};

  void place(std::size_t at, Entry entry) {
    position_[entry.slot] = at;
    heap_[at] = entry;
  }

  void rise(std::size_t at) {
    const Entry entry = heap_[at];
    while (at > 0) {
      const std::size_t parent = (at - 1) / 2;
      if (!entry.event.before(heap_[parent].event)) break;
      place(at, heap_[parent]);
      at = parent;
    }
    place(at, entry);
  }

  void sink(std::size_t at) {
    const Entry entry = heap_[at];
    const std::size_t count = heap_.size();
    for (;;) {
      std::size_t least = at * 2 + 1;
      if (least >= count) break;
      if (least + 1 < count && heap_[least + 1].event.before(heap_[least].event)) ++least;
      if (!heap_[least].event.before(entry.event)) break;
      place(at, heap_[least]);
      at = least;
    }
    place(at, entry);
  }

  std::vector<Entry> heap_;
  std::vector<std::size_t> position_;  // per slot: where its timer is in heap_, or kNone
};

}  // namespace collcheck::sim
