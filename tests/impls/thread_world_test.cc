// Worlds of threads (impls/backend/world.h: make_thread_worlds): every member's bytes in rank
// order; a call some member never joins breaks the world for every member once a deadline has
// passed (WorldTimeout, naming who was missing, and at once for every later call), and without a
// deadline it waits for the late member, as a launched worker serving every rank as a thread
// needs of it. A member's failure passed to allgather_unless_failed reaches every member at once.
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
    EXPECT_NE(why.find("waited past its deadline for rank 2 to join"), std::string::npos) << why;
  }
  EXPECT_NE(late.find("waited past its deadline for rank 2"), std::string::npos) << late;
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

// allgather_unless_failed: with every member in, every member's bytes in rank order (the tag that
// carries a failure stripped); where members 1 and 3 pass errors, every member gets the first,
// naming member 1, and none gets bytes (were errors passed as bytes, or the last one reported, it
// would fail). first_failure is the same with nothing to share.
TEST(ThreadWorlds, AMembersFailureReachesEveryMemberAtTheSameStep) {
  constexpr int kMembers = 4;
  const auto gather = [](const std::vector<bool>& fails) {
    std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(kMembers);
    std::vector<std::future<Result<std::vector<std::vector<std::byte>>>>> gathered;
    gathered.reserve(kMembers);
    for (int rank = 0; rank < kMembers; ++rank) {
      gathered.push_back(std::async(std::launch::async, [&, rank] {
        const std::string failed = fails[static_cast<std::size_t>(rank)] ? "no device " + std::to_string(rank) : "";
        return allgather_unless_failed(*worlds[static_cast<std::size_t>(rank)], bytes_of(20 + rank), failed);
      }));
    }
    std::vector<Result<std::vector<std::vector<std::byte>>>> results;
    for (auto& each : gathered) results.push_back(each.get());
    return results;
  };
  for (const auto& result : gather({false, false, false, false})) {
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(*result, (std::vector<std::vector<std::byte>>{bytes_of(20), bytes_of(21), bytes_of(22), bytes_of(23)}));
  }
  for (const auto& result : gather({false, true, false, true})) {
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().message, "rank 1: no device 1");
  }
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(2);
  std::future<std::string> other = std::async(std::launch::async, [&] { return first_failure(*worlds[1], ""); });
  EXPECT_EQ(first_failure(*worlds[0], "stream"), "rank 0: stream");
  EXPECT_EQ(other.get(), "rank 0: stream");
}

}  // namespace
}  // namespace collcheck
