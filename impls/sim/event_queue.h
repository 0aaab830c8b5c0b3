// The simulator's queues of events on virtual time: compact event records in buckets by time,
// and a heap of timers, one per slot, armed again and cancelled in constant time. Private to impls/sim/.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
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

// Events in (time, tie) order. The queue works as follows. Events of one time share a `Bucket`;
// a 4-ary heap orders the buckets by time (half the depth of a binary heap, and a node's children
// share a cache line). A bucket is filled unordered; when it first comes to the front its events
// are sorted by tie (a radix sort on the tie's top bits, then insertion to finish: ties are random,
// so no comparison mispredicts half the time as a heap's sift does) and read from the front. An
// event pushed into a bucket already sorted (a step done at the very time it started) goes into
// the bucket's own small heap of `late` events, read in turn with the sorted ones. A simulation in
// lockstep (a ring's wave: thousands of arrivals at one time) thus costs an append and a read per
// event, not two sifts through a heap as large as the ranks. The bucket of the last time pushed
// to is remembered, so that a wave's pushes find theirs without a lookup.
class EventQueue {
 public:
  bool empty() const { return count_ == 0; }
  std::size_t size() const { return count_; }

  // The earliest event (the queue is not empty).
  const Event& top() {
    Bucket& bucket = front();
    if (!bucket.late.empty() &&
        (bucket.next == bucket.events.size() || bucket.late.front().before(bucket.events[bucket.next]))) {
      return bucket.late.front();
    }
    return bucket.events[bucket.next];
  }

  // The event `distance` places behind the earliest, among the sorted ones of the earliest time and
  // the next (sorted here if it was not: what is pushed to it later is late), or null: what the
  // engine will soon handle, so that it can ask the cache for its records early.
  const Event* ahead(std::size_t distance) {
    if (heap_.empty()) return nullptr;
    const Bucket& first = buckets_[heap_.front().bucket];
    if (!first.sorted) return nullptr;
    const std::size_t left = first.events.size() - first.next;
    if (distance < left) return &first.events[first.next + distance];
    if (heap_.size() < 2) return nullptr;
    std::size_t second = 1;
    for (std::size_t child = 2; child <= kArity && child < heap_.size(); ++child) {
      if (heap_[child].time < heap_[second].time) second = child;
    }
    Bucket& then = buckets_[heap_[second].bucket];
    if (!then.sorted) sort_bucket(then);
    const std::size_t at = then.next + (distance - left);
    return at < then.events.size() ? &then.events[at] : nullptr;
  }

  void pop() {
    Bucket& bucket = front();
    if (!bucket.late.empty() &&
        (bucket.next == bucket.events.size() || bucket.late.front().before(bucket.events[bucket.next]))) {
      std::pop_heap(bucket.late.begin(), bucket.late.end(), later);
      bucket.late.pop_back();
    } else {
      ++bucket.next;
    }
    --count_;
    if (bucket.next == bucket.events.size() && bucket.late.empty()) retire_front();
  }

  void push(const Event& event) {
    ++count_;
    Bucket& bucket = buckets_[bucket_at(event.time)];
    if (!bucket.sorted) {
      bucket.events.push_back(event);
      return;
    }
    bucket.late.push_back(event);
    std::push_heap(bucket.late.begin(), bucket.late.end(), later);
  }

 private:
  struct Bucket {
    double time = 0;
    std::vector<Event> events;  // sorted by tie once `sorted`, read from `next`
    std::size_t next = 0;
    bool sorted = false;
    std::vector<Event> late;  // pushed once sorted: a min-heap by tie
  };
  struct Front {
    double time;
    std::uint32_t bucket;
  };
  static constexpr std::size_t kArity = 4;
  static constexpr std::uint32_t kNoBucket = ~std::uint32_t{0};

  static bool later(const Event& a, const Event& b) { return b.tie < a.tie; }
  static std::uint64_t bits(double time) { return std::bit_cast<std::uint64_t>(time); }

  // The bucket of `time`, made when there is none.
  std::uint32_t bucket_at(double time) {
    if (last_pushed_ != kNoBucket && buckets_[last_pushed_].time == time) return last_pushed_;
    const auto [found, added] = by_time_.try_emplace(bits(time), kNoBucket);
    if (added) {
      if (free_.empty()) {
        found->second = static_cast<std::uint32_t>(buckets_.size());
        buckets_.emplace_back();
      } else {
        found->second = free_.back();
        free_.pop_back();
      }
      Bucket& bucket = buckets_[found->second];
      bucket.time = time;
      heap_push(Front{time, found->second});
    }
    last_pushed_ = found->second;
    return found->second;
  }

  // The earliest bucket, sorted.
  Bucket& front() {
    Bucket& bucket = buckets_[heap_.front().bucket];
    if (!bucket.sorted) sort_bucket(bucket);
    return bucket;
  }

  void sort_bucket(Bucket& bucket) {
    sort_by_tie(bucket.events, scratch_);
    bucket.sorted = true;
  }

  // The earliest bucket is spent: its storage is kept for a later time.
  void retire_front() {
    const std::uint32_t index = heap_.front().bucket;
    Bucket& bucket = buckets_[index];
    by_time_.erase(bits(bucket.time));
    bucket.events.clear();
    bucket.next = 0;
    bucket.sorted = false;
    if (last_pushed_ == index) last_pushed_ = kNoBucket;
    free_.push_back(index);
    heap_pop();
  }

  static void sort_by_tie(std::vector<Event>& events, std::vector<Event>& scratch) {
    constexpr std::size_t kRadixFrom = 256;
    if (events.size() < kRadixFrom) {
      std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.tie < b.tie; });
      return;
    }
    // Two passes of 8 bits on the tie's top 16, least significant first; then insertion sort puts
    // the few events that share those bits in order.
    scratch.resize(events.size());
    for (int shift = 48; shift <= 56; shift += 8) {
      std::size_t starts[257] = {};
      for (const Event& event : events) ++starts[((event.tie >> shift) & 0xFF) + 1];
      for (std::size_t digit = 1; digit < 257; ++digit) starts[digit] += starts[digit - 1];
      for (const Event& event : events) scratch[starts[(event.tie >> shift) & 0xFF]++] = event;
      events.swap(scratch);
    }
    for (std::size_t at = 1; at < events.size(); ++at) {
      const Event event = events[at];
      std::size_t hole = at;
      for (; hole > 0 && event.tie < events[hole - 1].tie; --hole) events[hole] = events[hole - 1];
      events[hole] = event;
    }
  }

  void heap_push(Front entry) {
    std::size_t at = heap_.size();
    heap_.push_back(entry);
    while (at > 0) {
      const std::size_t parent = (at - 1) / kArity;
      if (!(entry.time < heap_[parent].time)) break;
      heap_[at] = heap_[parent];
      at = parent;
    }
    heap_[at] = entry;
  }

  void heap_pop() {
    const Front last = heap_.back();
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
        if (heap_[child].time < heap_[least].time) least = child;
      }
      if (!(heap_[least].time < last.time)) break;
      heap_[at] = heap_[least];
      at = least;
    }
    heap_[at] = last;
  }

  std::size_t count_ = 0;
  std::vector<Bucket> buckets_;
  std::vector<std::uint32_t> free_;                           // buckets spent, to reuse
  std::vector<Front> heap_;                                   // the buckets with events, by time
  std::unordered_map<std::uint64_t, std::uint32_t> by_time_;  // a time's bits: its bucket
  std::uint32_t last_pushed_ = kNoBucket;
  std::vector<Event> scratch_;  // the radix sort's second array
};

// Timers, at most one per slot (a participant's stream): arming a slot again moves its timer, and
// a cancelled timer never fires. The queue works as follows. A slot keeps its due event; the heap
// keeps at most one entry per slot, never later than the slot's due event. Arming a slot earlier
// than its entry moves the entry up; arming it later (a receive's timer is armed again with every
// message, always later) or cancelling it only changes the slot, in constant time. An entry that
// comes first is settled before it is handed out: a cancelled slot's entry is dropped, a slot due
// later has its entry moved down to its due event. So the heap never holds more entries than there
// are slots, and the timers come out in (time, tie) order as if each arm and cancel had moved them.
class TimerQueue {
 public:
  explicit TimerQueue(std::size_t slots = 0) : slots_(slots) {}

  // Whether no timer is armed (entries of cancelled timers are dropped first).
  bool empty() {
    settle();
    return heap_.empty();
  }
  // The earliest armed timer's event and slot (the queue is not empty).
  const Event& top() {
    settle();
    return heap_.front().event;
  }
  std::size_t top_slot() {
    settle();
    return heap_.front().slot;
  }
  bool armed(std::size_t slot) const { return slots_[slot].armed; }
  std::size_t entries() const { return heap_.size(); }  // at most one per slot

  void arm(std::size_t slot, const Event& event) {
    Slot& state = slots_[slot];
    state.due = event;
    state.armed = true;
    if (state.position == kNone) {
      state.position = heap_.size();
      heap_.push_back(Entry{event, slot});
      rise(heap_.size() - 1);
      return;
    }
    if (event.before(heap_[state.position].event)) {
      heap_[state.position].event = event;
      rise(state.position);
    }
  }

  void cancel(std::size_t slot) { slots_[slot].armed = false; }

 private:
  struct Entry {
    Event event;
    std::size_t slot;
  };
  struct Slot {
    Event due{};                   // the timer armed last, when `armed`
    std::size_t position = kNone;  // where its entry is in heap_, or kNone
    bool armed = false;
  };
  static constexpr std::size_t kNone = ~std::size_t{0};

  static bool same(const Event& a, const Event& b) { return a.time == b.time && a.tie == b.tie; }

  // Until the first entry is its slot's due timer: drop it when cancelled, move it down to its due
  // event when armed later.
  void settle() {
    while (!heap_.empty()) {
      const Entry& first = heap_.front();
      Slot& state = slots_[first.slot];
      if (state.armed && same(state.due, first.event)) return;
      if (state.armed) {
        heap_.front().event = state.due;
      } else {
        state.position = kNone;
        const Entry last = heap_.back();
        heap_.pop_back();
        if (heap_.empty()) return;
        heap_.front() = last;
      }
      sink(0);
    }
  }

  void place(std::size_t at, Entry entry) {
    slots_[entry.slot].position = at;
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
  std::vector<Slot> slots_;
};

}  // namespace collcheck::sim
