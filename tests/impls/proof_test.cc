// The symbolic proof fails on deliberately broken schedules of every generator (a dropped
// remainder, a doubled contribution, a misplaced block, a wrong root) with a message that names
// where; and it scales (generators_test.cc proves every generator over the shapes).
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "impls/algorithms/algorithms.h"
#include "impls/prove/proof.h"
#include "reference/counts.h"

namespace collcheck {
namespace {

Case shape_of(Collective collective, std::size_t count, int nranks, int root = 0, bool in_place = false) {
  Case c;
  c.collective = collective;
  c.count = count;
  c.nranks = nranks;
  c.root = root;
  c.in_place = in_place;
  if (per_rank_counts(collective)) set_counts(c, spread_counts(collective, nranks, count));  // zeros, uneven
  return c;
}

// The send that the receive `k` of participant p is matched with: (sender, step index).
std::pair<int, int> matching_send(const Schedule& s, int p, int k) {
  const Step& receive = s.participants[static_cast<std::size_t>(p)].steps[static_cast<std::size_t>(k)];
  int nth = 0;
  for (int j = 0; j < k; ++j) {
    const Step& earlier = s.participants[static_cast<std::size_t>(p)].steps[static_cast<std::size_t>(j)];
    nth += earlier.receives() && earlier.peer == receive.peer && earlier.channel == receive.channel;
  }
  const auto& sender = s.participants[static_cast<std::size_t>(receive.peer)].steps;
  for (int j = 0; j < static_cast<int>(sender.size()); ++j) {
    const Step& send = sender[static_cast<std::size_t>(j)];
    if (send.sends() && send.peer == p && send.channel == receive.channel && nth-- == 0) return {receive.peer, j};
  }
  return {-1, -1};
}

// The last receive (in participant order) that satisfies `want`.
std::pair<int, int> last_receive(const Schedule& s, bool (*want)(const Step&)) {
  std::pair<int, int> found{-1, -1};
  for (int p = 0; p < s.nparticipants(); ++p) {
    const auto& steps = s.participants[static_cast<std::size_t>(p)].steps;
    for (int k = 0; k < static_cast<int>(steps.size()); ++k) {
      if (steps[static_cast<std::size_t>(k)].receives() && want(steps[static_cast<std::size_t>(k)])) found = {p, k};
    }
  }
  return found;
}

Step& step_at(Schedule& s, std::pair<int, int> where) {
  return s.participants[static_cast<std::size_t>(where.first)].steps[static_cast<std::size_t>(where.second)];
}

// Mutant: the last message of more than one element loses its final element.
bool drop_remainder(Schedule& s) {
  const auto receive = last_receive(s, [](const Step& step) { return step.to.count > 1; });
  if (receive.first < 0) return false;
  const auto send = matching_send(s, receive.first, receive.second);
  step_at(s, receive).to.count -= 1;
  if (step_at(s, receive).kind == StepKind::RecvReduce) step_at(s, receive).from.count -= 1;
  step_at(s, send).from.count -= 1;
  return true;
}

// Mutant: one receive-reduce, and its send, happen twice.
bool double_contribution(Schedule& s) {
  const auto receive =
      last_receive(s, [](const Step& step) { return step.kind == StepKind::RecvReduce && step.to.count > 0; });
  if (receive.first < 0) return false;
  const auto send = matching_send(s, receive.first, receive.second);
  auto& receiver = s.participants[static_cast<std::size_t>(receive.first)].steps;
  auto& sender = s.participants[static_cast<std::size_t>(send.first)].steps;
  Step again = receiver[static_cast<std::size_t>(receive.second)];
  again.from = again.to;  // accumulate the same message once more into the result
  receiver.insert(receiver.begin() + receive.second + 1, again);
  Step resend = sender[static_cast<std::size_t>(send.second)];
  sender.insert(sender.begin() + send.second + 1, resend);
  // Indices after the insertions moved by one: later `after` lists would be stale.
  s.participants[static_cast<std::size_t>(receive.first)].waits.clear();
  s.participants[static_cast<std::size_t>(send.first)].waits.clear();
  return true;
}

// Mutant: the last plain receive lands one element off.
bool misplace_block(Schedule& s) {
  const auto receive =
      last_receive(s, [](const Step& step) { return step.kind == StepKind::Recv && step.to.count > 0; });
  if (receive.first < 0) return false;
  Step& step = step_at(s, receive);
  const std::size_t size = s.buffer_size(receive.first, step.to.buffer);
  if (step.to.offset + step.to.count < size) step.to.offset += 1;
  else if (step.to.offset > 0) step.to.offset -= 1;
  else return false;
  return true;
}

class EveryAlgorithm : public ::testing::TestWithParam<std::size_t> {
 protected:
  const Algorithm& algorithm() const { return all_algorithms()[GetParam()]; }
};

TEST_P(EveryAlgorithm, CatchesBrokenSchedulesAndSaysWhere) {
  const Case shape = shape_of(algorithm().collective, 20, 6, 2);
  for (auto [mutant, label] :
       {std::pair{&drop_remainder, "dropped remainder"}, std::pair{&double_contribution, "doubled contribution"},
        std::pair{&misplace_block, "misplaced block"}}) {
    Result<Schedule> schedule = make_schedule(algorithm().name, shape, Knobs{});
    ASSERT_TRUE(schedule.ok());
    if (!mutant(schedule.value())) continue;  // the mutation does not apply to this algorithm
    const Proof proof = prove(*schedule);
    EXPECT_FALSE(proof.ok) << algorithm().name << " " << name(algorithm().collective) << ": " << label;
    EXPECT_TRUE(proof.message.find("rank ") != std::string::npos || proof.message.find("switch ") != std::string::npos)
        << label << ": " << proof.message;
  }
  if (rooted(algorithm().collective)) {  // a schedule for root 2 run as if the root were 3
    Result<Schedule> schedule = make_schedule(algorithm().name, shape, Knobs{});
    ASSERT_TRUE(schedule.ok());
    schedule.value().shape.root = 3;
    const Proof proof = prove(*schedule);
    EXPECT_FALSE(proof.ok) << algorithm().name << ": wrong root";
    EXPECT_NE(proof.message.find("rank "), std::string::npos) << proof.message;
  }
}

std::string test_name(const ::testing::TestParamInfo<std::size_t>& info) {
  const Algorithm& a = all_algorithms()[info.param];
  return std::string(a.name) + "_" + std::string(name(a.collective));
}

INSTANTIATE_TEST_SUITE_P(Generators, EveryAlgorithm, ::testing::Range<std::size_t>(0, all_algorithms().size()),
                         test_name);

TEST(Proof, RingAllReduceAt4096RanksProvesInSeconds) {
  Result<Schedule> schedule = make_schedule("ring", shape_of(Collective::AllReduce, 1000, 4096), Knobs{});
  ASSERT_TRUE(schedule.ok());
  const Proof proof = prove(*schedule);
  EXPECT_TRUE(proof.ok) << proof.message;
}

}  // namespace
}  // namespace collcheck
