// The ring, chain, binomial, rd, rhd, pairwise and bruck generators: valid and proven exact over
// rank counts 1..33 and beyond, awkward counts, every root, both layouts and several knobs;
// each keeps its algorithm's message pattern; and the registry's names, errors and slice().
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/algorithms/generator_support.h"
#include "impls/algorithms/generators.h"
#include "impls/prove/proof.h"
#include "reference/counts.h"

namespace collcheck {
namespace {

struct Generated {
  const char* name;  // algorithm_collective, for the test's name
  Collective collective;
  Generator generate;
};

// gtest prints a failing parameter with this.
void PrintTo(const Generated& generated, std::ostream* out) { *out << generated.name; }

const Generated kGenerators[] = {
    {"ring_allreduce", Collective::AllReduce, ring_allreduce},
    {"ring_allgather", Collective::AllGather, ring_allgather},
    {"ring_reducescatter", Collective::ReduceScatter, ring_reducescatter},
    {"chain_broadcast", Collective::Broadcast, chain_broadcast},
    {"chain_reduce", Collective::Reduce, chain_reduce},
    {"binomial_broadcast", Collective::Broadcast, binomial_broadcast},
    {"binomial_reduce", Collective::Reduce, binomial_reduce},
    {"rd_allgather", Collective::AllGather, rd_allgather},
    {"rhd_allreduce", Collective::AllReduce, rhd_allreduce},
    {"rhd_reducescatter", Collective::ReduceScatter, rhd_reducescatter},
    {"pairwise_alltoall", Collective::AllToAll, pairwise_alltoall},
    {"bruck_alltoall", Collective::AllToAll, bruck_alltoall},
};

constexpr std::size_t kSmallChunk = 3;

// Counts that reach the awkward paths: none, fewer than the ranks, not divisible by them,
// around one chunk. Beyond 33 ranks the collectives whose buffers hold n blocks (a proof runs
// n*n*count elements there) keep to the small counts.
std::vector<std::size_t> counts_for(Collective collective, int nranks) {
  const auto n = static_cast<std::size_t>(nranks);
  std::set<std::size_t> counts{0, 1, 7, kSmallChunk - 1, kSmallChunk + 1};
  const bool blocks = input_elements(collective, 1, nranks) > 1 || output_elements(collective, 1, nranks) > 1;
  if (nranks <= 33 || !blocks) counts.insert({n - 1, n, n + 1, 3 * n + 2});
  return {counts.begin(), counts.end()};
}

// Under AddressSanitizer (the `sanitize` preset, ~40 times slower) the sweep keeps to a sample
// that still reaches every path: it looks for memory errors; the full sweep runs elsewhere.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

std::vector<int> rank_counts() {
  if (kSanitized) return {1, 2, 3, 4, 5, 6, 7, 8, 11, 13, 16, 17};
  std::vector<int> out;
  for (int n = 1; n <= 33; ++n) out.push_back(n);
  out.push_back(64);
  out.push_back(100);
  return out;
}

std::vector<int> roots_for(Collective collective, int nranks) {
  if (!rooted(collective)) return {0};
  if (nranks <= (kSanitized ? 8 : 33)) {
    std::vector<int> all(static_cast<std::size_t>(nranks));
    for (int r = 0; r < nranks; ++r) all[static_cast<std::size_t>(r)] = r;
    return all;
  }
  return {0, 1, nranks / 2, nranks - 1};
}

std::vector<Knobs> knobs_for(int nranks) {
  // Every mix of pipelining and channels up to 16 ranks; beyond, a proof costs up to n*n*count
  // elements, so the plain and the fully cut variants only.
  if (nranks > 16) return {Knobs{0, 1, 4}, Knobs{kSmallChunk, 3, 4}};
  return {Knobs{0, 1, 4}, Knobs{kSmallChunk, 1, 4}, Knobs{0, 3, 4}, Knobs{kSmallChunk, 3, 4}};
}

std::string describe_run(const Case& shape, const Knobs& knobs) {
  return to_string(shape) + " chunk=" + std::to_string(knobs.chunk) + " channels=" + std::to_string(knobs.channels);
}

int sends_of(const Schedule& schedule, int rank) {
  const auto& steps = schedule.participants[static_cast<std::size_t>(rank)].steps;
  return static_cast<int>(std::count_if(steps.begin(), steps.end(), [](const Step& step) { return step.sends(); }));
}

// prove(), with anything it throws turned into a failed proof, so the failure names the shape.
Proof prove_or_report(const Schedule& schedule) {
  try {
    return prove(schedule);
  } catch (const std::exception& error) {
    return Proof{false, std::string("prove() threw ") + error.what(), 0, 0};
  }
}

class EveryGenerator : public ::testing::TestWithParam<Generated> {};

TEST_P(EveryGenerator, IsValidAndProvesForEveryShape) {
  const Generated& generated = GetParam();
  for (int nranks : rank_counts()) {
    for (std::size_t count : counts_for(generated.collective, nranks)) {
      for (int root : roots_for(generated.collective, nranks)) {
        for (bool in_place : {false, true}) {
          for (const Knobs& knobs : knobs_for(nranks)) {
            const Case shape = spread_case(generated.collective, count, nranks, root, in_place);
            const Schedule schedule = generated.generate(shape, knobs);
            ASSERT_EQ(schedule.nparticipants(), nranks) << describe_run(shape, knobs);
            ASSERT_EQ(schedule.shape, shape) << describe_run(shape, knobs);
            const Status valid = validate(schedule);
            ASSERT_TRUE(valid.ok()) << describe_run(shape, knobs) << ": " << valid.error().text();
            const Proof proof = prove_or_report(schedule);
            ASSERT_TRUE(proof.ok) << describe_run(shape, knobs) << ": " << proof.message;
          }
        }
      }
    }
  }
}

TEST_P(EveryGenerator, SkipsEmptyMessagesAndSendsNothingForCountZero) {
  const Generated& generated = GetParam();
  for (int nranks : {1, 2, 5, 8, 11}) {
    for (bool in_place : {false, true}) {
      const Schedule schedule = generated.generate(spread_case(generated.collective, 0, nranks, nranks - 1, in_place),
                                                   Knobs{kSmallChunk, 3, 4});
      for (const Participant& participant : schedule.participants) EXPECT_TRUE(participant.steps.empty());
    }
    const Schedule small = generated.generate(spread_case(generated.collective, 2, nranks, 0, false), Knobs{1, 3, 4});
    for (const Participant& participant : small.participants) {
      for (const Step& step : participant.steps) EXPECT_GT(step.sends() ? step.from.count : step.to.count, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Generators, EveryGenerator, ::testing::ValuesIn(kGenerators),
                         [](const ::testing::TestParamInfo<Generated>& test) { return std::string(test.param.name); });

// Each algorithm keeps its own message pattern (one whole piece, one channel).
TEST(MessagePattern, RingSendsTwiceNMinusOneForAllReduceAndNMinusOneOtherwise) {
  for (int n : {2, 3, 8, 11}) {
    const Schedule all_reduce = ring_allreduce(spread_case(Collective::AllReduce, 100, n, 0, false), {});
    const Schedule all_gather = ring_allgather(spread_case(Collective::AllGather, 10, n, 0, false), {});
    const Schedule reduce_scatter = ring_reducescatter(spread_case(Collective::ReduceScatter, 10, n, 0, true), {});
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(sends_of(all_reduce, r), 2 * (n - 1));
      EXPECT_EQ(sends_of(all_gather, r), n - 1);
      EXPECT_EQ(sends_of(reduce_scatter, r), n - 1);
      for (const Step& step : all_reduce.participants[static_cast<std::size_t>(r)].steps) {
        if (step.sends() || step.receives()) {
          EXPECT_EQ(step.peer, (r + (step.sends() ? 1 : n - 1)) % n);
        }
      }
    }
  }
}

TEST(MessagePattern, RingPipelinesEachBlockInChunks) {
  // 4 ranks, 40 elements: blocks of 10 in chunks of 3 -> 4 rounds of 2(n-1) sends.
  const Schedule schedule = ring_allreduce(spread_case(Collective::AllReduce, 40, 4, 0, false), Knobs{3, 1, 4});
  EXPECT_EQ(sends_of(schedule, 0), 4 * 2 * 3);
  for (const Step& step : schedule.participants[0].steps) {
    if (step.sends()) {
      EXPECT_LE(step.from.count, 3u);
    }
  }
}

// A chunk larger than any span is one chunk: the count of chunks must not wrap to none (a
// schedule with no steps would leave every output as it was, judged as data).
TEST(MessagePattern, AChunkLargerThanTheSpanIsOneChunk) {
  const std::size_t huge = ~std::size_t{0};
  EXPECT_EQ(generators::chunk_count(100, huge), 1u);
  EXPECT_EQ(generators::chunk_count(huge, huge), 1u);
  EXPECT_EQ(generators::chunk_count(huge, huge - 1), 2u);
  const Schedule schedule = ring_allreduce(spread_case(Collective::AllReduce, 100, 2, 0, false), Knobs{huge, 1, 4});
  EXPECT_EQ(sends_of(schedule, 0), 2);
}

TEST(MessagePattern, ChainAndBinomialSendFromTheRoot) {
  for (int n : {2, 5, 8, 13}) {
    for (int root : {0, n / 2, n - 1}) {
      const Schedule chain = chain_broadcast(spread_case(Collective::Broadcast, 9, n, root, false), Knobs{3, 1, 4});
      EXPECT_EQ(sends_of(chain, root), 3);                // three chunks to the next rank
      EXPECT_EQ(sends_of(chain, (root + n - 1) % n), 0);  // the end of the line
      const Schedule tree = binomial_broadcast(spread_case(Collective::Broadcast, 9, n, root, false), {});
      int levels = 0;
      while ((1 << levels) < n) ++levels;
      EXPECT_EQ(sends_of(tree, root), levels);
      const Schedule reduce = binomial_reduce(spread_case(Collective::Reduce, 9, n, root, false), {});
      EXPECT_EQ(sends_of(reduce, root), 0);
      for (int r = 0; r < n; ++r) {
        if (r != root) {
          EXPECT_EQ(sends_of(reduce, r), 1);
        }
      }
    }
  }
}

TEST(MessagePattern, RecursiveDoublingAndHalvingTakeLogRoundsOnPowersOfTwo) {
  for (int n : {2, 4, 8, 16}) {
    int log = 0;
    while ((1 << log) < n) ++log;
    const Schedule gather = rd_allgather(spread_case(Collective::AllGather, 5, n, 0, false), {});
    const Schedule reduce = rhd_allreduce(spread_case(Collective::AllReduce, 64, n, 0, false), {});
    const Schedule scatter = rhd_reducescatter(spread_case(Collective::ReduceScatter, 5, n, 0, false), {});
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(sends_of(gather, r), log);
      EXPECT_EQ(sends_of(reduce, r), 2 * log);
      EXPECT_EQ(sends_of(scatter, r), log);
    }
  }
}

TEST(MessagePattern, NonPowersOfTwoFoldTheExtraRanks) {
  // 6 ranks: 4 in the power of two, ranks 4 and 5 folded into 0 and 1.
  const Schedule reduce = rhd_allreduce(spread_case(Collective::AllReduce, 60, 6, 0, false), {});
  EXPECT_EQ(sends_of(reduce, 4), 1);
  EXPECT_EQ(sends_of(reduce, 0), 2 * 2 + 1);
  EXPECT_EQ(sends_of(reduce, 2), 2 * 2);
  const Schedule gather = rd_allgather(spread_case(Collective::AllGather, 5, 6, 0, false), {});
  EXPECT_EQ(sends_of(gather, 5), 1);
}

TEST(MessagePattern, PairwiseSendsNMinusOneBlocksAndBruckLogMessages) {
  for (int n : {2, 3, 7, 8, 11}) {
    int log = 0;
    while ((1 << log) < n) ++log;
    const Schedule pairwise = pairwise_alltoall(spread_case(Collective::AllToAll, 4, n, 0, false), {});
    const Schedule bruck = bruck_alltoall(spread_case(Collective::AllToAll, 4, n, 0, true), {});
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(sends_of(pairwise, r), n - 1);
      EXPECT_EQ(sends_of(bruck, r), log);
    }
  }
}

TEST(MessagePattern, ChannelsUseTheirOwnStreamsAndSlices) {
  const Schedule schedule = ring_allgather(spread_case(Collective::AllGather, 10, 4, 0, false), Knobs{0, 3, 4});
  std::set<int> channels;
  for (const Step& step : schedule.participants[1].steps) {
    EXPECT_EQ(step.stream, step.channel);
    channels.insert(step.channel);
  }
  EXPECT_EQ(channels, (std::set<int>{0, 1, 2}));
}

TEST(Registry, ListsEveryAlgorithmOnceInOrder) {
  EXPECT_EQ(algorithm_names(), "ring, tree, rhd, innet, pairwise, bruck, chain, binomial, rd");
  for (const Algorithm& algorithm : all_algorithms()) {
    EXPECT_FALSE(algorithm.description.empty()) << algorithm.name;
    Case shape = spread_case(algorithm.collective, 5, 3, 1, false);
    if (per_rank_counts(shape.collective)) set_counts(shape, spread_counts(shape.collective, 3, 5));
    const Result<Schedule> schedule = make_schedule(algorithm.name, shape);
    ASSERT_TRUE(schedule.ok()) << algorithm.name << ": " << schedule.error().text();
    EXPECT_EQ(schedule->algorithm, algorithm.name);
    EXPECT_EQ(schedule->shape, shape);
  }
}

TEST(Registry, NamesTheUnknownAlgorithmAndTheMissingCollective) {
  const Case all_reduce = spread_case(Collective::AllReduce, 5, 3, 0, false);
  const Result<Schedule> unknown = make_schedule("hypercube", all_reduce);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().text(),
            "algorithm 'hypercube': must be one of ring, tree, rhd, innet, pairwise, bruck, chain, binomial, rd");
  const Result<Schedule> missing = make_schedule("ring", spread_case(Collective::Broadcast, 5, 3, 0, false));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().text(),
            "algorithm 'ring' has no broadcast; it implements allreduce, allgather, reducescatter, allgatherv, "
            "reducescatterv");
}

TEST(Registry, ValidatesKnobsAndTheCase) {
  const Case shape = spread_case(Collective::AllReduce, 5, 3, 0, false);
  EXPECT_EQ(make_schedule("ring", shape, Knobs{0, 0, 4}).error().text(), "channels 0: must be 1..64");
  EXPECT_EQ(make_schedule("ring", shape, Knobs{0, 65, 4}).error().text(), "channels 65: must be 1..64");
  EXPECT_EQ(make_schedule("innet", shape, Knobs{0, 1, 1}).error().text(), "fan_in 1: must be 2..64");
  EXPECT_EQ(make_schedule("innet", shape, Knobs{0, 1, 65}).error().text(), "fan_in 65: must be 2..64");
  EXPECT_TRUE(make_schedule("ring", shape, Knobs{0, 64, 64}).ok());
  const Result<Schedule> bad_root = make_schedule("chain", spread_case(Collective::Broadcast, 5, 3, 3, false));
  ASSERT_FALSE(bad_root.ok());
  EXPECT_EQ(bad_root.error().field, "root");
}

TEST(Slice, SplitsIntoNearlyEqualPartsLargerFirst) {
  std::size_t next = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    const Slice part = slice(10, 4, i);
    EXPECT_EQ(part.offset, next);
    EXPECT_EQ(part.count, i < 2 ? 3u : 2u);
    next += part.count;
  }
  EXPECT_EQ(next, 10u);
  EXPECT_EQ(slice(2, 5, 1).count, 1u);
  EXPECT_EQ(slice(2, 5, 4).count, 0u);
  EXPECT_EQ(slice(2, 5, 4).offset, 2u);
  EXPECT_EQ(slice(0, 3, 2).count, 0u);
}

}  // namespace
}  // namespace collcheck
