// Swarms and placement through the check loop: a swarm of fault kinds per batch of cases, so that
// every kind gets its share over a run; faults on a stream's last message; special values at
// block edges. Each is shown catching a mutant that is wrong only on that dimension.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "harness/check.h"
#include "harness/fault_generator.h"
#include "harness/faulty_backend.h"
#include "impls/registry.h"

namespace collcheck {
namespace {

// The backends of `spec`, each ready to take a fault plan per case.
std::vector<std::unique_ptr<Backend>> faulty_backends(const std::string& spec) {
  auto made = make_backends(spec);
  EXPECT_TRUE(made.ok()) << made.error().text();
  std::vector<std::unique_ptr<Backend>> list;
  if (!made) return list;
  for (auto& backend : made.value()) list.push_back(std::move(with_faults(std::move(backend), FaultPlan{}).value()));
  return list;
}

CheckOptions small_cases(std::uint64_t seed, std::size_t cases) {
  CheckOptions o;
  o.seed = seed;
  o.cases = cases;
  o.time_budget = 30;
  o.stop_at_first_failure = true;
  o.limits.max_ranks = 4;
  o.limits.max_count = 64;
  return o;
}

bool caught_by(const CheckReport& report, const std::string& property) {
  return std::any_of(report.failures.begin(), report.failures.end(),
                     [&](const Failure& f) { return f.property == property; });
}

TEST(Swarm, EachBatchDrawsItsOwnSwarmAndEveryKindGetsItsShare) {
  const FaultChoice drawn = parse_fault_choice("random", 1).value();
  std::set<FaultKind> kinds;
  for (std::size_t batch = 0; batch < 20; ++batch) {
    const std::vector<FaultKind> swarm = swarm_for_case(drawn, 1, batch * kSwarmBatch);
    EXPECT_EQ(swarm, swarm_for_case(drawn, 1, batch * kSwarmBatch + kSwarmBatch - 1)) << "one swarm per batch";
    kinds.insert(swarm.begin(), swarm.end());
  }
  EXPECT_EQ(kinds.size(), fault_kind_count) << "20 batches of seed 1 draw every kind";
  const std::vector<FaultKind> first = draw_swarm(1);
  EXPECT_EQ(std::count(first.begin(), first.end(), FaultKind::Corrupt), 0) << "seed 1's first swarm never corrupts";
  const FaultChoice given = parse_fault_choice("random:drop,corrupt", 1).value();
  EXPECT_EQ(swarm_for_case(given, 1, 5 * kSwarmBatch), given.swarm) << "a swarm the user names stays";
}

// mutant:no-checksum is wrong only under a corruption; seed 1's first swarm (reorder, link-down,
// stop) has none, so only later batches' swarms find it.
TEST(Swarm, ARunOfOneSeedReachesAKindItsFirstSwarmLacks) {
  auto list = faulty_backends("mutant:no-checksum@sim");
  CheckOptions o = small_cases(1, 96);
  o.faults = "random";
  o.properties = {"safety"};
  const CheckReport report = run_check(o, list, nullptr);
  EXPECT_TRUE(caught_by(report, "safety")) << "corruptions reached no case";
  EXPECT_EQ(report.faults, "random, a swarm per 16 cases (from seed 1)");
}

// mutant:last-unchecked is wrong only when the last message of a stream's call is corrupted: on
// 8..16 ranks a ring's stream carries 14..30 messages per call, all holding data at these
// counts, past the first few that plans otherwise start at. Without placed plans, these seeds
// need 76 to 166 cases or more than 300; with them, 1 to 32 (collcheck check, knobs drawn).
TEST(Placement, AFaultOnTheLastMessageOfAStreamIsDrawn) {
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    auto list = faulty_backends("mutant:last-unchecked@sim");
    CheckOptions o = small_cases(seed, 40);
    o.limits.min_ranks = 8;
    o.limits.max_ranks = 16;
    o.limits.min_count = 64;
    o.limits.max_count = 256;
    o.faults = "random:corrupt";
    o.properties = {"safety"};
    const CheckReport report = run_check(o, list, nullptr);
    EXPECT_TRUE(caught_by(report, "safety")) << "seed " << seed << ": no corruption reached a stream's last message";
  }
}

// mutant:edge-nan-dropped is wrong only where one NaN arrives at a chunk's last element: special
// values put one at block edges, so a few small cases show it. With NaNs only at random places,
// these seeds need 27 to 41 cases; at edges, 1 to 12 (collcheck check, knobs drawn).
TEST(Placement, ANanAtABlockEdgeShowsOnSmallCases) {
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    auto list = faulty_backends("mutant:edge-nan-dropped@sim");
    CheckOptions o = small_cases(seed, 24);
    o.limits.min_ranks = 2;
    o.limits.max_count = 16;
    o.limits.values = {ValueKind::Special};
    o.limits.dtypes = {DType::Float32};
    o.limits.ops = {RedOp::Sum};
    o.properties = {"oracle"};
    const CheckReport report = run_check(o, list, nullptr);
    EXPECT_TRUE(caught_by(report, "oracle")) << "seed " << seed;
  }
}

}  // namespace
}  // namespace collcheck
