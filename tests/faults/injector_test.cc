// The fault injector on `sim`: each kind it can inject bites (drops end at the deadline, delays
// arrive later but right, corruption reaches the output), the seed alone decides the trace, and
// the empty plan changes nothing.
#include <gtest/gtest.h>

#include <string>

#include "faults/injector.h"
#include "impls/algorithms.h"
#include "impls/sim_backend.h"
#include "impls/simulator.h"
#include "reference/oracle.h"
#include "tests/support/cases.h"

namespace collcheck {
namespace {

constexpr int nranks = 4;
constexpr double deadline = 1.0;  // virtual seconds; a fault-free run takes microseconds

Case ring_case() {
  Case c = testing::make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 4096, nranks);
  c.seed = 77;
  return c;
}

FaultPlan plan_of(const std::string& text) {
  Result<FaultPlan> plan = parse_fault_plan(text);
  EXPECT_TRUE(plan.ok()) << plan.error().text();
  return plan.ok() ? *plan : FaultPlan{};
}

// Runs the ring all-reduce on sim_fabric with `injector` as the hook (null: none).
SimulatedRun run(FaultInjector* injector) {
  Result<Schedule> schedule = make_schedule("ring", ring_case());
  EXPECT_TRUE(schedule.ok()) << schedule.error().text();
  return simulate(*schedule, sim_fabric(nranks), SimulationOptions(3, injector, true));
}

SimulatedRun run(const std::string& plan, std::uint64_t seed = 1) {
  FaultInjector injector(plan_of(plan), seed, deadline);
  return run(&injector);
}

// Ranks whose output the oracle rejects.
int wrong_ranks(const SimulatedRun& result) {
  Oracle oracle(ring_case());
  int wrong = 0;
  for (int rank = 0; rank < nranks; ++rank) {
    wrong += compare(oracle.expected(rank), rank, result.outputs[static_cast<std::size_t>(rank)]).ok ? 0 : 1;
  }
  return wrong;
}

TEST(FaultInjector, TheFaultFreeRunIsCorrect) {
  const SimulatedRun clean = run(nullptr);
  ASSERT_TRUE(clean.completed) << clean.error;
  EXPECT_EQ(wrong_ranks(clean), 0);
  EXPECT_LT(clean.time, 0.001);
}

TEST(FaultInjector, TheEmptyPlanGivesTheFaultFreeTrace) {
  const SimulatedRun clean = run(nullptr);
  FaultInjector injector(FaultPlan{}, 99, deadline);
  const SimulatedRun none = run(&injector);
  ASSERT_TRUE(none.completed) << none.error;
  EXPECT_EQ(none.trace, clean.trace);
  EXPECT_EQ(none.time, clean.time);
  EXPECT_EQ(none.outputs, clean.outputs);
  EXPECT_EQ(injector.summary(), "nothing");
  EXPECT_EQ(injector.deadline(), deadline);
}

TEST(FaultInjector, DropsEndTheRunAtTheDeadline) {
  for (const std::string plan : {"drop:link=0->1:times=1", "drop:p=0.3", "drop:rank=2:after=2",
                                 "drop:offset=20000", "link-down:link=1->2", "link-flap:link=3->0:period=0.001",
                                 "stop:rank=1", "kill:rank=2"}) {
    FaultInjector injector(plan_of(plan), 5, deadline);
    const SimulatedRun result = run(&injector);
    EXPECT_FALSE(result.completed) << plan;
    EXPECT_NE(result.error.find("deadline"), std::string::npos) << plan << ": " << result.error;
    EXPECT_GT(injector.affected_per_fault().at(0), 0u) << plan;
  }
}

TEST(FaultInjector, CountsWhatItDid) {
  FaultInjector injector(plan_of("drop:link=0->1:times=1;delay:rank=3:ms=1;duplicate:rank=1"), 5, deadline);
  run(&injector);
  EXPECT_EQ(injector.affected_per_fault().at(0), 1u);
  EXPECT_GT(injector.affected_per_fault().at(1), 0u);
  EXPECT_EQ(injector.affected_per_fault().at(2), 0u);
  EXPECT_EQ(injector.affected_per_kind()[static_cast<std::size_t>(FaultKind::Drop)], 1u);
  EXPECT_EQ(injector.summary().rfind("drop 1, delay ", 0), 0u) << injector.summary();
}

// Faults that trigger after the run is over, or too unlikely to hit any message, are invisible.
TEST(FaultInjector, FaultsAfterTheRunChangeNothing) {
  const SimulatedRun clean = run(nullptr);
  for (const std::string plan : {"link-down:link=1->2:at=0.5", "kill:rank=0:at=0.5", "drop:after=100000",
                                 "drop:p=1e-12"}) {
    const SimulatedRun late = run(plan);
    ASSERT_TRUE(late.completed) << plan << ": " << late.error;
    EXPECT_EQ(late.trace, clean.trace) << plan;
  }
}

TEST(FaultInjector, DelaysKeepTheResultButArriveLater) {
  const SimulatedRun clean = run(nullptr);
  for (const std::string plan : {"delay:rank=1:ms=5", "delay:link=2->3:jitter=2", "straggler:rank=3:factor=50",
                                 "straggler:rank=0:ms=0.5"}) {
    const SimulatedRun late = run(plan);
    ASSERT_TRUE(late.completed) << plan << ": " << late.error;
    EXPECT_EQ(wrong_ranks(late), 0) << plan;
    EXPECT_GT(late.time, clean.time) << plan;
    EXPECT_NE(late.trace, clean.trace) << plan;
  }
  EXPECT_GE(run("delay:rank=1:ms=5").time, clean.time + 0.005);
}

TEST(FaultInjector, CorruptionReachesTheOutput) {
  for (const std::string plan : {"corrupt:link=0->1:times=1", "corrupt:rank=2:after=3:bits=3:times=1",
                                 "corrupt:p=0.1"}) {
    FaultInjector injector(plan_of(plan), 11, deadline);
    const SimulatedRun result = run(&injector);
    ASSERT_TRUE(result.completed) << plan << ": " << result.error;
    EXPECT_GT(wrong_ranks(result), 0) << plan << " went unnoticed (" << injector.summary() << ")";
  }
}

TEST(FaultInjector, TheSeedDecidesTheTrace) {
  const std::string plan = "delay:jitter=3:p=0.5;corrupt:p=0.2:bits=4";
  const SimulatedRun first = run(plan, 42);
  const SimulatedRun again = run(plan, 42);
  EXPECT_EQ(first.trace, again.trace);
  EXPECT_EQ(first.time, again.time);
  EXPECT_EQ(first.outputs, again.outputs);
  EXPECT_NE(run(plan, 43).trace, first.trace);
}

TEST(FaultInjector, DuplicateAndReorderAreNotInjectableHere) {
  EXPECT_FALSE(injectable(FaultKind::Duplicate));
  EXPECT_FALSE(injectable(FaultKind::Reorder));
  for (FaultKind kind : all_fault_kinds()) {
    const bool expected = kind != FaultKind::Duplicate && kind != FaultKind::Reorder;
    EXPECT_EQ(injectable(kind), expected) << to_string(kind);
  }
  FaultInjector injector(plan_of("drop:rank=0:at=0.5;duplicate;reorder:link=0->1"), 1, deadline);
  ASSERT_EQ(injector.not_injected().size(), 2u);
  EXPECT_EQ(injector.not_injected()[0].kind, FaultKind::Duplicate);
  EXPECT_EQ(run(&injector).trace, run(nullptr).trace);
}

}  // namespace
}  // namespace collcheck
