// The simulator's event queues (impls/sim/event_queue.h, timer_queue.h): events come back in (time, tie) order,
// whether their time's bucket was sorted by comparison or by radix, and pushed before or after it
// was sorted; the events a queue says are ahead are the ones popped next; a cancelled timer never
// fires, a re-armed one fires at its last time, and the timer heap never outgrows its slots; a
// NearFifo keeps first-in first-out order across its ring and its spilled items, and lets go of
// what spilled once it is taken.
#include "impls/sim/event_queue.h"
#include "impls/sim/timer_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <vector>

#include "reference/random.h"

namespace collcheck::sim {
namespace {

Event event_at(double time, std::uint64_t tie, int participant = 0) {
  return Event{time, tie, participant, 0, 0, EventKind::Wake};
}

bool earlier(const Event& a, const Event& b) { return a.before(b); }

// Pops the queue's earliest, which must be the least of `pushed` (what the queue holds), and
// forgets it there; returns its time.
double pop_least(EventQueue& queue, std::vector<Event>& pushed) {
  const auto least = std::min_element(pushed.begin(), pushed.end(), earlier);
  EXPECT_EQ(queue.top().participant, least->participant);
  const double time = queue.top().time;
  queue.pop();
  pushed.erase(least);
  return time;
}

// Pops everything left, which must come in (time, tie) order, and ends empty.
void drain_in_order(EventQueue& queue, std::vector<Event> pushed) {
  std::sort(pushed.begin(), pushed.end(), earlier);
  for (const Event& expected : pushed) {
    ASSERT_FALSE(queue.empty());
    EXPECT_EQ(queue.top().participant, expected.participant);
    queue.pop();
  }
  EXPECT_TRUE(queue.empty());
}

TEST(EventQueue, PopsInTimeThenTieOrder) {
  EventQueue queue;
  std::vector<Event> pushed;
  for (std::uint64_t n = 0; n < 5000; ++n) {
    // Few distinct times, so that most order comes from the tie.
    pushed.push_back(event_at(static_cast<double>(mix64(n) % 7), mix64(n ^ 99), static_cast<int>(n)));
    queue.push(pushed.back());
    if (n % 3 == 2) pop_least(queue, pushed);  // pops interleaved with pushes, as in a run
  }
  drain_in_order(queue, pushed);
}

// Thousands of distinct times, most pushed in rising order and some earlier than the last (their
// buckets found again, spent and reused; the index grows and deletes): still (time, tie) order.
TEST(EventQueue, ManyDistinctTimesRisingOrNotComeInOrder) {
  EventQueue queue;
  std::vector<Event> pushed;
  double now = 0;
  for (std::uint64_t n = 0; n < 6000; ++n) {
    const std::uint64_t draw = mix64(n ^ 12345);
    // Mostly a fixed travel after now; sometimes a little after now; sometimes an earlier time again.
    const double time = draw % 5 == 0 ? now + static_cast<double>(draw % 7) / 8 : now + 3 + static_cast<double>(n % 3);
    pushed.push_back(event_at(time, mix64(n), static_cast<int>(n)));
    queue.push(pushed.back());
    if (n % 2 == 1) now = pop_least(queue, pushed);
  }
  drain_in_order(queue, pushed);
}

// A ring's wave: thousands of events at one time (sorted by radix), with more pushed at that very
// time while it is read (late, ties below and above what is left) and at a later time.
TEST(EventQueue, AWaveAtOneTimeComesInTieOrderWithTheEventsPushedWhileItIsRead) {
  EventQueue queue;
  std::vector<Event> pushed;
  for (std::uint64_t n = 0; n < 3000; ++n) {
    pushed.push_back(event_at(n % 10 == 0 ? 2.0 : 1.0, mix64(n), static_cast<int>(n)));
    queue.push(pushed.back());
  }
  // Each pop is the least of what is in the queue at that moment.
  for (std::uint64_t next = 3000; !queue.empty(); ++next) {
    const double now = pop_least(queue, pushed);
    if (next < 3400) {
      pushed.push_back(event_at(now, mix64(next), static_cast<int>(next)));
      queue.push(pushed.back());
    }
  }
  EXPECT_TRUE(pushed.empty());
}

// `ahead()` lists the events popped next, in order, while they come from the earliest one's line:
// the earliest time's bucket (not the next time's), and the FIFO of events pushed in order.
TEST(EventQueue, TheEventsAheadAreTheOnesPoppedNext) {
  EventQueue queue;
  EXPECT_TRUE(queue.ahead().empty());
  queue.push(event_at(9.0, 1, -1));  // the FIFO's back: the waves below are earlier, so bucketed
  for (std::uint64_t n = 0; n < 1000; ++n) queue.push(event_at(n < 600 ? 1.0 : 3.0, mix64(n), static_cast<int>(n)));
  for (const std::size_t wave : {600, 400}) {
    std::vector<int> ahead;
    for (const Event& event : queue.ahead()) ahead.push_back(event.participant);
    EXPECT_EQ(ahead.size(), wave) << "the earliest time's bucket only";
    for (const int expected : ahead) {
      ASSERT_FALSE(queue.ahead().empty());
      EXPECT_EQ(queue.ahead()[0].participant, expected);
      EXPECT_EQ(queue.top().participant, expected);
      queue.pop();
    }
  }
  for (int n = 0; n < 100; ++n) queue.push(event_at(10.0 + n, 5, n));  // in order: the FIFO
  for (int n = -1; n < 100; ++n) {
    const std::span<const Event> ahead = queue.ahead();
    ASSERT_EQ(ahead.size(), static_cast<std::size_t>(100 - n));
    for (std::size_t k = 0; k < ahead.size(); ++k) EXPECT_EQ(ahead[k].participant, n + static_cast<int>(k));
    EXPECT_EQ(queue.top().participant, n);  // the 9.0 first
    queue.pop();
  }
  EXPECT_TRUE(queue.ahead().empty());
}

TEST(TimerQueue, CancelledTimersNeverFireAndReArmedOnesFireAtTheirLastTime) {
  TimerQueue timers(100);
  for (std::size_t slot = 0; slot < 100; ++slot) {
    timers.arm(slot, event_at(static_cast<double>(mix64(slot) % 1000), slot, static_cast<int>(slot)));
  }
  for (std::size_t slot = 0; slot < 100; slot += 3) timers.cancel(slot);
  for (std::size_t slot = 1; slot < 100; slot += 3)
    timers.arm(slot, event_at(2000.0 + static_cast<double>(slot), slot, 1000 + static_cast<int>(slot)));
  EXPECT_FALSE(timers.armed(0));
  EXPECT_TRUE(timers.armed(1));
  std::vector<int> order;
  double last = -1;
  for (auto due = timers.first(); due.event != nullptr; due = timers.first()) {
    EXPECT_GE(due.event->time, last);
    last = due.event->time;
    order.push_back(due.event->participant);
    timers.cancel(due.slot);
  }
  EXPECT_EQ(order.size(), 66u) << "34 of 100 cancelled";
  // The re-armed ones come last, in slot order, with their new events.
  const std::vector<int> tail(order.end() - 33, order.end());
  for (std::size_t i = 0; i < tail.size(); ++i) EXPECT_EQ(tail[i], static_cast<int>(1000 + 1 + 3 * i));
}

// A receive's timer is armed again with every message, mostly later and sometimes earlier (a
// jittered interval); cancelled and armed again in turn, it keeps one entry.
TEST(TimerQueue, ArmingAgainMovesATimerBothWaysAndKeepsOneEntryPerSlot) {
  TimerQueue timers(4);
  std::uint64_t tie = 0;
  for (int round = 0; round < 1000; ++round) {
    for (std::size_t slot = 0; slot < 4; ++slot) {
      timers.arm(slot, event_at(round + static_cast<double>(mix64(tie) % 50), tie, static_cast<int>(slot)));
      ++tie;
      if (round % 7 == 0) timers.cancel(slot);
    }
    EXPECT_LE(timers.entries(), 4u);
  }
  timers.arm(2, event_at(0.5, ++tie, 2));  // earlier than everything
  const auto earliest = timers.first();
  ASSERT_NE(earliest.event, nullptr);
  EXPECT_EQ(earliest.slot, 2u);
  EXPECT_EQ(earliest.event->time, 0.5);
  timers.cancel(2);
  timers.arm(2, event_at(5000, ++tie, 2));  // later than everything
  std::vector<std::size_t> slots;
  for (auto due = timers.first(); due.event != nullptr; due = timers.first()) {
    slots.push_back(due.slot);
    timers.cancel(due.slot);
  }
  ASSERT_EQ(slots.size(), 4u);
  EXPECT_EQ(slots.back(), 2u);
}

}  // namespace
}  // namespace collcheck::sim

namespace collcheck::sim {
namespace {

// Random pushes, pops, drops and reads against a deque: the ring fills, spills into the far Fifo
// and is refilled from it, in every order, and the items always come out first in, first out.
TEST(NearFifo, KeepsFirstInFirstOutAcrossItsRingAndWhatSpilled) {
  NearFifo<std::uint64_t, 2> queue;
  std::deque<std::uint64_t> model;
  std::uint64_t next = 0;
  for (std::uint64_t turn = 0; turn < 20000; ++turn) {
    const std::uint64_t random = mix64(turn);
    const std::uint64_t choice = below(random, 10);
    if (choice < 5 || model.empty()) {
      queue.push(next);
      model.push_back(next++);
    } else if (choice < 8) {
      ASSERT_EQ(queue.pop(), model.front()) << turn;
      model.pop_front();
    } else {
      const std::size_t how_many = below(random >> 8, model.size() + 1);
      queue.drop(how_many);
      model.erase(model.begin(), model.begin() + static_cast<std::ptrdiff_t>(how_many));
    }
    ASSERT_EQ(queue.size(), model.size()) << turn;
    ASSERT_EQ(queue.empty(), model.empty()) << turn;
    for (std::size_t k = 0; k < model.size(); ++k) ASSERT_EQ(queue[k], model[k]) << turn << " " << k;
  }
}

// What spilled is let go once taken: thousands of links that each kept the storage of their
// largest spill held hundreds of MB in a 16,384-rank ring with drops.
TEST(NearFifo, LetsGoOfTheStorageOfASpillOnceItIsTaken) {
  NearFifo<std::uint64_t, 2> queue;
  for (std::uint64_t item = 0; item < 1000; ++item) queue.push(item);
  EXPECT_GE(queue.far.items.capacity(), 998u);
  for (std::uint64_t item = 0; item < 500; ++item) EXPECT_EQ(queue.pop(), item);
  EXPECT_GT(queue.far.items.capacity(), 0u) << "still spilled";
  queue.drop(500);
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.far.items.capacity(), 0u);
}

}  // namespace
}  // namespace collcheck::sim
