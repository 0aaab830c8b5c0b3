// Schedules made on demand (Schedule::make_steps) against the stored ones: the same steps in the
// same order for every participant over a sweep of shapes and knobs, a diverging step named, and
// the simulator giving the same run, trace and outputs from either form.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "impls/algorithms/algorithms.h"
#include "impls/sim/simulator.h"
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
    for (StepSequence made = on_demand.steps_of(p); made.next(); ++k) {
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
      for (std::size_t count = 0; count <= static_cast<std::size_t>(3 * n + 2); count += (count < 6 ? 1 : 5)) {
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

}  // namespace
}  // namespace collcheck
