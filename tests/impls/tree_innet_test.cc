// The double binary tree and in-network (switch) generators: their trees' shapes, and a
// validation and symbolic proof of every schedule over many rank counts, sizes and knobs.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "impls/algorithms/innet.h"
#include "impls/algorithms/tree.h"
#include "impls/prove/proof.h"
#include "reference/counts.h"

namespace collcheck {
namespace {

// Every rank count up to 40, and a few larger ones: a power of two, a round one, and one past
// a power of two; in three groups, so that ctest runs them side by side.
enum class RankGroup { UpTo20, UpTo40, Large };

std::vector<int> rank_counts(RankGroup group) {
  if (group == RankGroup::Large) return {64, 100, 257};
  const int first = group == RankGroup::UpTo20 ? 1 : 21;
  std::vector<int> out;
  for (int n = first; n < first + 20; ++n) out.push_back(n);
  return out;
}

std::string name(RankGroup group) {
  switch (group) {
    case RankGroup::UpTo20: return "ranks1to20";
    case RankGroup::UpTo40: return "ranks21to40";
    default: return "ranks64and100and257";
  }
}

const auto kRankGroups = testing::Values(RankGroup::UpTo20, RankGroup::UpTo40, RankGroup::Large);

// Sizes around the rank count: empty, one element, fewer elements than ranks, as many, one more,
// a small prime, and more than three per rank.
std::vector<std::size_t> counts(int nranks) {
  const auto n = static_cast<std::size_t>(nranks);
  std::vector<std::size_t> out{0, 1, n - 1, n, n + 1, 7, 3 * n + 2};
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The tests' own argument order (ranks before count) for reference/counts.h's spread_case.
Case shape_of(Collective collective, int nranks, std::size_t count, bool in_place, int root = 0) {
  return spread_case(collective, count, nranks, root, in_place);
}

std::string where(const Case& shape, const Knobs& knobs) {
  return to_string(shape) + " chunk=" + std::to_string(knobs.chunk) + " channels=" + std::to_string(knobs.channels) +
         " fan_in=" + std::to_string(knobs.fan_in);
}

// Valid and proved, or the first error of either.
testing::AssertionResult proved(const Schedule& schedule) {
  const Status valid = validate(schedule);
  if (!valid) return testing::AssertionFailure() << "invalid: " << valid.error().text();
  const Proof proof = prove(schedule);
  if (!proof.ok) return testing::AssertionFailure() << "not proved: " << proof.message;
  return testing::AssertionSuccess();
}

int depth(const BinaryTree& tree, int rank) {
  int steps = 0;
  for (; tree.parent[static_cast<std::size_t>(rank)] >= 0; rank = tree.parent[static_cast<std::size_t>(rank)]) ++steps;
  return steps;
}

TEST(DoubleBinaryTree, SpansTheRanksShallowWithComplementaryInteriors) {
  for (int n = 1; n <= 300; ++n) {
    const BinaryTree trees[2] = {double_binary_tree(n, 0), double_binary_tree(n, 1)};
    EXPECT_EQ(trees[0].root, 0) << "n=" << n;
    EXPECT_EQ(trees[1].root, n - 1) << "n=" << n;
    int log2 = 0;
    while ((1 << log2) < n) ++log2;
    for (int t = 0; t < 2; ++t) {
      for (int r = 0; r < n; ++r) {
        ASSERT_LE(depth(trees[t], r), log2 + 1) << "n=" << n << " tree " << t << " rank " << r;
        for (int child : trees[t].children[static_cast<std::size_t>(r)]) {
          ASSERT_EQ(trees[t].parent[static_cast<std::size_t>(child)], r) << "n=" << n << " tree " << t;
        }
      }
    }
    for (int r = 0; r < n; ++r) {
      const bool interior_in_both = !trees[0].children[static_cast<std::size_t>(r)].empty() &&
                                    !trees[1].children[static_cast<std::size_t>(r)].empty();
      if (interior_in_both) {
        EXPECT_TRUE(n % 2 == 1 && r == n - 1) << "n=" << n << " rank " << r;
      }
    }
  }
}

class TreeAllReduceProof : public testing::TestWithParam<RankGroup> {};

TEST_P(TreeAllReduceProof, ProvesForEveryRankCountSizeAndKnob) {
  for (int n : rank_counts(GetParam())) {
    for (std::size_t count : counts(n)) {
      for (std::size_t chunk : {0, 3}) {
        for (int channels : {1, 2}) {
          for (bool in_place : {false, true}) {
            const Case shape = shape_of(Collective::AllReduce, n, count, in_place);
            const Knobs knobs{chunk, channels, 4};
            ASSERT_TRUE(proved(tree_allreduce(shape, knobs))) << where(shape, knobs);
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RankGroups, TreeAllReduceProof, kRankGroups,
                         [](const testing::TestParamInfo<RankGroup>& param) { return name(param.param); });

TEST(TreeAllReduce, EachChannelMovesItsOwnSliceInChunks) {
  const Case shape = shape_of(Collective::AllReduce, 11, 50, false);
  const Knobs knobs{3, 2, 4};
  const Schedule schedule = tree_allreduce(shape, knobs);
  for (int r = 0; r < schedule.nranks(); ++r) {
    const auto& steps = schedule.participants[static_cast<std::size_t>(r)].steps;
    for (int k = 0; k < static_cast<int>(steps.size()); ++k) {
      const Step& step = steps[static_cast<std::size_t>(k)];
      ASSERT_GE(step.channel, 0);
      ASSERT_LT(step.channel, 4);  // two trees per channel asked for
      EXPECT_EQ(step.stream, step.channel);
      const Slice part = slice(shape.count, 4, static_cast<std::size_t>(step.channel));
      const Range& range = step.sends() ? step.from : step.to;
      EXPECT_GE(range.offset, part.offset) << describe(schedule, r, k);
      EXPECT_LE(range.offset + range.count, part.offset + part.count) << describe(schedule, r, k);
      EXPECT_LE(range.count, knobs.chunk) << describe(schedule, r, k);
    }
  }
}

TEST(TreeAllReduce, RejectsOtherCollectives) {
  EXPECT_THROW(tree_allreduce(shape_of(Collective::AllGather, 4, 8, false), Knobs{}), std::logic_error);
}

TEST(AggregationTree, HasFanInChildrenPerSwitchUpToOneRoot) {
  for (int fan_in = 2; fan_in <= 9; ++fan_in) {
    for (int n = 1; n <= 120; ++n) {
      const AggregationTree tree = aggregation_tree(n, fan_in);
      const int participants = static_cast<int>(tree.parent.size());
      int expected = 0;  // switches, level by level
      for (int level = n; expected == 0 || level > 1;) {
        level = (level + fan_in - 1) / fan_in;
        expected += level;
      }
      ASSERT_EQ(participants - n, expected) << "n=" << n << " fan_in=" << fan_in;
      if (n <= fan_in) {
        EXPECT_EQ(participants, n + 1);
      }
      EXPECT_EQ(tree.root, participants - 1);
      EXPECT_EQ(tree.below[static_cast<std::size_t>(tree.root)].first, 0);
      EXPECT_EQ(tree.below[static_cast<std::size_t>(tree.root)].end, n);
      for (int p = 0; p < participants; ++p) {
        const auto& children = tree.children[static_cast<std::size_t>(p)];
        EXPECT_EQ(children.empty(), p < n);
        EXPECT_LE(static_cast<int>(children.size()), fan_in);
        for (int child : children) EXPECT_EQ(tree.parent[static_cast<std::size_t>(child)], p);
        if (p != tree.root) {
          EXPECT_GT(tree.parent[static_cast<std::size_t>(p)], p);
        }
      }
    }
  }
}

using InNetworkGenerator = Schedule (*)(const Case&, const Knobs&);

struct InNetworkCase {
  Collective collective;
  InNetworkGenerator generate;
};

// How gtest (and so ctest's test names) print the parameters.
void PrintTo(const InNetworkCase& c, std::ostream* out) { *out << name(c.collective); }
void PrintTo(RankGroup group, std::ostream* out) { *out << name(group); }

class InNetwork : public testing::TestWithParam<InNetworkCase> {};

// The block collectives move nranks*count elements, so above 20 ranks they leave out 3n+2 and
// above 40 take only the small counts, to keep the proofs of many rank counts quick.
std::vector<std::size_t> innet_counts(Collective collective, int nranks) {
  const bool blocks = collective == Collective::AllGather || collective == Collective::ReduceScatter;
  std::vector<std::size_t> out = counts(nranks);
  if (!blocks || nranks <= 20) return out;
  if (nranks > 40) return {0, 1, 7};
  out.pop_back();  // 3n+2, the largest
  return out;
}

std::vector<int> roots(Collective collective, int nranks) {
  if (collective != Collective::Broadcast) return {0};
  std::vector<int> out{0, nranks / 2, nranks - 1};
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

class InNetworkProof : public testing::TestWithParam<std::tuple<InNetworkCase, RankGroup>> {};

TEST_P(InNetworkProof, ProvesForEveryRankCountSizeAndKnob) {
  const auto [param, group] = GetParam();
  for (int n : rank_counts(group)) {
    for (std::size_t count : innet_counts(param.collective, n)) {
      for (int root : roots(param.collective, n)) {
        for (std::size_t chunk : {0, 3}) {
          for (int fan_in : {2, 4, 7}) {
            for (bool in_place : {false, true}) {
              const Case shape = shape_of(param.collective, n, count, in_place, root);
              const Knobs knobs{chunk, 1 + static_cast<int>(count % 2), fan_in};
              ASSERT_TRUE(proved(param.generate(shape, knobs))) << where(shape, knobs);
            }
          }
        }
      }
    }
  }
}

TEST_P(InNetwork, RanksTalkOnlyToTheirLeafSwitch) {
  const InNetworkCase param = GetParam();
  const Case shape = shape_of(param.collective, 23, 5, false, 6);
  const Knobs knobs{2, 2, 4};
  const Schedule schedule = param.generate(shape, knobs);
  const AggregationTree tree = aggregation_tree(shape.nranks, knobs.fan_in);
  ASSERT_EQ(schedule.nparticipants(), static_cast<int>(tree.parent.size()));
  for (int p = 0; p < schedule.nparticipants(); ++p) {
    const Participant& participant = schedule.participants[static_cast<std::size_t>(p)];
    EXPECT_EQ(participant.is_switch, p >= shape.nranks);
    if (!participant.is_switch) {
      for (const Step& step : participant.steps) {
        if (step.sends() || step.receives()) {
          EXPECT_EQ(step.peer, tree.parent[static_cast<std::size_t>(p)]);
        }
      }
    }
  }
}

TEST_P(InNetwork, RejectsOtherCollectives) {
  const Collective other =
      GetParam().collective == Collective::AllReduce ? Collective::Broadcast : Collective::AllReduce;
  EXPECT_THROW(GetParam().generate(shape_of(other, 4, 8, false), Knobs{}), std::logic_error);
}

const auto kInNetworkCases = testing::Values(InNetworkCase{Collective::AllReduce, innet_allreduce},
                                             InNetworkCase{Collective::ReduceScatter, innet_reducescatter},
                                             InNetworkCase{Collective::AllGather, innet_allgather},
                                             InNetworkCase{Collective::Broadcast, innet_broadcast});

INSTANTIATE_TEST_SUITE_P(Collectives, InNetwork, kInNetworkCases,
                         [](const testing::TestParamInfo<InNetworkCase>& param) {
                           return std::string(name(param.param.collective));
                         });

INSTANTIATE_TEST_SUITE_P(CollectivesAndRankGroups, InNetworkProof, testing::Combine(kInNetworkCases, kRankGroups),
                         [](const testing::TestParamInfo<std::tuple<InNetworkCase, RankGroup>>& param) {
                           return std::string(name(std::get<0>(param.param).collective)) + "_" +
                                  name(std::get<1>(param.param));
                         });

// Reduce-scatter sends every rank its own block and nothing else; broadcast sends up only from
// the root rank.
TEST(InNetworkTraffic, ReduceScatterDeliversOnlyOwnBlocksAndBroadcastOnlyLiftsTheRoot) {
  const Knobs knobs{0, 1, 3};
  const Schedule scatter = innet_reducescatter(shape_of(Collective::ReduceScatter, 10, 6, false), knobs);
  for (int r = 0; r < 10; ++r) {
    std::size_t received = 0;
    for (const Step& step : scatter.participants[static_cast<std::size_t>(r)].steps) {
      if (step.receives()) received += step.to.count;
    }
    EXPECT_EQ(received, 6u) << "rank " << r;
  }
  const Schedule broadcast = innet_broadcast(shape_of(Collective::Broadcast, 10, 6, false, 7), knobs);
  for (int r = 0; r < 10; ++r) {
    bool sends = false;
    for (const Step& step : broadcast.participants[static_cast<std::size_t>(r)].steps) sends = sends || step.sends();
    EXPECT_EQ(sends, r == 7) << "rank " << r;
  }
}

}  // namespace
}  // namespace collcheck
