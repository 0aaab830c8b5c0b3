// Worlds of threads (impls/backend/world.h: make_thread_worlds): every member's bytes in rank
// order; a call some member never joins breaks the world for every member once a deadline has
// passed (WorldTimeout, naming who was missing, and at once for every later call), and without a
// deadline it waits for the late member, as a launched worker serving every rank as a thread
// needs of it.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "impls/backend/world.h"

namespace collcheck {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::vector<std::byte> bytes_of(int value) { return {static_cast<std::byte>(value)}; }

TEST(ThreadWorlds, AllgatherGivesEveryMembersBytesInRankOrder) {
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(3);
  std::vector<std::future<std::vector<std::vector<std::byte>>>> gathered;
  gathered.reserve(3);
  for (int rank = 0; rank < 3; ++rank) {
    gathered.push_back(std::async(std::launch::async, [&, rank] {
      return worlds[static_cast<std::size_t>(rank)]->allgather(bytes_of(10 + rank));
    }));
  }
  for (auto& each : gathered) {
    EXPECT_EQ(each.get(), (std::vector<std::vector<std::byte>>{bytes_of(10), bytes_of(11), bytes_of(12)}));
  }
}

// Ranks 0 and 1 wait for rank 2 until their deadline: both end with WorldTimeout naming rank 2, and
// rank 2, coming late, is told the same at once. (Were the deadline ignored, ranks 0 and 1 would
// still be waiting when rank 2 came, and would return normally.)
TEST(ThreadWorlds, AMemberMissingPastTheDeadlineBreaksTheWorldForEveryone) {
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(3);
  std::vector<std::future<std::string>> waiting;
  waiting.reserve(2);
  for (int rank = 0; rank < 2; ++rank) {
    waiting.push_back(std::async(std::launch::async, [&, rank]() -> std::string {
      World& world = *worlds[static_cast<std::size_t>(rank)];
      world.set_deadline(Clock::now() + 100ms);
      try {
        world.barrier();
        return "returned";
      } catch (const WorldTimeout& timeout) {
        return timeout.what;
      }
    }));
  }
  std::vector<bool> ended_in_time;
  ended_in_time.reserve(waiting.size());
  for (auto& each : waiting) ended_in_time.push_back(each.wait_for(5s) == std::future_status::ready);
  std::string late;
  try {
    worlds[2]->barrier();  // lets the others go where the deadline was ignored
    late = "returned";
  } catch (const WorldTimeout& timeout) {
    late = timeout.what;
  }
  for (std::size_t rank = 0; rank < waiting.size(); ++rank) {
    EXPECT_TRUE(ended_in_time[rank]) << "rank " << rank << " still waited 5 s after its deadline";
    const std::string why = waiting[rank].get();
    EXPECT_NE(why.find("waited past its deadline for rank(s) 2 to join"), std::string::npos) << why;
  }
  EXPECT_NE(late.find("waited past its deadline for rank(s) 2"), std::string::npos) << late;
}

// Without a deadline a call waits for its last member however late.
TEST(ThreadWorlds, WithoutADeadlineACallWaitsForTheLateMember) {
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(2);
  std::future<std::vector<std::vector<std::byte>>> early =
      std::async(std::launch::async, [&] { return worlds[0]->allgather(bytes_of(1)); });
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(worlds[1]->allgather(bytes_of(2)), (std::vector<std::vector<std::byte>>{bytes_of(1), bytes_of(2)}));
  EXPECT_EQ(early.get(), (std::vector<std::vector<std::byte>>{bytes_of(1), bytes_of(2)}));
}

}  // namespace
}  // namespace collcheck
