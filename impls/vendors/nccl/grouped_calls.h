// Calls that several threads of one process each bring a part of, issued together by one of them
// (`nccl:mode=group`: NCCL's group calls, every GPU's part from one thread, as nccl-tests' -g and
// ncclCommInitAll issue them). Plain C++: it needs neither NCCL nor CUDA, so its tests run anywhere.
//
// It works as follows. Each member thread joins a round with its part (a function returning a
// result code, 0 for success as ncclSuccess is) and its deadline. The last member to join is the
// issuer: outside the lock it runs `begin`, every member's part in member order, then `end`, and
// hands each member its part's code, or end's where the part succeeded (an error inside an NCCL
// group comes back from ncclGroupEnd). The others wait for the round to be issued. A member whose
// deadline passes before the issuer has begun, or one that gives up before joining (`abandon`),
// breaks the group: every member waiting and every later join gets the reason at once. A broken
// group stays broken (its world is started afresh). The members' parts run on the issuer's thread
// while their own threads wait, so a part may use its member's stack.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "reference/result.h"

namespace collcheck {

class GroupedCalls {
 public:
  using Clock = std::chrono::steady_clock;
  using Part = std::function<int()>;  // must not throw

  // `begin` and `end` bracket the parts of every round (ncclGroupStart, ncclGroupEnd).
  GroupedCalls(int members, std::function<void()> begin, std::function<int()> end);

  // Joins this round as `member` (0 .. members-1) with `part`: the code the round gave it, or an
  // error saying why the group broke (a member past its deadline, or one that gave up).
  Result<int> join(int member, const Part& part, Clock::time_point deadline);

  // Breaks the group before joining (this member will not come): every member is told `why`.
  void abandon(const std::string& why);

  int members() const { return static_cast<int>(parts_.size()); }

 private:
  // A member not the last: waits for its round to be issued, or breaks the group at its deadline.
  Result<int> wait_for_round(std::unique_lock<std::mutex>& guard, int member, Clock::time_point deadline);
  // The last member: runs begin, every part, end, outside the lock, and hands out the codes.
  Result<int> issue(std::unique_lock<std::mutex>& guard, int member);

  std::function<void()> begin_;
  std::function<int()> end_;
  std::mutex lock_;
  std::condition_variable issued_;
  std::vector<const Part*> parts_;  // this round's, null until the member joins
  std::vector<int> codes_;          // the last issued round's
  int joined_ = 0;
  bool issuing_ = false;
  std::uint64_t round_ = 0;
  std::string broken_;  // why, once broken
};

// The grouped calls of one world among this process's threads (`world`: a key its members share,
// such as their NCCL unique id's bytes): made by the first member to ask, shared by the others,
// gone with the last of them.
std::shared_ptr<GroupedCalls> grouped_calls_of(const std::string& world, int members, std::function<void()> begin,
                                               std::function<int()> end);

}  // namespace collcheck
