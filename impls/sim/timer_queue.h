// The simulator's wait timers on virtual time: a heap of timers, one per slot, armed again and
// cancelled in constant time. Private to impls/sim/.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "impls/sim/event_queue.h"

namespace collcheck::sim {

// A slot's timer state: its due event, and where its entry is in the heap. It lives wherever the
// heap's `Slots` keep it: a vector of its own (TimerQueue), or in the record of whatever the slot
// stands for, which every arm and cancel reads anyway (the simulator's streams).
struct TimerSlot {
  static constexpr std::size_t kNone = ~std::size_t{0};
  Event due{};                   // the timer armed last, when `armed`
  std::size_t position = kNone;  // where its entry is in the heap, or kNone
  bool armed = false;
};

// Timers, at most one per slot (a participant's stream): arming a slot again moves its timer, and
// a cancelled timer never fires. The queue works as follows. A slot keeps its due event; the heap
// keeps at most one entry per slot, never later than the slot's due event. Arming a slot earlier
// than its entry moves the entry up; arming it later (a receive's timer is armed again with every
// message, always later) or cancelling it only changes the slot, in constant time. An entry that
// comes first is settled before it is handed out: a cancelled slot's entry is dropped, a slot due
// later has its entry moved down to its due event. So the heap never holds more entries than there
// are slots, and the timers come out in (time, tie) order as if each arm and cancel had moved them.
template <typename Slots>
class TimerHeap {
 public:
  TimerHeap() = default;
  explicit TimerHeap(Slots slots) : slots_(std::move(slots)) {}
  // Slots of their own, `count` of them.
  explicit TimerHeap(std::size_t count) requires std::is_same_v<Slots, std::vector<TimerSlot>> : slots_(count) {}

  // The earliest armed timer's event and slot, or a null event when none is armed (entries of
  // cancelled timers are dropped first), in one settling: the engine asks for every event it handles.
  struct Due {
    const Event* event;
    std::size_t slot;
  };
  Due first() {
    settle();
    if (heap_.empty()) return {nullptr, kNone};
    return {&heap_.front().event, heap_.front().slot};
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
  using Slot = TimerSlot;
  static constexpr std::size_t kNone = TimerSlot::kNone;

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
  Slots slots_;
};

// The timers with their slots in a vector of their own.
using TimerQueue = TimerHeap<std::vector<TimerSlot>>;

}  // namespace collcheck::sim
