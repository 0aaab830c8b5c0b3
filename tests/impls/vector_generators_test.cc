// The v-collectives' schedules (ring allgatherv and reducescatterv, pairwise alltoallv): valid and
// proven exact over rank counts 1..17 and 33, every count pattern (all zero, one rank nonzero,
// zeros on some ranks, uneven, uniform) and several knobs; the prover refuses a misplaced block.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/algorithms/generators.h"
#include "impls/prove/proof.h"
#include "reference/counts.h"

namespace collcheck {
namespace {

struct Generated {
  const char* name;
  Collective collective;
  Generator generate;
};

void PrintTo(const Generated& generated, std::ostream* out) { *out << generated.name; }

const Generated kGenerators[] = {
    {"ring_allgatherv", Collective::AllGatherV, ring_allgatherv},
    {"ring_reducescatterv", Collective::ReduceScatterV, ring_reducescatterv},
    {"pairwise_alltoallv", Collective::AllToAllV, pairwise_alltoallv},
};

// Count patterns over `entries` counts: all zero, one nonzero (first, middle, last), zeros on
// every other entry, uneven (0..6 in a fixed scramble), uniform.
std::vector<std::vector<std::size_t>> count_patterns(std::size_t entries) {
  std::vector<std::vector<std::size_t>> patterns;
  patterns.emplace_back(entries, 0);
  for (std::size_t nonzero : {std::size_t{0}, entries / 2, entries - 1}) {
    std::vector<std::size_t> one(entries, 0);
    one[nonzero] = 5;
    patterns.push_back(one);
  }
  std::vector<std::size_t> some(entries), uneven(entries);
  for (std::size_t i = 0; i < entries; ++i) {
    some[i] = i % 2 == 0 ? 0 : 4;
    uneven[i] = (i * 5 + 3) % 7;
  }
  patterns.push_back(some);
  patterns.push_back(uneven);
  patterns.emplace_back(entries, 3);
  return patterns;
}

Case shape_of(Collective collective, int nranks, std::vector<std::size_t> counts) {
  Case shape;
  shape.collective = collective;
  shape.nranks = nranks;
  set_counts(shape, std::move(counts));
  return shape;
}

std::string describe_run(const Case& shape, const Knobs& knobs) {
  return to_string(shape) + " chunk=" + std::to_string(knobs.chunk) + " channels=" + std::to_string(knobs.channels);
}

class EveryVectorGenerator : public ::testing::TestWithParam<Generated> {};

TEST_P(EveryVectorGenerator, IsValidAndProvesForEveryCountPattern) {
  const Generated& generated = GetParam();
  std::vector<int> rank_counts;
  for (int n = 1; n <= 17; ++n) rank_counts.push_back(n);
  rank_counts.push_back(33);
  for (int nranks : rank_counts) {
    for (const std::vector<std::size_t>& counts : count_patterns(counts_needed(generated.collective, nranks))) {
      for (const Knobs& knobs : {Knobs{0, 1, 4}, Knobs{2, 1, 4}, Knobs{0, 3, 4}, Knobs{2, 3, 4}}) {
        const Case shape = shape_of(generated.collective, nranks, counts);
        ASSERT_TRUE(validate(shape).ok()) << to_string(shape);
        const Schedule schedule = generated.generate(shape, knobs);
        const Status valid = validate(schedule);
        ASSERT_TRUE(valid.ok()) << describe_run(shape, knobs) << ": " << valid.error().text();
        const Proof proof = prove(schedule);
        ASSERT_TRUE(proof.ok) << describe_run(shape, knobs) << ": " << proof.message;
      }
    }
  }
}

TEST_P(EveryVectorGenerator, AllZeroCountsSendNothing) {
  const Generated& generated = GetParam();
  for (int nranks : {1, 2, 5}) {
    const Schedule schedule = generated.generate(
        shape_of(generated.collective, nranks, uniform_counts(generated.collective, nranks, 0)), Knobs{2, 3, 4});
    for (const Participant& participant : schedule.participants) EXPECT_TRUE(participant.steps.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(Generators, EveryVectorGenerator, ::testing::ValuesIn(kGenerators),
                         [](const ::testing::TestParamInfo<Generated>& test) { return std::string(test.param.name); });

// A schedule that puts one received block one element off its place, or that runs the uniform
// all-gather on uneven counts, is refused by the prover: the v-collectives' expected outputs
// are the prover's own, not the schedule's.
TEST(VectorProof, AMisplacedBlockIsRefused) {
  const Case shape = shape_of(Collective::AllGatherV, 3, {2, 0, 3});
  Schedule schedule = ring_allgatherv(shape, {});
  ASSERT_TRUE(prove(schedule).ok);
  for (Step& step : schedule.participants[1].steps) {
    if (step.receives() && step.to.offset > 0) {
      --step.to.offset;
      break;
    }
  }
  EXPECT_FALSE(prove(schedule).ok);

  Case uniform = shape;
  uniform.collective = Collective::AllGather;
  uniform.counts.clear();
  uniform.count = 2;
  Schedule wrong = ring_allgather(uniform, {});
  wrong.shape = shape;
  EXPECT_FALSE(prove(wrong).ok);
}

// All-to-all-v: rank 0 sends 2 to rank 1 and nothing else moves; rank 1's output is exactly
// those, and a schedule that sends rank 0's self block instead is refused.
TEST(VectorProof, AllToAllVMovesEachPairsBlock) {
  const Case shape = shape_of(Collective::AllToAllV, 2, {1, 2, 0, 0});
  Schedule schedule = pairwise_alltoallv(shape, {});
  ASSERT_TRUE(prove(schedule).ok) << prove(schedule).message;
  for (Step& step : schedule.participants[0].steps) {
    if (step.sends()) step.from.offset = 0;
  }
  EXPECT_FALSE(prove(schedule).ok);
}

// Pairwise all-to-all-v reads its counts in 32 bits by row and by column where they fit; with a
// count of 2^32 elements or more, from the case's counts. Both ways give the blocks
// their places: rank 1 of 2 copies its own block behind the one from rank 0, sends its block for
// rank 0 from the start of its input and receives rank 0's at the start of its output.
TEST(PairwiseAllToAllV, PlacesBlocksWhateverWidthTheirCountsHave) {
  for (std::size_t wide : {std::size_t{5}, (std::size_t{1} << 32) + 3}) {
    Case shape = spread_case(Collective::AllToAllV, 1, 2);
    set_counts(shape, {1, wide, 5, 2});
    ASSERT_TRUE(validate(shape).ok());
    Result<Schedule> schedule = make_schedule("pairwise", shape, Knobs{}, Form::OnDemand);
    ASSERT_TRUE(schedule.ok()) << schedule.error().message;
    std::vector<Step> steps;
    for (StepReader reader = schedule->steps_of(1); reader.next();) steps.push_back(reader.step());
    ASSERT_EQ(steps.size(), 3U) << wide;
    EXPECT_EQ(steps[0].from, (Range{BufferKind::Input, 5, 2})) << wide;
    EXPECT_EQ(steps[0].to, (Range{BufferKind::Output, wide, 2})) << wide;
    EXPECT_EQ(steps[1].from, (Range{BufferKind::Input, 0, 5})) << wide;
    EXPECT_EQ(steps[2].to, (Range{BufferKind::Output, 0, wide})) << wide;
  }
}

}  // namespace
}  // namespace collcheck
