// Finding power on the v-collectives: the generator draws every kind of per-rank counts (zeros on
// some ranks, all zero, one rank nonzero, uneven, uniform), a backend wrong only where one rank's
// count is zero is caught and shrunk to two ranks, and our own ring and pairwise pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "harness/case_generator.h"
#include "harness/check.h"
#include "impls/registry.h"
#include "reference/counts.h"
#include "tests/support/broken_backend.h"

namespace collcheck {
namespace {

using testing::backend_of;
using testing::BrokenWhere;

// Some rank sends or receives nothing while another does not.
bool one_count_zero(const Case& c) {
  if (!per_rank_counts(c.collective)) return false;
  const bool zero = std::count(c.counts.begin(), c.counts.end(), std::size_t{0}) > 0;
  const bool nonzero =
      std::count(c.counts.begin(), c.counts.end(), std::size_t{0}) < static_cast<long>(c.counts.size());
  return zero && nonzero;
}

CheckOptions vector_options(std::vector<Collective> collectives, std::uint64_t seed) {
  CheckOptions options;
  options.seed = seed;
  options.time_budget = 600;  // never the limit: --cases is
  options.cases = 200;
  options.limits.collectives = std::move(collectives);
  options.limits.min_ranks = 1;
  options.limits.max_ranks = 12;
  options.limits.max_count = 256;
  return options;
}

// Every kind of counts is drawn: some zero and some not, all zero, exactly one nonzero, all equal
// and nonzero, and entries that differ with none zero.
TEST(VectorCaseGenerator, DrawsEveryKindOfCounts) {
  const Capabilities capabilities = backend_of("ring@sim")->capabilities();
  CaseLimits limits;
  limits.collectives = {Collective::AllGatherV, Collective::ReduceScatterV};
  limits.min_ranks = 3;
  limits.max_ranks = 8;
  limits.max_count = 64;
  const rc::Gen<Case> cases = case_generator(capabilities, limits);
  rc::Random random(11);
  std::set<std::string> kinds;
  for (int i = 0; i < 400; ++i) {
    const Case c = cases(random.split(), 100).value();  // full size, as check reaches by its 45th case
    ASSERT_TRUE(per_rank_counts(c.collective)) << to_string(c);
    ASSERT_TRUE(validate(c).ok()) << to_string(c);
    ASSERT_FALSE(c.in_place) << to_string(c);
    const auto zeros = static_cast<std::size_t>(std::count(c.counts.begin(), c.counts.end(), std::size_t{0}));
    const bool uniform = std::all_of(c.counts.begin(), c.counts.end(), [&](std::size_t k) { return k == c.counts[0]; });
    if (zeros == c.counts.size()) kinds.insert("all zero");
    else if (zeros + 1 == c.counts.size()) kinds.insert("one nonzero");
    else if (zeros > 0) kinds.insert("some zero");
    else if (uniform) kinds.insert("uniform");
    else kinds.insert("uneven");
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"all zero", "one nonzero", "some zero", "uniform", "uneven"}));
}

// Caught on every seed tried, and shrunk to two ranks, one count zero and the other 1.
TEST(VectorCaseGenerator, ABackendBrokenOnlyWhenOneRanksCountIsZeroIsCaughtAndShrunk) {
  for (std::uint64_t seed : {1, 2, 3}) {
    std::vector<std::unique_ptr<Backend>> list;
    list.push_back(std::make_unique<BrokenWhere>(backend_of("ring@sim"), one_count_zero));
    CheckOptions options = vector_options({Collective::AllGatherV, Collective::ReduceScatterV}, seed);
    options.properties = {"liveness"};
    options.stop_at_first_failure = true;
    const CheckReport report = run_check(options, list, nullptr);
    ASSERT_EQ(report.failures.size(), 1u) << "seed " << seed;
    const Case& shrunk = report.failures[0].shrunk;
    EXPECT_EQ(shrunk.nranks, 2) << "seed " << seed << ": " << to_string(shrunk);
    std::vector<std::size_t> sorted = shrunk.counts;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<std::size_t>{0, 1})) << "seed " << seed << ": " << to_string(shrunk);
  }
}

// Our ring (allgatherv, reducescatterv) and pairwise (alltoallv) pass every property.
TEST(VectorCaseGenerator, OurOwnAlgorithmsPass) {
  for (const auto& [spec, collective] : {std::pair{"ring@sim", Collective::AllGatherV},
                                         {"ring@sim", Collective::ReduceScatterV},
                                         {"pairwise@sim", Collective::AllToAllV}}) {
    std::vector<std::unique_ptr<Backend>> list;
    list.push_back(backend_of(spec));
    CheckOptions options = vector_options({collective}, 1);
    options.cases = 60;
    const CheckReport report = run_check(options, list, nullptr);
    EXPECT_TRUE(report.failures.empty()) << spec << " " << name(collective) << ": "
                                         << (report.failures.empty() ? "" : to_string(report.failures[0].shrunk));
  }
}

}  // namespace
}  // namespace collcheck
