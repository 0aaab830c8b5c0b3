// Schedules made on demand (Schedule::make_steps) against the stored ones: the same steps in the
// same order for every participant over a sweep of shapes and knobs, a diverging step named, the
// simulator giving the same run, trace and outputs from either form, and naming what it checks of
// a schedule made on demand as it runs it.
#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/sim/simulator.h"
#include "impls/sim/topology.h"
#include "reference/counts.h"
#include "tests/support/cases.h"

namespace collcheck {
namespace {

// The first step where `on_demand`, read once through one cursor per participant, differs from
// `whole`'s stored steps: "rank 2 step 5: ..."; none where they agree.
std::optional<std::string> first_difference(const Schedule& whole, const Schedule& on_demand) {
  if (whole.nparticipants() != on_demand.nparticipants()) return "participants differ";
  for (int p = 0; p < whole.nparticipants(); ++p) {
    const std::vector<Step>& steps = whole.participants[static_cast<std::size_t>(p)].steps;
    if (whole.participants[static_cast<std::size_t>(p)].scratch !=
        on_demand.participants[static_cast<std::size_t>(p)].scratch)
      return participant_name(whole, p) + ": scratch differs";
    std::size_t k = 0;
    for (StepReader made = on_demand.steps_of(p); made.next(); ++k) {
      const Step& step = made.step();
      const std::string where = participant_name(whole, p) + " step " + std::to_string(k);
      if (k >= steps.size()) return where + ": made on demand, past the stored steps";
      const Step& expected = steps[k];
      if (step.kind != expected.kind || step.peer != expected.peer || !(step.from == expected.from) ||
          !(step.to == expected.to) || step.channel != expected.channel || step.stream != expected.stream) {
        return where + ": made on demand as " + describe(on_demand, p, static_cast<int>(k)) + ", stored as " +
               describe(whole, p, static_cast<int>(k));
      }
    }
    if (k != steps.size())
      return participant_name(whole, p) + ": " + std::to_string(k) + " steps made on demand, " +
             std::to_string(steps.size()) + " stored";
  }
  return std::nullopt;
}

Case ring_case(Collective collective, int nranks, std::size_t count, bool in_place) {
  Case c = testing::make_case(collective, DType::Float32, RedOp::Sum, count, nranks);
  if (per_rank_counts(collective)) set_counts(c, spread_counts(collective, nranks, count));
  c.in_place = in_place && !per_rank_counts(collective);
  return c;
}

constexpr Collective kRingCollectives[] = {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                                           Collective::AllGatherV, Collective::ReduceScatterV};

TEST(OnDemand, RingSchedulesAgreeWithTheStoredOnesStepForStep) {
  int compared = 0;
  for (Collective collective : kRingCollectives) {
    for (int n = 1; n <= 20; n += (n < 8 ? 1 : 3)) {
      for (std::size_t count = 0; count <= 3 * static_cast<std::size_t>(n) + 2; count += (count < 6 ? 1 : 5)) {
        for (const Knobs knobs : {Knobs{0, 1, 4}, Knobs{1, 2, 4}, Knobs{2, 3, 4}, Knobs{5, 1, 4}}) {
          for (bool in_place : {false, true}) {
            const Case c = ring_case(collective, n, count, in_place);
            Result<Schedule> whole = make_schedule("ring", c, knobs);
            Result<Schedule> on_demand = make_schedule("ring", c, knobs, Form::OnDemand);
            ASSERT_TRUE(whole.ok() && on_demand.ok()) << to_string(c);
            ASSERT_FALSE(whole->on_demand());
            ASSERT_TRUE(on_demand->on_demand());
            const std::optional<std::string> difference = first_difference(*whole, *on_demand);
            ASSERT_FALSE(difference) << to_string(c) << " chunk " << knobs.chunk << " channels " << knobs.channels
                                     << ": " << *difference;
            ASSERT_TRUE(validate(*on_demand).ok()) << to_string(c);
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 2000);
}

// Steps yielded one at a time and in batches (empty ones among them) are read one at a time, in
// order, each batch's steps where the generator keeps them; past the end, next() stays false; an
// invariant broken after a batch throws once that batch is read. Fails where a batch's first step
// is skipped, an empty batch ends the sequence, or the last batch is walked again after the end.
StepSequence batches_and_single_steps(bool breaks) {
  std::array<Step, 4> batch;
  const auto numbered = [](int peer) { return Step{StepKind::Send, peer, Range{BufferKind::Input, 0, 1}, {}, 0, 0}; };
  co_yield numbered(0);
  for (int k = 0; k < 3; ++k) batch[static_cast<std::size_t>(k)] = numbered(1 + k);
  co_yield std::span<const Step>(batch.data(), 3);
  co_yield std::span<const Step>();
  co_yield std::span<const Step>(batch.data(), 0);
  batch[0] = numbered(4);
  co_yield std::span<const Step>(batch.data(), 1);
  if (breaks) throw std::logic_error("broken after the batches");
  co_yield numbered(5);
  for (int k = 0; k < 4; ++k) batch[static_cast<std::size_t>(k)] = numbered(6 + k);
  co_yield std::span<const Step>(batch.data(), 4);
}

TEST(OnDemand, BatchesOfStepsAreReadOneStepAtATime) {
  StepSequence steps = batches_and_single_steps(false);
  std::vector<int> peers;
  while (steps.next()) peers.push_back(steps.step().peer);
  EXPECT_EQ(peers, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_FALSE(steps.next());
  EXPECT_FALSE(steps.next());

  StepSequence broken = batches_and_single_steps(true);
  peers.clear();
  EXPECT_THROW(while (broken.next()) peers.push_back(broken.step().peer), std::logic_error);
  EXPECT_EQ(peers, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(broken.next());
}

// A reader that takes the rest of a batch at once (next_batch, as the checks and the prover do)
// after reading its first step on its own gets the steps after it, the cursor on the last of them;
// empty batches are passed over and the end gives an empty batch. Fails where the rest begins at
// the step already read or the cursor is left inside the batch (the next batch repeats its end).
TEST(OnDemand, TheRestOfABatchComesAtOnceAfterItsFirstStep) {
  StepSequence steps = batches_and_single_steps(false);
  const auto peers_of = [](std::span<const Step> batch) {
    std::vector<int> peers;
    for (const Step& step : batch) peers.push_back(step.peer);
    return peers;
  };
  ASSERT_TRUE(steps.next());
  EXPECT_EQ(steps.step().peer, 0);
  ASSERT_TRUE(steps.next());
  EXPECT_EQ(steps.step().peer, 1);
  EXPECT_EQ(peers_of(steps.next_batch()), (std::vector<int>{2, 3}));
  EXPECT_EQ(steps.step().peer, 3);
  EXPECT_EQ(peers_of(steps.next_batch()), (std::vector<int>{4}));
  EXPECT_EQ(peers_of(steps.next_batch()), (std::vector<int>{5}));
  ASSERT_TRUE(steps.next());
  EXPECT_EQ(steps.step().peer, 6);
  EXPECT_EQ(peers_of(steps.next_batch()), (std::vector<int>{7, 8, 9}));
  EXPECT_TRUE(steps.next_batch().empty());
  EXPECT_FALSE(steps.next());
}

// What a sequence says its next resume writes (the `sim` engine asks the cache for it ahead): the
// batch it stands at the last step of, and nothing inside a batch; the same after the sequence is
// moved (the engine's streams move as their list grows). A move that lost the batch's start gave
// a batch from address zero to its end, and the engine's asks ran for ever.
TEST(OnDemand, TheBatchANextResumeWritesIsKnownAndMovesWithTheSequence) {
  StepSequence steps = batches_and_single_steps(false);
  EXPECT_FALSE(steps.resumes_next() && !steps.last_batch().empty());
  ASSERT_TRUE(steps.next());  // peer 0, yielded alone
  EXPECT_TRUE(steps.resumes_next());
  ASSERT_TRUE(steps.next());  // peer 1, the first of a batch of three
  EXPECT_FALSE(steps.resumes_next());
  ASSERT_TRUE(steps.next());
  ASSERT_TRUE(steps.next());  // peer 3, the batch's last
  EXPECT_TRUE(steps.resumes_next());
  const std::span<const Step> batch = steps.last_batch();
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch.front().peer, 1);
  EXPECT_EQ(&batch.back(), &steps.step());
  StepSequence moved = std::move(steps);
  EXPECT_TRUE(moved.resumes_next());
  EXPECT_EQ(moved.last_batch().data(), batch.data());
  EXPECT_EQ(moved.last_batch().size(), 3u);
  StepSequence assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.last_batch().data(), batch.data());
  EXPECT_EQ(assigned.last_batch().size(), 3u);
  ASSERT_TRUE(assigned.next());
  EXPECT_EQ(assigned.step().peer, 4);
}

// A per-rank form that makes one wrong step (rank 2's fourth step goes to the wrong peer) is
// named by the comparison, and one that stops early is too.
TEST(OnDemand, AWrongStepMadeOnDemandIsNamed) {
  const Case c = ring_case(Collective::AllReduce, 5, 40, false);
  Result<Schedule> whole = make_schedule("ring", c, Knobs{4, 1, 4});
  Result<Schedule> broken = make_schedule("ring", c, Knobs{4, 1, 4}, Form::OnDemand);
  ASSERT_TRUE(whole.ok() && broken.ok());
  ASSERT_FALSE(first_difference(*whole, *broken));
  const MakeSteps right = broken->make_steps;
  broken->make_steps = [right](int p) -> StepSequence {
    StepSequence steps = right(p);
    for (int k = 0; steps.next(); ++k) {
      Step step = steps.step();
      if (p == 2 && k == 3) step.peer = 4;
      co_yield step;
    }
  };
  const std::optional<std::string> wrong = first_difference(*whole, *broken);
  ASSERT_TRUE(wrong);
  EXPECT_NE(wrong->find("rank 2 step 3"), std::string::npos) << *wrong;
  broken->make_steps = [right](int p) -> StepSequence {
    StepSequence steps = right(p);
    for (int k = 0; steps.next() && !(p == 1 && k == 6); ++k) co_yield steps.step();
  };
  const std::optional<std::string> short_one = first_difference(*whole, *broken);
  ASSERT_TRUE(short_one);
  EXPECT_NE(short_one->find("rank 1: 6 steps made on demand"), std::string::npos) << *short_one;
}

// A schedule made on demand is checked participant by participant: a step outside its buffer
// is named, as for a stored schedule.
TEST(OnDemand, ValidateNamesAWrongStepMadeOnDemand) {
  Result<Schedule> schedule = make_schedule("ring", ring_case(Collective::AllReduce, 4, 16, false), {}, Form::OnDemand);
  ASSERT_TRUE(schedule.ok());
  const MakeSteps right = schedule->make_steps;
  schedule->make_steps = [right](int p) -> StepSequence {
    StepSequence steps = right(p);
    for (int k = 0; steps.next(); ++k) {
      Step step = steps.step();
      if (p == 3 && k == 2) step.from.offset = 100;
      co_yield step;
    }
  };
  const Status valid = validate(*schedule);
  ASSERT_FALSE(valid.ok());
  EXPECT_NE(valid.error().message.find("rank 3 step 2"), std::string::npos) << valid.error().message;
}

// Drops every `every`-th transmission and reorders the one before it: a hook whose decisions
// depend only on the order of sends, which both forms make the same.
class EveryNth final : public LinkHook {
 public:
  explicit EveryNth(int every) : every_(every) {}
  SendDecision on_send(const Message&, std::span<std::byte>) override {
    ++sent_;
    return SendDecision{sent_ % every_ == 0, 0, 0, sent_ % every_ == every_ - 1};
  }

 private:
  int every_;
  int sent_ = 0;
};

SimulatedRun run_with(const Schedule& schedule, const Topology& topology, bool numeric, bool faults, int calls) {
  EveryNth hook(29);
  SimulationOptions options(5, faults ? &hook : nullptr, numeric);
  options.protocol.reliable = faults;
  options.calls = calls;
  return simulate(schedule, topology, options);
}

// The engine runs `on_demand` exactly as `whole`: the same events in the same order (the trace),
// the same time, messages and outputs.
void expect_run_alike(const Schedule& whole, const Schedule& on_demand, const Topology& topology, bool numeric,
                      bool faults, int calls, const std::string& what) {
  const SimulatedRun expected = run_with(whole, topology, numeric, faults, calls);
  const SimulatedRun got = run_with(on_demand, topology, numeric, faults, calls);
  ASSERT_TRUE(expected.completed) << what << ": " << expected.error;
  ASSERT_TRUE(got.completed) << what << ": " << got.error;
  EXPECT_EQ(got.trace, expected.trace) << what;
  EXPECT_EQ(got.time, expected.time) << what;
  EXPECT_EQ(got.messages, expected.messages) << what;
  EXPECT_EQ(got.retransmissions, expected.retransmissions) << what;
  EXPECT_EQ(got.outputs, expected.outputs) << what;
  EXPECT_EQ(got.earlier_outputs, expected.earlier_outputs) << what;
}

// The engine runs a schedule made on demand exactly as the stored one, with faults and several
// calls.
TEST(OnDemand, TheSimulatorRunsBothFormsAlike) {
  Result<Topology> topology = make_topology("ib-fat-tree:2");
  ASSERT_TRUE(topology.ok());
  for (Collective collective : kRingCollectives) {
    for (const int n : {1, 3, 8, 13}) {
      for (const Knobs knobs : {Knobs{0, 1, 4}, Knobs{3, 2, 4}}) {
        for (const bool numeric : {true, false}) {
          Case c = ring_case(collective, n, 5 * static_cast<std::size_t>(n) + 3, false);
          c.seed = 11;
          Result<Schedule> whole = make_schedule("ring", c, knobs);
          Result<Schedule> on_demand = make_schedule("ring", c, knobs, Form::OnDemand);
          ASSERT_TRUE(whole.ok() && on_demand.ok());
          expect_run_alike(*whole, *on_demand, *topology, numeric, n > 1 && !numeric, numeric ? 2 : 1,
                           to_string(c) + " channels " + std::to_string(knobs.channels));
        }
      }
    }
  }
}

// An all-to-all of `algorithm` on n ranks runs alike from both forms, numeric and timed only.
void expect_alltoall_alike(const char* algorithm, int n, const Knobs& knobs, bool in_place, const Topology& topology) {
  Case c = testing::make_case(Collective::AllToAll, DType::Float32, RedOp::Sum, 7, n);
  c.in_place = in_place;
  c.seed = 5;
  Result<Schedule> whole = make_schedule(algorithm, c, knobs);
  Result<Schedule> on_demand = make_schedule(algorithm, c, knobs, Form::OnDemand);
  ASSERT_TRUE(whole.ok() && on_demand.ok());
  const std::string what = std::string(algorithm) + " " + to_string(c) + " channels " + std::to_string(knobs.channels);
  EXPECT_TRUE(n == 1 || on_demand->on_demand()) << what;
  for (const bool numeric : {true, false})
    expect_run_alike(*whole, *on_demand, topology, numeric, n > 1 && !numeric, numeric ? 2 : 1, what);
}

// The all-to-alls made on demand (pairwise, bruck: batches of steps, scratch in place, several
// channels) run as their stored form does, in place and out of place.
TEST(OnDemand, TheSimulatorRunsAllToAllOfBothFormsAlike) {
  Result<Topology> topology = make_topology("ib-fat-tree:2");
  ASSERT_TRUE(topology.ok());
  for (const char* algorithm : {"pairwise", "bruck"}) {
    ASSERT_TRUE(has_on_demand_form(algorithm, Collective::AllToAll)) << algorithm;
    for (const int n : {1, 2, 5, 12}) {
      for (const Knobs knobs : {Knobs{0, 1, 4}, Knobs{2, 3, 4}}) {
        for (const bool in_place : {false, true}) expect_alltoall_alike(algorithm, n, knobs, in_place, *topology);
      }
    }
  }
}

// What validate checks of a stored schedule before the run, the engine checks of one made on
// demand as it reads and matches it: a receive of another size than its message, and a send no
// receive takes, each named.
TEST(OnDemand, TheSimulatorNamesUnmatchedMessagesOfASchedulesMadeOnDemand) {
  Result<Topology> topology = make_topology("dgx-h100");
  ASSERT_TRUE(topology.ok());
  const Case c = ring_case(Collective::AllReduce, 4, 40, false);
  Result<Schedule> schedule = make_schedule("ring", c, {}, Form::OnDemand);
  ASSERT_TRUE(schedule.ok());
  ASSERT_TRUE(run_with(*schedule, *topology, true, false, 1).completed);
  const MakeSteps right = schedule->make_steps;
  schedule->make_steps = [right](int p) -> StepSequence {
    StepSequence steps = right(p);
    for (int k = 0; steps.next(); ++k) {
      Step step = steps.step();
      if (p == 2 && step.receives() && k == 3) {
        step.from.count -= 1;
        step.to.count -= 1;
      }
      co_yield step;
    }
  };
  const SimulatedRun wrong_size = run_with(*schedule, *topology, true, false, 1);
  EXPECT_FALSE(wrong_size.completed);
  EXPECT_NE(wrong_size.error.find("rank 2 step 3"), std::string::npos) << wrong_size.error;
  EXPECT_NE(wrong_size.error.find("takes 9 elements but the message from rank 1 on channel 0 has 10"),
            std::string::npos)
      << wrong_size.error;
  schedule->make_steps = [right](int p) -> StepSequence {
    StepSequence steps = right(p);
    for (int k = 0; steps.next(); ++k) {
      if (p == 1 && steps.step().receives() && k == 1) continue;
      co_yield steps.step();
    }
  };
  const SimulatedRun unmatched = run_with(*schedule, *topology, true, false, 1);
  EXPECT_FALSE(unmatched.completed);
  EXPECT_NE(unmatched.error.find("rank 0 -> rank 1 on channel 0: 6 sends but 5 receives"), std::string::npos)
      << unmatched.error;
}

// `right`'s steps yielded four at a time, with rank 3's first receive that reduces past its fourth
// step changed by `make` (none: left as it is); `*wrong_step` says which step that is once the
// steps have been made.
MakeSteps in_batches_with_a_wrong_step(const MakeSteps& right, void (*make)(Step&),
                                       const std::shared_ptr<int>& wrong_step) {
  return [right, make, wrong_step](int p) -> StepSequence {
    StepSequence steps = right(p);
    std::array<Step, 4> batch;
    std::size_t held = 0;
    for (int k = 0; steps.next(); ++k) {
      batch[held] = steps.step();
      const bool first_found = *wrong_step < 0 && k > 4 && batch[held].kind == StepKind::RecvReduce;
      if (p == 3 && (first_found || k == *wrong_step)) {
        *wrong_step = k;
        if (make != nullptr) make(batch[held]);
      }
      if (++held == batch.size()) {
        co_yield std::span<const Step>(batch.data(), held);
        held = 0;
      }
    }
    if (held > 0) co_yield std::span<const Step>(batch.data(), held);
  };
}

// Each check's words for a wrong step made in the middle of a batch (in_batches_with_a_wrong_step).
// validate, and the simulator as it reads the steps, name that step and what is wrong with it, as
// they would the step on its own.
TEST(OnDemand, EachCheckNamesAWrongStepInsideABatch) {
  Result<Topology> topology = make_topology("dgx-h100");
  ASSERT_TRUE(topology.ok());
  struct Wrong {
    const char* words;
    void (*make)(Step&);
  };
  const Wrong wrongs[] = {
      {"peer 3 is not another participant", [](Step& step) { step.peer = 3; }},
      {"input[100, 104) lies outside the buffer of 16 elements", [](Step& step) { step.from.offset = 100; }},
      {"writes the input buffer of an out-of-place call", [](Step& step) { step.to.buffer = BufferKind::Input; }},
      {"from has 3 elements, to has 4", [](Step& step) { step.from.count -= 1; }},
      {"waits for step 40, not an earlier step", nullptr},
  };
  for (const Wrong& wrong : wrongs) {
    Result<Schedule> schedule =
        make_schedule("ring", ring_case(Collective::AllReduce, 4, 16, false), {}, Form::OnDemand);
    ASSERT_TRUE(schedule.ok());
    auto wrong_step = std::make_shared<int>(-1);
    schedule->make_steps = in_batches_with_a_wrong_step(schedule->make_steps, wrong.make, wrong_step);
    for (StepReader steps = schedule->steps_of(3); steps.next();) {
    }
    ASSERT_GT(*wrong_step, 4);
    ASSERT_NE(*wrong_step % 4, 0) << "the wrong step stands inside its batch";
    if (wrong.make == nullptr) schedule->participants[3].add_after(*wrong_step, 40);
    const std::string where = "rank 3 step " + std::to_string(*wrong_step) + " (";
    const std::string what = std::string("): ") + wrong.words;
    const Status valid = validate(*schedule);
    ASSERT_FALSE(valid.ok()) << wrong.words;
    EXPECT_EQ(valid.error().message.find(where), 0u) << valid.error().message;
    EXPECT_NE(valid.error().message.find(what), std::string::npos) << valid.error().message;
    const SimulatedRun run = run_with(*schedule, *topology, true, false, 1);
    EXPECT_FALSE(run.completed);
    EXPECT_NE(run.error.find(where), std::string::npos) << run.error;
    EXPECT_NE(run.error.find(what), std::string::npos) << run.error;
  }
}

}  // namespace
}  // namespace collcheck
