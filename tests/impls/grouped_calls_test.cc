// Grouped calls (`nccl:mode=group`) as grouped_calls.h states them, on plain threads: every
// member's part run by one thread between begin and end, in member order, each member handed its
// own part's code (or end's); rounds that never mix their parts or codes; a member past its
// deadline, or one that gives up, breaks the group for every member at once with the reason.
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "impls/vendors/nccl/grouped_calls.h"

namespace collcheck {
namespace {

using Clock = GroupedCalls::Clock;
using namespace std::chrono_literals;

// What a round saw: the order of begin, the parts (by member) and end, and the threads that ran them.
struct Trace {
  std::mutex lock;
  std::vector<std::string> events;
  std::vector<std::thread::id> threads;
  void add(const std::string& event) {
    const std::lock_guard<std::mutex> guard(lock);
    events.push_back(event);
    threads.push_back(std::this_thread::get_id());
  }
};

TEST(GroupedCalls, OneThreadIssuesEveryMembersPartBetweenBeginAndEnd) {
  constexpr int kMembers = 4;
  Trace trace;
  GroupedCalls group(
      kMembers, [&] { trace.add("begin"); },
      [&] {
        trace.add("end");
        return 0;
      });
  std::vector<int> codes(kMembers, -1);
  std::vector<std::thread> members;
  members.reserve(kMembers);
  for (int member = 0; member < kMembers; ++member) {
    members.emplace_back([&, member] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5 * (kMembers - member)));  // arrive out of order
      const GroupedCalls::Part part = [&, member] {
        trace.add("part " + std::to_string(member));
        return 10 + member;
      };
      Result<int> code = group.join(member, part, Clock::now() + 10s);
      codes[static_cast<std::size_t>(member)] = code ? *code : -2;
    });
  }
  for (std::thread& member : members) member.join();
  EXPECT_EQ(trace.events, (std::vector<std::string>{"begin", "part 0", "part 1", "part 2", "part 3", "end"}));
  for (const std::thread::id& id : trace.threads) EXPECT_EQ(id, trace.threads.front()) << "one thread issues all";
  for (int member = 0; member < kMembers; ++member) EXPECT_EQ(codes[static_cast<std::size_t>(member)], 10 + member);
}

// A part that succeeded gets end's code (an error inside an NCCL group comes from ncclGroupEnd);
// one that failed keeps its own.
TEST(GroupedCalls, EndsCodeGoesToThePartsThatSucceeded) {
  GroupedCalls group(
      2, [] {}, [] { return 7; });
  int failed = -1;
  std::thread other([&] {
    const GroupedCalls::Part part = [] { return 3; };
    Result<int> code = group.join(1, part, Clock::now() + 10s);
    failed = code ? *code : -2;
  });
  const GroupedCalls::Part part = [] { return 0; };
  Result<int> code = group.join(0, part, Clock::now() + 10s);
  other.join();
  ASSERT_TRUE(code.ok()) << code.error().text();
  EXPECT_EQ(*code, 7);
  EXPECT_EQ(failed, 3);
}

// Many rounds back to back, members arriving in any order: each gets its own part's code of its
// own round, and every round runs each part once.
TEST(GroupedCalls, RoundsNeverMix) {
  constexpr int kMembers = 3;
  constexpr int kRounds = 300;
  std::atomic<int> parts_run{0};
  GroupedCalls group(
      kMembers, [] {}, [] { return 0; });
  std::atomic<int> wrong{0};
  std::vector<std::thread> members;
  members.reserve(kMembers);
  for (int member = 0; member < kMembers; ++member) {
    members.emplace_back([&, member] {
      for (int round = 0; round < kRounds; ++round) {
        if ((round + member) % 7 == 0) std::this_thread::yield();
        const GroupedCalls::Part part = [&, member, round] {
          parts_run.fetch_add(1);
          return member * 100000 + round;
        };
        Result<int> code = group.join(member, part, Clock::now() + 30s);
        if (!code || *code != member * 100000 + round) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& member : members) member.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(parts_run.load(), kMembers * kRounds);
}

// A member whose deadline passes while another never comes breaks the group: it is told which
// member it waited for, and a member joining later is told the same at once.
TEST(GroupedCalls, AMemberPastItsDeadlineBreaksTheGroupForEveryone) {
  bool issued = false;
  GroupedCalls group(
      3, [&] { issued = true; }, [] { return 0; });
  const GroupedCalls::Part part = [] { return 0; };
  std::string first_why;
  std::thread waiter([&] {
    Result<int> code = group.join(0, part, Clock::now() + 50ms);
    first_why = code ? "issued" : code.error().message;
  });
  waiter.join();
  EXPECT_NE(first_why.find("member 0 waited past its deadline for member(s) 1, 2"), std::string::npos) << first_why;
  const Clock::time_point before = Clock::now();
  Result<int> late = group.join(1, part, Clock::now() + 10s);
  ASSERT_FALSE(late.ok());
  EXPECT_LT(Clock::now() - before, 5s) << "a broken group answers at once";
  EXPECT_EQ(late.error().message, first_why);
  EXPECT_FALSE(issued);
}

// A member that gives up before joining (its run failed and its world is broken) tells the members
// already waiting, long before their deadlines.
TEST(GroupedCalls, AMemberThatGivesUpReleasesTheOthers) {
  GroupedCalls group(
      3, [] {}, [] { return 0; });
  const GroupedCalls::Part part = [] { return 0; };
  std::vector<std::string> whys(2);
  std::vector<std::thread> waiting;
  waiting.reserve(2);
  const Clock::time_point before = Clock::now();
  for (int member = 0; member < 2; ++member) {
    waiting.emplace_back([&, member] {
      Result<int> code = group.join(member, part, Clock::now() + 60s);
      whys[static_cast<std::size_t>(member)] = code ? "issued" : code.error().message;
    });
  }
  std::this_thread::sleep_for(20ms);
  group.abandon("rank 2 left the grouped calls: the communicator was aborted");
  for (std::thread& member : waiting) member.join();
  EXPECT_LT(Clock::now() - before, 30s);
  for (const std::string& why : whys) EXPECT_EQ(why, "rank 2 left the grouped calls: the communicator was aborted");
}

// A world's members find one group by their shared key; another world gets its own; once the last
// member lets go, the key makes a fresh one (not the old one, broken: its member, alone, finds its
// deadline passed rather than the old reason).
TEST(GroupedCalls, AWorldsMembersShareOneGroupByItsKey) {
  const auto noop_begin = [] {};
  const auto noop_end = [] { return 0; };
  std::shared_ptr<GroupedCalls> first = grouped_calls_of("world a", 2, noop_begin, noop_end);
  std::shared_ptr<GroupedCalls> second = grouped_calls_of("world a", 2, noop_begin, noop_end);
  const std::shared_ptr<GroupedCalls> other = grouped_calls_of("world b", 3, noop_begin, noop_end);
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other);
  EXPECT_EQ(other->members(), 3);
  first->abandon("gone");
  first.reset();
  second.reset();
  const std::shared_ptr<GroupedCalls> fresh = grouped_calls_of("world a", 2, noop_begin, noop_end);
  EXPECT_TRUE(fresh
                  ->join(
                      0, [] { return 0; }, GroupedCalls::Clock::now())
                  .error()
                  .message.find("gone") == std::string::npos)
      << "a broken group of a world that ended is not handed to the next";
}

}  // namespace
}  // namespace collcheck
