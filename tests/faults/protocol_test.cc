// Our `sim` executor's link protocol under many random fault plans, on every algorithm: a run
// either completes with the oracle's answer or ends `detected` on every participant -- never a
// wrong answer reported as success, never a hang; with retransmission on, transient faults end
// right. Mutants without checksums or timeouts show that these checks can fail.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "faults/injector.h"
#include "impls/algorithms/algorithms.h"
#include "impls/sim/sim_backend.h"
#include "impls/sim/simulator.h"
#include "reference/oracle.h"
#include "reference/random.h"
#include "tests/support/cases.h"

namespace collcheck {
namespace {

constexpr double deadline = 60;  // FaultyBackend's: far past any timeout

enum class Ended { Right, Wrong, Detected, Hang };

std::size_t resent = 0;  // retransmissions over the runs so far, to show the faults bit

// A plan of one to three faults drawn from `seed`, over every kind, mild like a swarm's.
std::string random_plan(std::uint64_t seed, int nranks, bool transient_only) {
  static const char* const kinds[] = {"drop",      "delay",     "corrupt",   "duplicate", "reorder",
                                      "link-flap", "straggler", "link-down", "stop",      "kill"};
  std::string plan;
  const int faults = 1 + static_cast<int>(below(mix64(seed), 3));
  for (int i = 0; i < faults; ++i) {
    auto draw = [&](std::uint64_t purpose, std::uint64_t n) {
      return below(mix64(seed ^ mix64(static_cast<std::uint64_t>(i) * 16 + purpose)), n);
    };
    const std::string kind = kinds[draw(1, transient_only ? 7 : 10)];
    const int a = static_cast<int>(draw(2, static_cast<std::uint64_t>(nranks)));
    const int b = (a + 1 + static_cast<int>(draw(3, static_cast<std::uint64_t>(nranks - 1)))) % nranks;
    std::string fault = kind;
    // Link faults on a link, rank faults on a rank, the rest on a link half the time.
    const bool on_rank = kind == "stop" || kind == "kill" || kind == "straggler";
    const bool on_link = kind == "link-down" || kind == "link-flap" || (!on_rank && draw(4, 2) == 0);
    if (on_link) fault += ":link=" + std::to_string(a) + "->" + std::to_string(b);
    else if (on_rank) fault += ":rank=" + std::to_string(a);
    if (kind == "drop" || kind == "corrupt" || kind == "duplicate" || kind == "reorder") {
      fault += ":p=0." + std::to_string(1 + draw(5, 5)) + ":times=" + std::to_string(1 + draw(6, 4));
    }
    if (kind == "corrupt") fault += ":bits=" + std::to_string(1 + draw(7, 8));
    if (kind == "delay") fault += ":ms=" + std::to_string(draw(8, 20)) + ":jitter=2";
    if (kind == "straggler") fault += ":factor=" + std::to_string(1 + draw(9, 8));
    if (kind == "link-flap") fault += ":period=" + std::to_string(1 + draw(10, 5));
    plan += (plan.empty() ? "" : ";") + fault;
  }
  return plan;
}

Ended run(const SimVariant& variant, const Case& c, const std::string& plan, std::uint64_t seed,
          const LinkProtocol& protocol, std::string& error) {
  Result<Schedule> schedule = variant.schedule(c, Knobs{});
  if (!schedule) {
    error = schedule.error().text();
    return Ended::Hang;
  }
  Result<FaultPlan> parsed = parse_fault_plan(plan);
  EXPECT_TRUE(parsed.ok()) << plan << ": " << parsed.error().text();
  FaultInjector injector(parsed.ok() ? *parsed : FaultPlan{}, seed, deadline);
  SimulationOptions options(seed, &injector, true);
  options.protocol = protocol;
  options.protocol.checksums = protocol.checksums && !variant.skip_checksums;
  const SimulatedRun result = simulate(*schedule, sim_fabric(c.nranks), options);
  error = result.error;
  resent += result.retransmissions;
  if (result.detected) return Ended::Detected;
  if (!result.completed) return Ended::Hang;
  Oracle oracle(c);
  for (int rank = 0; rank < c.nranks; ++rank) {
    if (!compare(oracle.expected(rank), rank, result.outputs[static_cast<std::size_t>(rank)]).ok) return Ended::Wrong;
  }
  return Ended::Right;
}

Case case_for(Collective collective, std::uint64_t seed) {
  Case c = testing::make_case(collective, DType::Int32, RedOp::Sum, 1 + below(mix64(seed ^ 5), 300),
                              2 + static_cast<int>(below(mix64(seed ^ 7), 5)));
  c.root = static_cast<int>(below(mix64(seed ^ 9), static_cast<std::uint64_t>(c.nranks)));
  c.seed = seed;
  return c;
}

TEST(LinkProtocol, NeverWrongNeverHungOnEveryAlgorithm) {
  int detected = 0, right = 0;
  for (const std::string& name : algorithm_variant_names()) {
    const SimVariant variant = algorithm_variant(name).value();
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
      const Case c = case_for(variant.collectives[seed % variant.collectives.size()], seed);
      const std::string plan = random_plan(seed * 31 + name.size(), c.nranks, false);
      std::string error;
      const Ended ended = run(variant, c, plan, seed, LinkProtocol{}, error);
      EXPECT_TRUE(ended == Ended::Right || ended == Ended::Detected)
          << name << " " << to_string(c) << " under " << plan << ": " << (ended == Ended::Wrong ? "wrong" : error);
      (ended == Ended::Detected ? detected : right) += 1;
    }
  }
  EXPECT_GT(detected, 50);  // the plans bite
  EXPECT_GT(right, 50);     // and not every one ends the run
}

TEST(LinkProtocol, ReliableModeEndsRightUnderTransientFaults) {
  LinkProtocol reliable;
  reliable.reliable = true;
  resent = 0;
  for (const std::string& name : algorithm_variant_names()) {
    const SimVariant variant = algorithm_variant(name).value();
    for (std::uint64_t seed = 1; seed <= 30; ++seed) {
      const Case c = case_for(variant.collectives[seed % variant.collectives.size()], seed);
      const std::string plan = random_plan(seed * 17 + name.size(), c.nranks, true);
      std::string error;
      const Ended ended = run(variant, c, plan, seed, reliable, error);
      EXPECT_EQ(ended, Ended::Right) << name << " " << to_string(c) << " under " << plan << ": " << error;
    }
  }
  EXPECT_GT(resent, 100u);
}

// The checks above can fail: without checksums some run is wrong, without timeouts some hangs.
TEST(LinkProtocol, TheMutantsFailTheseChecks) {
  const SimVariant ring = algorithm_variant("ring").value();
  LinkProtocol unchecked, patient;
  unchecked.checksums = false;
  patient.timeout = -1;
  int wrong = 0, hung = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const Case c = case_for(Collective::AllReduce, seed);
    std::string error;
    wrong += run(ring, c, "corrupt:p=0.5", seed, unchecked, error) == Ended::Wrong ? 1 : 0;
    hung += run(ring, c, "drop:p=0.5", seed, patient, error) == Ended::Hang ? 1 : 0;
  }
  EXPECT_GT(wrong, 5);
  EXPECT_GT(hung, 5);
}

// The same seed and plan give the same trace, retransmissions and timers included.
TEST(LinkProtocol, ReplaysExactly) {
  const SimVariant ring = algorithm_variant("ring").value();
  LinkProtocol reliable;
  reliable.reliable = true;
  const Case c = case_for(Collective::AllReduce, 3);
  Result<Schedule> schedule = ring.schedule(c, Knobs{});
  ASSERT_TRUE(schedule.ok());
  auto trace = [&](std::uint64_t seed) {
    FaultInjector injector(parse_fault_plan("drop:p=0.3:times=3;corrupt:p=0.2;reorder:p=0.2").value(), seed, deadline);
    SimulationOptions options(seed, &injector, true);
    options.protocol = reliable;
    const SimulatedRun result = simulate(*schedule, sim_fabric(c.nranks), options);
    EXPECT_TRUE(result.completed) << result.error;
    EXPECT_GT(result.retransmissions, 0u);
    return result.trace;
  };
  EXPECT_EQ(trace(4), trace(4));
  EXPECT_NE(trace(4), trace(5));
}

}  // namespace
}  // namespace collcheck
