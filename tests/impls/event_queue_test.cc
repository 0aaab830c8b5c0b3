// The simulator's event queues (impls/sim/event_queue.h): the 4-ary heap hands events back in
// (time, tie) order, and a cancelled or re-armed timer is gone from the timer heap at once.
#include "impls/sim/event_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "reference/random.h"

namespace collcheck::sim {
namespace {

Event event_at(double time, std::uint64_t tie, int participant = 0) {
  return Event{time, tie, participant, 0, 0, EventKind::Wake};
}

TEST(EventQueue, PopsInTimeThenTieOrder) {
  EventQueue queue;
  std::vector<Event> pushed;
  for (std::uint64_t n = 0; n < 5000; ++n) {
    // Few distinct times, so that most order comes from the tie.
    pushed.push_back(event_at(static_cast<double>(mix64(n) % 7), mix64(n ^ 99), static_cast<int>(n)));
    queue.push(pushed.back());
    if (n % 3 == 2) {  // pops interleaved with pushes, as in a run
      const auto least =
          std::min_element(pushed.begin(), pushed.end(), [](const Event& a, const Event& b) { return a.before(b); });
      ASSERT_EQ(queue.top().participant, least->participant);
      queue.pop();
      pushed.erase(least);
    }
  }
  std::sort(pushed.begin(), pushed.end(), [](const Event& a, const Event& b) { return a.before(b); });
  for (const Event& expected : pushed) {
    ASSERT_FALSE(queue.empty());
    EXPECT_EQ(queue.top().participant, expected.participant);
    queue.pop();
  }
  EXPECT_TRUE(queue.empty());
}

TEST(TimerQueue, CancelledAndReArmedTimersAreGoneAtOnce) {
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
  while (!timers.empty()) {
    const Event next = timers.top();
    EXPECT_GE(next.time, last);
    last = next.time;
    order.push_back(next.participant);
    timers.cancel(timers.top_slot());
  }
  EXPECT_EQ(order.size(), 66u) << "34 of 100 cancelled";
  // The re-armed ones come last, in slot order, with their new events.
  const std::vector<int> tail(order.end() - 33, order.end());
  for (std::size_t i = 0; i < tail.size(); ++i) EXPECT_EQ(tail[i], static_cast<int>(1000 + 1 + 3 * i));
}

}  // namespace
}  // namespace collcheck::sim
