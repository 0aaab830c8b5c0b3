// The symbolic proof fails on deliberately broken schedules of every generator (a dropped
// remainder, a doubled contribution, a misplaced block, a wrong root) with a message that names
// where; and it scales (generators_test.cc proves every generator over the shapes).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "impls/algorithms/algorithms.h"
#include "impls/prove/proof.h"
#include "impls/prove/provenance.h"
#include "impls/prove/symmetry.h"
#include "reference/counts.h"
#include "tests/impls/proof_support.h"

namespace collcheck {
namespace {

using proof_support::on_demand;

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
  const Case shape = spread_case(algorithm().collective, 20, 6, 2);
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

// Runs are taken modulo the rank count: ranks {4094, 4095, 0, 1, 2} are one run, and two runs
// that meet end to end but together hold more than n ranks share one (joining them would make a
// run that covers a rank twice).
TEST(Provenance, RunsWrapRoundRankZeroExactly) {
  using provenance::Run;
  constexpr std::uint32_t n = 4096;
  const Run wrapping{7, 4094, 2}, low{7, 0, 3};
  EXPECT_EQ(provenance::join(wrapping, low, n), (Run{7, 4094, 5}));
  const provenance::Union u = provenance::combine(std::span(&wrapping, 1), std::span(&low, 1), n);
  ASSERT_FALSE(u.shared);
  EXPECT_EQ(u.runs, std::vector<Run>{(Run{7, 4094, 5})});
  const Run all_but_zero{7, 1, n - 1}, zero{7, 0, 1};
  EXPECT_EQ(provenance::join(all_but_zero, zero, n), (Run{7, 0, n}));  // every rank starts at 0
  // Ranks 1..4095 and 0..1 meet end to end (4095 + 1 = 0 mod n) but share rank 1.
  const Run zero_one{7, 0, 2};
  EXPECT_FALSE(provenance::join(all_but_zero, zero_one, n));
  const provenance::Union twice = provenance::combine(std::span(&all_but_zero, 1), std::span(&zero_one, 1), n);
  ASSERT_TRUE(twice.shared);
  EXPECT_EQ(*twice.shared, (Run{7, 1, 1}));
  // Both wrap: ranks 4090..1 and 4095..2 share 4095, 0 and 1.
  const Run a{7, 4090, 8}, b{7, 4095, 4};
  EXPECT_TRUE(provenance::combine(std::span(&a, 1), std::span(&b, 1), n).shared);
  EXPECT_EQ(provenance::show(std::span(&a, 1), n), "{index 7: ranks 4090..1}");
}

// Recursive halving's partial sums are strided runs: ranks v and v + n/2 after its first round,
// v, v + n/4, v + n/2, v + 3n/4 after its second, all n ranks after the last. Runs with a stride
// keep one canonical form (a run round the whole ring starts at its smallest rank), and a union
// that would hold a rank twice is refused by join() and named by combine().
TEST(Provenance, StridedRunsKeepRecursiveHalvingOneRun) {
  using provenance::Run;
  constexpr std::uint32_t n = 16;
  const Run five{3, 5, 1}, thirteen{3, 13, 1};
  const std::optional<Run> pair = provenance::join(thirteen, five, n);
  ASSERT_TRUE(pair);
  EXPECT_EQ(*pair, (Run{3, 5, 2, 8}));  // {5, 13}: round the ring, so it starts at 5
  EXPECT_EQ(provenance::join(five, thirteen, n), pair);
  const Run other_pair{3, 1, 2, 8};  // {1, 9}, 4 after {5, 13}: they interleave
  const std::optional<Run> four = provenance::join(*pair, other_pair, n);
  ASSERT_TRUE(four);
  EXPECT_EQ(*four, (Run{3, 1, 4, 4}));  // {1, 5, 9, 13}
  EXPECT_EQ(provenance::show(std::span(&*four, 1), n), "{index 3: ranks 1..13 every 4}");
  const std::optional<Run> odd = provenance::join(*four, Run{3, 3, 4, 4}, n);  // and {3, 7, 11, 15}
  ASSERT_TRUE(odd);
  EXPECT_EQ(*odd, (Run{3, 1, 8, 2}));
  const std::optional<Run> all = provenance::join(Run{3, 0, 8, 2}, *odd, n);  // and the even ranks
  ASSERT_TRUE(all);
  EXPECT_EQ(*all, (Run{3, 0, n}));  // every rank, as a ring's sum holds it
  // End to end with a stride: {0, 3} and {6} are {0, 3, 6}.
  EXPECT_EQ(provenance::join(Run{3, 0, 2, 3}, Run{3, 6, 1}, n), (Run{3, 0, 3, 3}));
  // {0, 2} and {4, 0} of 6 ranks meet end to end with stride 2 but share rank 0.
  const Run low{3, 0, 2, 2}, wrapping{3, 4, 2, 2};
  EXPECT_FALSE(provenance::join(low, wrapping, 6));
  const provenance::Union twice = provenance::combine(std::span(&low, 1), std::span(&wrapping, 1), 6);
  ASSERT_TRUE(twice.shared);
  EXPECT_EQ(*twice.shared, (Run{3, 0, 1}));
  // A rank joined with itself is the same contribution twice, not a stride of 0.
  EXPECT_FALSE(provenance::join(five, five, n));
  EXPECT_TRUE(provenance::combine(std::span(&five, 1), std::span(&five, 1), n).shared);
}

// A hand-made all-reduce of one element over 4 ranks: a chain 3 -> 0 -> 1 -> 2 sums the inputs
// (the partial sum {3, 0, 1} wraps round rank 0), then the sum goes on round the ring. Sent to
// rank 0 once more and reduced with its input, the sum would cover rank 0 twice.
TEST(Proof, CatchesAWrappingPartialSumThatCoversARankTwice) {
  Schedule good;
  good.algorithm = "hand";
  good.shape = spread_case(Collective::AllReduce, 1, 4);
  good.participants.resize(4);
  const Range input{BufferKind::Input, 0, 1}, output{BufferKind::Output, 0, 1};
  good.send_recv_reduce(3, input, 0, input, output);
  good.send_recv_reduce(0, output, 1, input, output);
  good.send_recv_reduce(1, output, 2, input, output);  // rank 2 holds {3, 0, 1, 2}
  for (int from = 2; from != 1; from = (from + 1) % 4) good.send_recv(from, output, (from + 1) % 4, output);
  Proof proof = prove(good);
  EXPECT_TRUE(proof.ok) << proof.message;
  Schedule twice = good;  // rank 2 sends the whole sum to rank 0 once more, reduced with 0's input
  twice.send_recv_reduce(2, output, 0, input, output);
  proof = prove(twice);
  EXPECT_FALSE(proof.ok);
  EXPECT_NE(proof.message.find("rank 0 step"), std::string::npos) << proof.message;
  EXPECT_NE(proof.message.find("twice"), std::string::npos) << proof.message;
}

// Made on demand, a symmetric ring is proven on rank 0 alone, holding rank 0's steps only, and
// one that is not symmetric in full; what validate() checks only for stored steps (every send
// received, with the receive's count) the proof checks itself, even on rank 0 alone.
TEST(Proof, ProvesSchedulesMadeOnDemand) {
  for (auto [count, with_cover] : {std::pair{16, true}, std::pair{17, true}, std::pair{17, false}}) {
    Result<Schedule> schedule = make_schedule(
        "ring", spread_case(Collective::AllReduce, static_cast<std::size_t>(count), 8), Knobs{}, Form::OnDemand);
    ASSERT_TRUE(schedule.ok() && schedule->on_demand());
    if (!with_cover) schedule->cover = {};  // 17 elements: unequal blocks, symmetric only through the cover
    const Proof proof = prove(*schedule);
    EXPECT_TRUE(proof.ok) << proof.message;
    EXPECT_EQ(proof.by_symmetry, with_cover) << count;
  }
  Result<Schedule> ring = make_schedule("ring", spread_case(Collective::AllReduce, 16, 8), Knobs{});
  ASSERT_TRUE(ring.ok());
  Schedule unreceived = *ring;  // every rank sends its next rank one message more
  for (int r = 0; r < 8; ++r)
    unreceived.add(
        r, Step{StepKind::Send, (r + 1) % 8, Range{BufferKind::Input, 2 * static_cast<std::uint64_t>(r), 2}, Range{}});
  Proof proof = prove(on_demand(unreceived));
  EXPECT_FALSE(proof.ok);
  EXPECT_TRUE(proof.by_symmetry);
  EXPECT_NE(proof.message.find("never received"), std::string::npos) << proof.message;
  Schedule short_send = *ring;  // every rank's first send is one element short
  for (Participant& participant : short_send.participants) participant.steps.front().from.count -= 1;
  proof = prove(on_demand(short_send));
  EXPECT_FALSE(proof.ok);
  EXPECT_NE(proof.message.find("the matching send has 1"), std::string::npos) << proof.message;
}

// Made on demand and not symmetric, a schedule is proven in full as its steps are made, never
// stored: each break below is found, with the stored proof's words where both see the same thing.
TEST(Proof, ProvesSchedulesMadeOnDemandInFullAsTheirStepsAreMade) {
  Result<Schedule> ring = make_schedule("ring", spread_case(Collective::AllReduce, 17, 8), Knobs{});
  ASSERT_TRUE(ring.ok());
  ring->cover = {};  // without its cover the ring at 17 elements is not symmetric: the full proof runs
  const auto first_of = [](Schedule& schedule, int rank, StepKind kind) -> Step& {
    auto& steps = schedule.participants[static_cast<std::size_t>(rank)].steps;
    return *std::find_if(steps.begin(), steps.end(), [&](const Step& step) { return step.kind == kind; });
  };
  Proof proof = prove(on_demand(*ring));
  EXPECT_TRUE(proof.ok && !proof.by_symmetry) << proof.message;

  Schedule not_reduced = *ring;  // rank 3 overwrites where it should reduce: a wrong output
  first_of(not_reduced, 3, StepKind::RecvReduce).kind = StepKind::Recv;
  proof = prove(on_demand(not_reduced));
  EXPECT_FALSE(proof.ok);
  EXPECT_EQ(proof.message, prove(not_reduced).message);
  EXPECT_NE(proof.message.find("last written by rank"), std::string::npos) << proof.message;

  Schedule outside = *ring;  // rank 5 sends past the end of its input
  first_of(outside, 5, StepKind::Send).from.offset = 17;
  proof = prove(on_demand(outside));
  EXPECT_FALSE(proof.ok);
  EXPECT_NE(proof.message.find("rank 5 step 0"), std::string::npos) << proof.message;
  EXPECT_NE(proof.message.find("lies outside the buffer"), std::string::npos) << proof.message;

  Schedule never_taken = *ring;  // rank 2 stops one receive short
  never_taken.participants[2].steps.pop_back();
  proof = prove(on_demand(never_taken));
  EXPECT_FALSE(proof.ok);
  EXPECT_NE(proof.message.find("rank 1 sends rank 2 a message on channel 0 that is never received"), std::string::npos)
      << proof.message;

  Schedule two_streams = *ring;  // a participant with two streams is stored first, then proven
  for (std::size_t k = 0; k < two_streams.participants[4].steps.size(); k += 2) {
    two_streams.participants[4].steps[k].stream = 1;
  }
  proof = prove(on_demand(two_streams));
  EXPECT_EQ(proof.ok, prove(two_streams).ok) << proof.message;
}

// Streams of one participant that nothing orders must not touch an element one of them writes:
// the proof runs one interleaving, which stands for all only without such races. A copy onto
// itself on a second stream of every rank changes no value, so only the race check finds it,
// and only in full: rank 0 alone (the schedule is still symmetric) must not be taken.
TEST(Proof, FindsRacesBetweenStreamsThatNothingOrders) {
  // In place, so that the copy reads defined elements whenever it runs.
  Result<Schedule> ring = make_schedule("ring", spread_case(Collective::AllReduce, 16, 8, 0, true), Knobs{});
  ASSERT_TRUE(ring.ok());
  Schedule racing = *ring;
  for (int r = 0; r < 8; ++r) {
    const Range block{BufferKind::Output, 2 * static_cast<std::uint64_t>(r), 2};
    racing.add(r, Step{StepKind::Copy, -1, block, block, 0, 1});
  }
  ASSERT_TRUE(provenance::find_symmetry(racing));
  Proof proof = prove(racing);
  EXPECT_FALSE(proof.ok);
  EXPECT_FALSE(proof.by_symmetry);
  EXPECT_NE(proof.message.find("on another stream touches too, and nothing orders the two"), std::string::npos)
      << proof.message;

  Schedule ordered = racing;  // the copy waits for the rank's last step on stream 0: no race
  for (int r = 0; r < 8; ++r) {
    Participant& participant = ordered.participants[static_cast<std::size_t>(r)];
    const int copy = static_cast<int>(participant.steps.size()) - 1;
    participant.add_after(copy, copy - 1);
  }
  proof = prove(ordered);
  EXPECT_TRUE(proof.ok) << proof.message;

  // A ring on two channels runs each on a stream of its own over its own half of the buffers:
  // they keep apart, so rank 0 alone may prove it (ProvesASymmetricRingOnRankZeroAndSaysSo).
  Result<Schedule> two_channels =
      make_schedule("ring", spread_case(Collective::AllReduce, 32, 8), Knobs{1 << 20, 2, 2});
  ASSERT_TRUE(two_channels.ok());
  EXPECT_TRUE(provenance::streams_apart(*two_channels, two_channels->participants[0].steps));
  EXPECT_FALSE(provenance::streams_apart(racing, racing.participants[0].steps));
}

TEST(Proof, RingAllReduceAt4096RanksProvesInSeconds) {
  Result<Schedule> schedule = make_schedule("ring", spread_case(Collective::AllReduce, 1000, 4096), Knobs{});
  ASSERT_TRUE(schedule.ok());
  const Proof proof = prove(*schedule);
  EXPECT_TRUE(proof.ok) << proof.message;
}

}  // namespace
}  // namespace collcheck
