// The simulator's queue of events on virtual time: compact event records in a FIFO of those
// pushed in order and in buckets by time (timers: timer_queue.h). Private to impls/sim/.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
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

// A queue read from the front that keeps its items in one vector (a deque would allocate a block
// for every stream before it holds anything); taken items' places are dropped once they are half.
template <typename Item>
struct Fifo {
  std::vector<Item> items;
  std::size_t first = 0;

  std::size_t size() const { return items.size() - first; }
  bool empty() const { return first == items.size(); }
  Item& operator[](std::size_t k) { return items[first + k]; }
  const Item& operator[](std::size_t k) const { return items[first + k]; }
  const Item& back() const { return items.back(); }
  void push(Item item) { items.push_back(std::move(item)); }
  Item pop() {
    Item front = std::move(items[first]);
    drop(1);
    return front;
  }
  void drop(std::size_t how_many) {
    first += how_many;
    if (first == items.size()) {
      items.clear();
      first = 0;
    } else if (first * 2 > items.size()) {
      items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(first));
      first = 0;
    }
  }
};

// A Fifo whose oldest few items (kNear) live in its owner's record, for a queue that mostly holds
// one or two: pushing and taking them reads no line but the owner's (at thousands of ranks a
// vector's storage is a cache miss of its own). It works as follows. The `near` ring holds the
// oldest items; only once it is full do new ones go to the `far` Fifo, and taking a near item
// moves the oldest far one into the ring. So the far Fifo is read only while the ring is full, and
// its record may lie on a colder line than the ring. Its storage is let go as it empties: a queue
// spills rarely (a reliable sender far ahead of a receiver waiting for a lost message keeps
// thousands), and thousands of them each keeping its largest spill added up to hundreds of MB.
// (Keeping a small spill's storage for the next one saved a ring's allocations, but made the
// 16,384-rank ring with faults 3-4 % slower side by side: docs/performance.md.)
template <typename Item, std::size_t kNear>
struct NearFifo {
  Item near[kNear] = {};
  std::uint8_t first = 0;       // the oldest item's place in the ring
  std::uint8_t near_count = 0;  // how many of the ring's places hold items
  Fifo<Item> far;               // the newer items, once the ring is full

  std::size_t size() const { return near_count < kNear ? near_count : kNear + far.size(); }
  bool empty() const { return near_count == 0; }
  Item& operator[](std::size_t k) { return k < near_count ? near[(first + k) % kNear] : far[k - kNear]; }
  const Item& operator[](std::size_t k) const { return k < near_count ? near[(first + k) % kNear] : far[k - kNear]; }
  void push(Item item) {
    if (near_count < kNear) {
      near[(first + near_count) % kNear] = std::move(item);
      ++near_count;
      return;
    }
    far.push(std::move(item));
  }
  Item pop() {
    Item front = std::move(near[first]);
    first = static_cast<std::uint8_t>((first + 1) % kNear);
    --near_count;
    if (near_count + 1 == kNear && !far.empty()) {
      near[(first + near_count) % kNear] = far.pop();
      ++near_count;
      if (far.empty()) far = Fifo<Item>{};  // its storage goes (see above)
    }
    return front;
  }
  void drop(std::size_t how_many) {
    // Nothing spilled, items that own nothing: the ring's front only moves on.
    if constexpr (std::is_trivially_copyable_v<Item>) {
      if (far.empty()) {
        const auto dropped = static_cast<std::uint8_t>(how_many < near_count ? how_many : near_count);
        first = static_cast<std::uint8_t>((first + dropped) % kNear);
        near_count = static_cast<std::uint8_t>(near_count - dropped);
        return;
      }
    }
    for (; how_many > 0 && near_count > 0; --how_many) pop();
  }
};

// Times with a bucket each, earliest first. The index works as follows. A time's bucket is found
// in an open-addressing table keyed by the time's bits (linear probing, deletion by shifting back,
// so it never allocates per time). The times themselves wait in two lines: `rising`, a FIFO of
// times added in increasing order (most are: a message arrives a fixed travel after it is sent,
// and sends happen in time order), and a 4-ary heap for the others (a request to go back, a
// message behind a busy link). The earliest time is the earlier of the two fronts.
class TimesIndex {
 public:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};

  bool empty() const { return rising_.empty() && heap_.empty(); }

  // The bucket of `time`, or kNone.
  std::uint32_t find(double time) const {
    if (table_.empty()) return kNone;
    const std::uint64_t key = bits(time);
    for (std::size_t at = home(key);; at = (at + 1) & mask()) {
      if (table_[at].bucket == kNone) return kNone;
      if (table_[at].key == key) return table_[at].bucket;
    }
  }

  void add(double time, std::uint32_t bucket) {
    if ((count_ + 1) * 2 > table_.size()) grow();
    place(bits(time), bucket);
    ++count_;
    if (rising_.empty() || rising_.back().time < time) {
      rising_.push(Entry{time, bucket});
    } else {
      heap_push(Entry{time, bucket});
    }
  }

  // The earliest time's bucket (the index is not empty).
  std::uint32_t earliest() const { return from_rising() ? rising_[0].bucket : heap_.front().bucket; }

  // The second earliest time's bucket, or kNone.
  std::uint32_t second() const {
    const bool rising_first = from_rising();
    Entry best{0, kNone};
    auto consider = [&best](const Entry& entry) {
      if (best.bucket == kNone || entry.time < best.time) best = entry;
    };
    const std::size_t next_rising = rising_first ? 1 : 0;
    if (next_rising < rising_.size()) consider(rising_[next_rising]);
    if (rising_first) {
      if (!heap_.empty()) consider(heap_.front());
    } else {
      for (std::size_t child = 1; child <= kArity && child < heap_.size(); ++child) consider(heap_[child]);
    }
    return best.bucket;
  }

  void remove_earliest(double time) {
    erase(bits(time));
    --count_;
    if (from_rising()) {
      rising_.drop(1);
      return;
    }
    heap_pop();
  }

 private:
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t bucket = kNone;
  };
  struct Entry {
    double time;
    std::uint32_t bucket;
  };
  static constexpr std::size_t kArity = 4;

  static std::uint64_t bits(double time) { return std::bit_cast<std::uint64_t>(time); }
  std::size_t mask() const { return table_.size() - 1; }
  std::size_t home(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ULL) >> 32) & mask();
  }
  bool from_rising() const { return !rising_.empty() && (heap_.empty() || rising_[0].time < heap_.front().time); }

  void place(std::uint64_t key, std::uint32_t bucket) {
    std::size_t at = home(key);
    while (table_[at].bucket != kNone) at = (at + 1) & mask();
    table_[at] = Slot{key, bucket};
  }

  void grow() {
    std::vector<Slot> old(std::max<std::size_t>(64, table_.size() * 2));
    old.swap(table_);
    for (const Slot& slot : old) {
      if (slot.bucket != kNone) place(slot.key, slot.bucket);
    }
  }

  // Linear probing's deletion: later keys of the run move back into the hole where they may.
  void erase(std::uint64_t key) {
    std::size_t hole = home(key);
    while (table_[hole].key != key || table_[hole].bucket == kNone) hole = (hole + 1) & mask();
    for (std::size_t at = (hole + 1) & mask(); table_[at].bucket != kNone; at = (at + 1) & mask()) {
      const std::size_t wants = home(table_[at].key);
      // The key at `at` may fill the hole when its home is not in (hole, at], cyclically.
      const bool stays = hole <= at ? (hole < wants && wants <= at) : (hole < wants || wants <= at);
      if (stays) continue;
      table_[hole] = table_[at];
      hole = at;
    }
    table_[hole] = Slot{};
  }

  void heap_push(Entry entry) {
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
    const Entry last = heap_.back();
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

  std::vector<Slot> table_;  // a power of two, at most half full
  std::size_t count_ = 0;
  Fifo<Entry> rising_;
  std::vector<Entry> heap_;
};

// Events in (time, tie) order. The queue works as follows. An event later than every event in
// the `in_order` FIFO joins its back (a message arrives a fixed travel after it is sent, and sends
// happen in time order, so where times differ nearly every event does); the FIFO is read from the
// front, records side by side. Any other event goes to the `Bucket` of its time, and a TimesIndex
// finds a time's bucket and the earliest time. A bucket is filled unordered; when it first comes
// to the front its events are sorted by tie (a radix sort on the tie's top bits, then insertion to
// finish: ties are random, so no comparison mispredicts half the time as a heap's sift does) and
// read from the front. An event pushed into a bucket already sorted (a step done at the very time
// it started) goes into the bucket's own small heap of `late` events, read in turn with the sorted
// ones. The earliest event is the earlier of the FIFO's front and the earliest bucket's. A ring in
// lockstep (a wave of thousands of arrivals at one time, in random tie order) thus costs an append
// and a read per event, as does one whose times all differ (a ring long after its first faults),
// not two sifts through a heap as large as the ranks. The bucket of the last time pushed to is
// remembered, so that a wave's pushes find theirs without a lookup.
class EventQueue {
 public:
  bool empty() const { return count_ == 0; }
  std::size_t size() const { return count_; }

  // The earliest event (the queue is not empty).
  const Event& top() {
    if (from_in_order()) return in_order_[0];
    Bucket& bucket = front();
    return late_first(bucket) ? bucket.late.front() : bucket.events[bucket.next];
  }

  // The events of the earliest one's line in the order they will be popped, from the earliest on,
  // as far as that line goes (the FIFO, or the sorted events of the earliest time); empty when the
  // queue is. Events of the other line, and a bucket's late ones, may come between. What the engine
  // will soon handle, so that it can ask the cache for their records early: found once per event,
  // read at several distances.
  std::span<const Event> ahead() {
    if (count_ == 0) return {};
    if (from_in_order()) return {&in_order_[0], in_order_.size()};
    const Bucket& bucket = front();
    return {bucket.events.data() + bucket.next, bucket.events.size() - bucket.next};
  }

  void pop() {
    --count_;
    const bool in_order = from_in_order();
    source_ = Source::Unknown;
    if (in_order) {
      in_order_.drop(1);
      return;
    }
    Bucket& bucket = front();
    if (late_first(bucket)) {
      std::pop_heap(bucket.late.begin(), bucket.late.end(), later);
      bucket.late.pop_back();
    } else {
      ++bucket.next;
    }
    if (bucket.next == bucket.events.size() && bucket.late.empty()) retire_front();
  }

  void push(const Event& event) {
    ++count_;
    source_ = Source::Unknown;
    if (in_order_.empty() || in_order_.back().before(event)) {
      in_order_.push(event);
      return;
    }
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

  static bool later(const Event& a, const Event& b) { return b.tie < a.tie; }
  // Whether the earliest event is the FIFO's; worked out once between a push or pop and the next
  // (asked several times per event: the answer known is read inline).
  bool from_in_order() {
    if (source_ != Source::Unknown) return source_ == Source::InOrder;
    return find_source();
  }
  [[gnu::noinline]] bool find_source() {
    bool in_order = !in_order_.empty();
    if (in_order && !times_.empty()) {
      Bucket& bucket = front();
      in_order = in_order_[0].before(late_first(bucket) ? bucket.late.front() : bucket.events[bucket.next]);
    }
    source_ = in_order ? Source::InOrder : Source::Bucketed;
    return in_order;
  }
  static bool late_first(const Bucket& bucket) {
    return !bucket.late.empty() &&
           (bucket.next == bucket.events.size() || bucket.late.front().before(bucket.events[bucket.next]));
  }

  // The bucket of `time`, made when there is none.
  std::uint32_t bucket_at(double time) {
    if (last_pushed_ != TimesIndex::kNone && buckets_[last_pushed_].time == time) return last_pushed_;
    std::uint32_t index = times_.find(time);
    if (index == TimesIndex::kNone) {
      if (free_.empty()) {
        index = static_cast<std::uint32_t>(buckets_.size());
        buckets_.emplace_back();
      } else {
        index = free_.back();
        free_.pop_back();
      }
      buckets_[index].time = time;
      times_.add(time, index);
    }
    last_pushed_ = index;
    return index;
  }

  // The earliest bucket, sorted.
  Bucket& front() {
    Bucket& bucket = buckets_[times_.earliest()];
    if (!bucket.sorted) sort_bucket(bucket);
    return bucket;
  }

  void sort_bucket(Bucket& bucket) {
    sort_by_tie(bucket.events, scratch_);
    bucket.sorted = true;
  }

  // The earliest bucket is spent: its storage is kept for a later time.
  void retire_front() {
    const std::uint32_t index = times_.earliest();
    Bucket& bucket = buckets_[index];
    times_.remove_earliest(bucket.time);
    bucket.events.clear();
    bucket.next = 0;
    bucket.sorted = false;
    if (last_pushed_ == index) last_pushed_ = TimesIndex::kNone;
    free_.push_back(index);
  }

  static void sort_by_tie(std::vector<Event>& events, std::vector<Event>& scratch) {
    constexpr std::size_t kRadixFrom = 256;
    if (events.size() < 2) return;
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

  enum class Source : std::uint8_t { Unknown, InOrder, Bucketed };
  std::size_t count_ = 0;
  Source source_ = Source::Unknown;  // where the earliest event is, when known
  Fifo<Event> in_order_;             // in (time, tie) order
  std::vector<Bucket> buckets_;
  std::vector<std::uint32_t> free_;  // buckets spent, to reuse
  TimesIndex times_;
  std::uint32_t last_pushed_ = TimesIndex::kNone;
  std::vector<Event> scratch_;  // the radix sort's second array
};

}  // namespace collcheck::sim
