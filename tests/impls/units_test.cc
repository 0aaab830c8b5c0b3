// Proofs in units: a schedule that never cuts a unit of elements proven in units proves what its
// full proof proves, the unit is the greatest one it never cuts, and a step that cuts one inside a
// unit (which dividing with a remainder would hide) sends the proof back to every element.
#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/prove/proof.h"
#include "reference/counts.h"
#include "tests/impls/proof_support.h"

namespace collcheck {
namespace {

struct Named {
  const char* algorithm;
  Collective collective;
};

// Every algorithm whose schedules are not symmetric at these shapes, on every rank count in
// 2..12, at two counts and two sets of knobs (one chunk per channel; chunks of 4 on two channels),
// in place and out of place: the proof in units agrees with the full proof, step for step.
TEST(InUnits, ProvesWhatTheFullProofProves) {
  const std::vector<Named> algorithms = {{"innet", Collective::AllGather}, {"innet", Collective::ReduceScatter},
                                         {"innet", Collective::AllReduce}, {"innet", Collective::Broadcast},
                                         {"tree", Collective::AllReduce},  {"chain", Collective::Broadcast},
                                         {"ring", Collective::AllGather}};
  for (const Named& named : algorithms) {
    std::size_t in_units_proven = 0;
    for (int nranks = 2; nranks <= 12; ++nranks) {
      for (std::size_t count : {std::size_t{6}, std::size_t{8}}) {
        for (const Knobs& knobs : {Knobs{}, Knobs{4, 2, 3}}) {
          for (bool in_place : {false, true}) {
            const Case shape = spread_case(named.collective, count, nranks, nranks / 2, in_place);
            Result<Schedule> schedule = make_schedule(named.algorithm, shape, knobs);
            ASSERT_TRUE(schedule.ok()) << schedule.error().message;
            const std::string what = std::string(named.algorithm) + " " + to_string(shape) + " chunk " +
                                     std::to_string(knobs.chunk) + " channels " + std::to_string(knobs.channels);
            const std::optional<InUnits> units = in_units(*schedule);
            if (!units) continue;
            EXPECT_GT(units->unit, 1U) << what;
            EXPECT_EQ(count % units->unit, 0U) << what;
            const Proof proof = prove(units->schedule);
            const Proof full = prove_in_full(*schedule);
            EXPECT_TRUE(proof.ok) << what << ": " << proof.message;
            EXPECT_TRUE(full.ok) << what << ": " << full.message;
            EXPECT_EQ(proof.steps, full.steps) << what;
            EXPECT_EQ(proof.messages, full.messages) << what;
            ++in_units_proven;
          }
        }
      }
    }
    EXPECT_GT(in_units_proven, 0U) << named.algorithm << " " << name(named.collective) << ": never in units";
  }
}

// One chunk per channel, the in-network all-gather moves whole blocks: its unit is the count. With
// chunks of 4 elements it is what 4 and the count share.
TEST(InUnits, FindsTheGreatestUnitNeverCut) {
  const Case shape = spread_case(Collective::AllGather, 12, 5);
  Result<Schedule> whole = make_schedule("innet", shape, Knobs{});
  ASSERT_TRUE(whole.ok());
  std::optional<InUnits> units = in_units(*whole);
  ASSERT_TRUE(units);
  EXPECT_EQ(units->unit, 12U);
  EXPECT_EQ(units->schedule.shape.count, 1U);
  Result<Schedule> chunked = make_schedule("innet", shape, Knobs{4, 1, 4});
  ASSERT_TRUE(chunked.ok());
  units = in_units(*chunked);
  ASSERT_TRUE(units);
  EXPECT_EQ(units->unit, 4U);
  EXPECT_FALSE(in_units(*make_schedule("innet", spread_case(Collective::AllGather, 7, 5), Knobs{3, 1, 4})));
}

// Made on demand, the schedule in units is made on demand and makes the stored one's steps.
TEST(InUnits, MadeOnDemandGivesTheSameSteps) {
  Result<Schedule> stored_schedule = make_schedule("innet", spread_case(Collective::AllGather, 8, 6), Knobs{});
  ASSERT_TRUE(stored_schedule.ok());
  const std::optional<InUnits> stored_units = in_units(*stored_schedule);
  const std::optional<InUnits> made_units = in_units(proof_support::on_demand(*stored_schedule));
  ASSERT_TRUE(stored_units && made_units);
  EXPECT_EQ(made_units->unit, stored_units->unit);
  ASSERT_TRUE(made_units->schedule.on_demand());
  for (int p = 0; p < stored_units->schedule.nparticipants(); ++p) {
    std::vector<Step> made;
    for (StepReader reader = made_units->schedule.steps_of(p); reader.next();) made.push_back(reader.step());
    const std::vector<Step>& kept = stored_units->schedule.participants[static_cast<std::size_t>(p)].steps;
    ASSERT_EQ(made.size(), kept.size()) << p;
    for (std::size_t k = 0; k < made.size(); ++k) {
      EXPECT_EQ(made[k].from, kept[k].from) << p << " " << k;
      EXPECT_EQ(made[k].to, kept[k].to) << p << " " << k;
    }
  }
  EXPECT_TRUE(prove(made_units->schedule).ok);
}

// The first step of `participant` of that kind.
Step& first_step(Schedule& schedule, int participant, StepKind kind) {
  for (Step& step : schedule.participants[static_cast<std::size_t>(participant)].steps) {
    if (step.kind == kind) return step;
  }
  ADD_FAILURE() << "no such step";
  return schedule.participants[static_cast<std::size_t>(participant)].steps.front();
}

// A range moved by one element inside its unit: divided with a remainder it would read as the
// correct step, so the unit must see every range a step reads (`from`) and writes (`to`). A
// switch that receives a child's block one element late leaves the first element of its scratch
// undefined; a switch that reduces from one element on reads past its scratch. Both stay wrong.
TEST(InUnits, AStepCutInsideAUnitIsProvenElementByElement) {
  Result<Schedule> gather = make_schedule("innet", spread_case(Collective::AllGather, 4, 5), Knobs{});
  ASSERT_TRUE(gather.ok());
  ASSERT_TRUE(prove(*gather).ok);
  Step& late = first_step(*gather, 5, StepKind::Recv);  // participant 5: the first switch
  late.to.offset = late.to.offset + 1;
  EXPECT_FALSE(in_units(*gather));
  EXPECT_FALSE(prove(*gather).ok);

  Result<Schedule> reduce = make_schedule("innet", spread_case(Collective::AllReduce, 4, 5), Knobs{});
  ASSERT_TRUE(reduce.ok());
  ASSERT_TRUE(prove(*reduce).ok);
  Step& shifted = first_step(*reduce, 5, StepKind::RecvReduce);
  shifted.from.offset = shifted.from.offset + 1;
  EXPECT_FALSE(in_units(*reduce));
  EXPECT_FALSE(prove(*reduce).ok);
}

}  // namespace
}  // namespace collcheck
