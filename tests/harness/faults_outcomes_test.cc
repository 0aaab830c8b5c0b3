// Outcomes and the properties under faults: random plans are valid and shrink to one fault,
// transient() on examples, and each of safety, liveness, recovery and reliability failing on a
// small broken backend (and passing on a good one), alone and through the check loop.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/check.h"
#include "harness/fault_generator.h"
#include "harness/faulty_backend.h"
#include "harness/report.h"
#include "impls/registry.h"
#include "properties/property.h"
#include "tests/support/broken_backend.h"

namespace collcheck {
namespace {

FaultPlan plan(std::string_view text) { return parse_fault_plan(text).value(); }

// ---- the generator and transient() ----

RC_GTEST_PROP(FaultGenerator, DrawsValidMildPlansOfTheSwarmsKinds, ()) {
  const int nranks = *rc::gen::elementOf(std::vector<int>{1, 2, 3, 8, 11, 16});
  const std::vector<FaultKind> swarm = *rc::gen::elementOf(std::vector<std::vector<FaultKind>>{
      {}, {FaultKind::Drop}, {FaultKind::Corrupt, FaultKind::Straggler}, {FaultKind::LinkDown, FaultKind::Kill}});
  const FaultPlan drawn = *fault_plan_generator(nranks, swarm);
  RC_LOG() << to_string(drawn) << "\n";
  RC_ASSERT(validate(drawn, nranks).ok());
  RC_ASSERT(drawn.faults.size() <= 3u);
  if (nranks > 1) RC_ASSERT(!drawn.faults.empty());
  for (const Fault& f : drawn.faults) {
    if (!swarm.empty()) RC_ASSERT(std::find(swarm.begin(), swarm.end(), f.kind) != swarm.end());
    RC_ASSERT(f.trigger.at <= 0.005);
    RC_ASSERT(f.ms <= 20.0);
    RC_ASSERT(f.bits <= 8);
    RC_ASSERT(f.factor <= 8.0);
  }
  RC_ASSERT(parse_fault_plan(to_string(drawn)).value() == drawn);
}

TEST(FaultGenerator, ShrinksTowardOneFaultEachCandidateValidAndMilder) {
  const rc::Gen<FaultPlan> plans = fault_plan_generator(8, {FaultKind::Drop, FaultKind::Corrupt, FaultKind::Delay});
  int three = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const rc::Shrinkable<FaultPlan> drawn = plans(rc::Random(seed), 50);
    three += drawn.value().faults.size() == 3;
    // Every candidate is valid and no bigger.
    auto shrinks = drawn.shrinks();
    while (auto next = shrinks.next()) {
      ASSERT_TRUE(validate(next->value(), 8).ok()) << to_string(next->value());
      ASSERT_LE(next->value().faults.size(), drawn.value().faults.size());
    }
    // A failure that needs any fault at all shrinks to one fault.
    const auto any_fault = [](const FaultPlan& p) { return !p.faults.empty(); };
    EXPECT_EQ(rc::shrinkable::findLocalMin(drawn, any_fault).first.faults.size(), 1u) << to_string(drawn.value());
  }
  EXPECT_GT(three, 0) << "some draws have three faults";
  // A failure that needs a corruption keeps one, made milder: a single bit, once.
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const rc::Shrinkable<FaultPlan> drawn = fault_plan_generator(4, {FaultKind::Corrupt})(rc::Random(seed), 50);
    const auto corrupts = [](const FaultPlan& p) {
      return std::any_of(p.faults.begin(), p.faults.end(), [](const Fault& f) { return f.kind == FaultKind::Corrupt; });
    };
    const FaultPlan least = rc::shrinkable::findLocalMin(drawn, corrupts).first;
    ASSERT_EQ(least.faults.size(), 1u);
    EXPECT_EQ(least.faults[0].bits, 1) << to_string(least);
    EXPECT_EQ(least.faults[0].trigger.times, 1u) << to_string(least);
  }
}

TEST(FaultGenerator, TheSameRandomDrawsTheSamePlanAndFitKeepsPlansValid) {
  const rc::Gen<FaultPlan> plans = fault_plan_generator(16, {});
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const FaultPlan a = plans(rc::Random(seed), 30).value();
    EXPECT_EQ(a, plans(rc::Random(seed), 30).value());
    for (int n : {1, 2, 3, 5}) EXPECT_TRUE(validate(fit(a, n), n).ok()) << to_string(a) << " on " << n;
  }
  EXPECT_EQ(to_string(fit(plan("drop:link=5->2;link-down:link=3->1;kill:rank=7"), 3)),
            "drop:link=2->0;link-down:link=0->1;kill:rank=1");
  EXPECT_EQ(to_string(fit(plan("drop:link=5->2;link-down:link=3->1"), 1)), "drop");
}

TEST(FaultGenerator, TransientFaultsHealAndTheRestDoNot) {
  EXPECT_TRUE(transient(plan("drop:link=0->1:times=1")));
  EXPECT_TRUE(transient(plan("corrupt:p=0.1")));
  EXPECT_TRUE(transient(plan("duplicate:rank=1:times=2;reorder:p=0.5")));
  EXPECT_TRUE(transient(plan("delay:rank=1:ms=5;straggler:rank=2:factor=4;link-flap:link=0->1:period=2")));
  EXPECT_TRUE(transient(FaultPlan{}));
  EXPECT_FALSE(transient(plan("drop:link=0->1")));
  EXPECT_FALSE(transient(plan("corrupt:rank=1:after=3")));
  EXPECT_FALSE(transient(plan("link-down:link=1->2")));
  EXPECT_FALSE(transient(plan("stop:rank=1")));
  EXPECT_FALSE(transient(plan("delay:ms=1;kill:rank=0:at=0.001")));
}

TEST(FaultChoice, ParsesRandomSwarmsAndPlans) {
  const FaultChoice drawn = parse_fault_choice("random", 7).value();
  EXPECT_TRUE(drawn.random);
  EXPECT_EQ(swarm_for_case(drawn, 7, 0), draw_swarm(7));
  EXPECT_EQ(swarm_for_case(drawn, 7, kSwarmBatch - 1), draw_swarm(7)) << "one swarm per batch";
  EXPECT_EQ(describe(drawn, 7), "random, a swarm per 16 cases (from seed 7)");
  bool differ = false;
  for (std::uint64_t seed = 0; seed < 8; ++seed) differ |= draw_swarm(seed) != draw_swarm(seed + 1);
  EXPECT_TRUE(differ) << "the swarm depends on the seed";
  const FaultChoice given = parse_fault_choice("random:drop,corrupt", 7).value();
  EXPECT_EQ(describe(given, 7), "random, swarm drop, corrupt (given)");
  EXPECT_EQ(to_string(parse_fault_choice("drop:link=0->1:times=1", 7).value().plan), "drop:link=0->1:times=1");
  EXPECT_FALSE(parse_fault_choice("none", 7).value().any());
  EXPECT_NE(parse_fault_choice("random:flood", 7).error().text().find("unknown fault kind 'flood'"), std::string::npos);
}

// ---- small backends, broken in one way each ----

// ring@sim's correct results, bent by `bend` (run under faults? its result) into a broken backend.
class FakeBackend final : public testing::Forwarding {
 public:
  using Bend = std::function<void(const RunOptions&, RepeatedRun&)>;
  FakeBackend(std::string name, Bend bend, bool reliable = false)
      : Forwarding(std::move(make_backends("ring@sim").value().front())), name_(std::move(name)),
        bend_(std::move(bend)), reliable_(reliable) {}

  std::string name() const override { return name_; }
  Capabilities capabilities() const override {
    Capabilities c = Forwarding::capabilities();
    c.hook = true;
    c.reliable = reliable_;
    return c;
  }
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    RunOptions clean = options;
    clean.fault_plan.clear();
    RepeatedRun run = Forwarding::run(c, clean);
    bend_(options, run);
    return run;
  }

 private:
  std::string name_;
  Bend bend_;
  bool reliable_;
};

bool faulty(const RunOptions& options) { return !options.fault_plan.empty() && !options.without_faults; }

void flip_a_bit(RepeatedRun& run) {
  for (auto& call : run.calls) {
    for (RankResult& rank : call) {
      if (!rank.output.empty()) {
        rank.output[0] ^= std::byte{1};
        return;
      }
    }
  }
}

void detected(RepeatedRun& run, const std::string& why) {
  run.outcome = Outcome::Detected;
  run.error = why;
  run.calls.clear();
}

// Under faults: detected, as a good protocol without retransmission would.
FakeBackend::Bend detects_faults() {
  return [](const RunOptions& options, RepeatedRun& run) {
    if (faulty(options)) detected(run, "rank 1: checksum mismatch");
  };
}
FakeBackend::Bend wrong_under_faults() {
  return [](const RunOptions& options, RepeatedRun& run) {
    if (faulty(options)) flip_a_bit(run);
  };
}
FakeBackend::Bend detects_on_clean_runs() {
  return [](const RunOptions&, RepeatedRun& run) { detected(run, "rank 0: timeout"); };
}
FakeBackend::Bend hangs_under_faults() {
  return [](const RunOptions& options, RepeatedRun& run) {
    if (!faulty(options)) return;
    run.outcome = Outcome::Hang;
    run.error = "rank 0 step 1 (recv from rank 1) was still waiting at the deadline";
    run.calls.clear();
  };
}
// Detected under faults, and every run after the first such one too: state left broken.
FakeBackend::Bend stays_broken() {
  auto broken = std::make_shared<bool>(false);
  return [broken](const RunOptions& options, RepeatedRun& run) {
    if (faulty(options)) *broken = true;
    if (*broken) detected(run, "rank 2: peer connection closed");
  };
}

const Case kCase = parse_case("allreduce/i32/sum/n=12/ranks=3").value();

PropertyContext under(std::string_view text) {
  PropertyContext context{11};
  context.fault_plan = text;
  context.transient = transient(plan(text));
  return context;
}

PropertyResult judge(Backend& backend, std::string_view property, const PropertyContext& context) {
  const RepeatedRun base = backend.run(kCase, context.run_options(context.schedule_seed));
  return find_property(property)->check(kCase, backend, base, context);
}

TEST(Outcomes, ClassifyTurnsAWrongSuccessIntoCorrupt) {
  FakeBackend good("good", detects_faults()), wrong("wrong", wrong_under_faults());
  EXPECT_EQ(classify(kCase, good.run(kCase, RunOptions{1})), Outcome::Ok);
  RunOptions faults{1};
  faults.fault_plan = "drop:times=1";
  EXPECT_EQ(classify(kCase, good.run(kCase, faults)), Outcome::Detected);
  EXPECT_EQ(classify(kCase, wrong.run(kCase, faults)), Outcome::Corrupt);
  EXPECT_EQ(classify(kCase, wrong.run(kCase, RunOptions{1})), Outcome::Ok);
}

TEST(OutcomeProperties, SafetyFailsOnAWrongResultReportedAsSuccess) {
  FakeBackend good("good", detects_faults()), wrong("wrong", wrong_under_faults());
  EXPECT_TRUE(judge(good, "safety", under("corrupt:times=1")).ok);
  const PropertyResult broken = judge(wrong, "safety", under("corrupt:times=1"));
  EXPECT_FALSE(broken.ok);
  EXPECT_NE(broken.detail.find("corrupt: the run reported success with a wrong result"), std::string::npos)
      << broken.detail;
  EXPECT_TRUE(judge(wrong, "safety", PropertyContext{11}).skipped) << "clean runs are the oracle's";
}

TEST(OutcomeProperties, LivenessFailsOnHangsAndOnFalseAlarms) {
  FakeBackend good("good", detects_faults()), alarmist("alarmist", detects_on_clean_runs()),
      hangs("hangs", hangs_under_faults());
  EXPECT_TRUE(judge(good, "liveness", PropertyContext{11}).ok);
  EXPECT_TRUE(judge(good, "liveness", under("kill:rank=1")).ok) << "detected under faults is a pass";
  const PropertyResult alarm = judge(alarmist, "liveness", PropertyContext{11});
  EXPECT_FALSE(alarm.ok);
  EXPECT_NE(alarm.detail.find("detected on a clean run (a false alarm)"), std::string::npos) << alarm.detail;
  const PropertyResult hang = judge(hangs, "liveness", under("drop:link=1->0:times=1"));
  EXPECT_FALSE(hang.ok);
  EXPECT_NE(hang.detail.find("hang: rank 0 step 1"), std::string::npos) << hang.detail;
}

TEST(OutcomeProperties, RecoveryFailsWhenABackendStaysBrokenAfterDetecting) {
  FakeBackend good("good", detects_faults()), broken("broken", stays_broken());
  EXPECT_TRUE(judge(good, "recovery", PropertyContext{11}).skipped) << "nothing to recover from";
  EXPECT_TRUE(judge(good, "recovery", under("drop:times=1")).ok);
  const PropertyResult stuck = judge(broken, "recovery", under("drop:times=1"));
  EXPECT_FALSE(stuck.ok);
  EXPECT_NE(stuck.detail.find("after detected, the run without faults ended detected"), std::string::npos)
      << stuck.detail;
  FakeBackend hangs("hangs", hangs_under_faults());
  EXPECT_TRUE(judge(hangs, "recovery", under("drop:times=1")).ok) << "a hang, then a clean run that is right";
}

TEST(OutcomeProperties, ReliabilityFailsWhenAReliableBackendDetectsTransientFaults) {
  FakeBackend claims("claims-reliable", detects_faults(), true), plain("plain", detects_faults());
  FakeBackend good(
      "good", [](const RunOptions&, RepeatedRun&) {}, true);
  EXPECT_TRUE(judge(plain, "reliability", under("drop:times=1")).skipped);
  EXPECT_TRUE(judge(claims, "reliability", under("link-down:link=0->1")).skipped) << "not transient";
  EXPECT_TRUE(judge(good, "reliability", under("drop:times=1")).ok);
  const PropertyResult broken = judge(claims, "reliability", under("drop:times=1"));
  EXPECT_FALSE(broken.ok);
  EXPECT_NE(broken.detail.find("reliable, yet under transient faults (drop:times=1) the run ended detected"),
            std::string::npos)
      << broken.detail;
  FakeBackend wrong("wrong-reliable", wrong_under_faults(), true);
  EXPECT_FALSE(judge(wrong, "reliability", under("corrupt:times=1")).ok);
}

TEST(OutcomeProperties, RerunningPropertiesSkipWhenTheirExtraRunIsDetectedUnderFaults) {
  // The base run is fine; every later run under the faults is detected.
  auto first = std::make_shared<bool>(true);
  FakeBackend flaky("flaky", [first](const RunOptions& options, RepeatedRun& run) {
    if (faulty(options) && !*first) detected(run, "rank 1: sequence gap");
    *first = false;
  });
  for (std::string_view property : {"determinism", "in-place", "composition", "repeat"}) {
    *first = true;
    const PropertyResult result = judge(flaky, property, under("drop:p=0.1"));
    EXPECT_TRUE(result.ok && result.skipped) << property << ": " << result.detail;
    EXPECT_NE(result.detail.find("ended detected under the faults"), std::string::npos) << result.detail;
  }
  // Clean, the same ending is a failure; and a wrong extra result fails under faults too.
  *first = true;
  FakeBackend alarmist("alarmist", [first](const RunOptions&, RepeatedRun& run) {
    if (!*first) detected(run, "rank 1: sequence gap");
    *first = false;
  });
  EXPECT_FALSE(judge(alarmist, "determinism", PropertyContext{11}).ok);
  auto second = std::make_shared<bool>(true);
  FakeBackend wrong_later("wrong-later", [second](const RunOptions& options, RepeatedRun& run) {
    if (faulty(options) && !*second) flip_a_bit(run);
    *second = false;
  });
  EXPECT_FALSE(judge(wrong_later, "determinism", under("corrupt:p=0.1")).ok);
}

// ---- through the check loop ----

CheckOptions random_faults(const std::string& swarm, std::size_t cases) {
  CheckOptions o;
  o.seed = 3;
  o.cases = cases;
  o.time_budget = 30;
  o.limits.max_ranks = 8;
  o.limits.max_count = 256;
  o.faults = "random:" + swarm;
  return o;
}

TEST(CheckUnderFaults, SafetyFailureCarriesItsShrunkPlanInTheReplayLine) {
  std::vector<std::unique_ptr<Backend>> list;
  list.push_back(std::make_unique<FakeBackend>("wrong", wrong_under_faults()));
  CheckOptions o = random_faults("drop,corrupt", 20);
  o.properties = {"safety"};
  const CheckReport report = run_check(o, list, nullptr);
  ASSERT_EQ(report.failures.size(), 1u);
  const Failure& f = report.failures[0];
  EXPECT_EQ(f.property, "safety");
  ASSERT_EQ(f.plan.faults.size(), 1u) << "any fault will do, so one is left: " << to_string(f.plan);
  EXPECT_TRUE(validate(f.plan, f.shrunk.nranks).ok());
  EXPECT_NE(f.replay.find(" --faults '" + to_string(f.plan) + "'"), std::string::npos) << f.replay;
  EXPECT_EQ(f.replay.find("random"), std::string::npos) << f.replay;
  std::ostringstream text, json;
  print_report(report, text);
  write_json(report, json);
  EXPECT_NE(text.str().find("outcomes under faults random, swarm drop, corrupt"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("runs  ok  detected  hang  corrupt  crash"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("under faults " + to_string(f.plan)), std::string::npos) << text.str();
  const nlohmann::json parsed = nlohmann::json::parse(json.str());
  EXPECT_EQ(parsed["faults"], report.faults);
  EXPECT_EQ(parsed["failures"][0]["faults"], to_string(f.plan));
  ASSERT_EQ(parsed["outcomes"].size(), report.outcomes.size());
  std::size_t corrupt_in_json = 0;
  for (const nlohmann::json& row : parsed["outcomes"]) {
    EXPECT_EQ(row["backend"], "wrong");
    EXPECT_EQ(row["runs"], row["ok"].get<std::size_t>() + row["detected"].get<std::size_t>() +
                               row["hang"].get<std::size_t>() + row["corrupt"].get<std::size_t>() +
                               row["crash"].get<std::size_t>());
    corrupt_in_json += row["corrupt"].get<std::size_t>();
  }
  std::size_t corrupt = 0;
  for (const auto& [key, counts] : report.outcomes) corrupt += counts.runs[static_cast<std::size_t>(Outcome::Corrupt)];
  EXPECT_GT(corrupt, 0u);
  EXPECT_EQ(corrupt_in_json, corrupt);
}

TEST(CheckUnderFaults, GoodBackendsPassAndTheMatrixCountsEveryKindOfEachPlan) {
  std::vector<std::unique_ptr<Backend>> list;
  list.push_back(std::make_unique<FakeBackend>("detects", detects_faults()));
  const CheckReport report = run_check(random_faults("drop,delay,kill", 30), list, nullptr);
  for (const Failure& f : report.failures) ADD_FAILURE() << f.property << ": " << f.detail << "\n" << f.replay;
  std::size_t runs = 0;
  for (const auto& [key, counts] : report.outcomes) {
    EXPECT_TRUE(key.second == "drop" || key.second == "delay" || key.second == "kill") << key.second;
    EXPECT_EQ(counts.runs[static_cast<std::size_t>(Outcome::Detected)], counts.total()) << "every faulty run detected";
    runs += counts.total();
  }
  EXPECT_GE(runs, 30u) << "a run counts under each kind of its plan";
}

TEST(CheckUnderFaults, EachBrokenBackendIsCaughtByItsProperty) {
  struct Expectation {
    std::string property;
    FakeBackend::Bend bend;
    bool reliable;
  };
  const std::vector<Expectation> expectations = {{"liveness", hangs_under_faults(), false},
                                                 {"recovery", stays_broken(), false},
                                                 {"reliability", detects_faults(), true}};
  for (const Expectation& e : expectations) {
    std::vector<std::unique_ptr<Backend>> list;
    list.push_back(std::make_unique<FakeBackend>("broken-" + e.property, e.bend, e.reliable));
    CheckOptions o = random_faults("drop,delay", 20);
    o.stop_at_first_failure = true;
    const CheckReport report = run_check(o, list, nullptr);
    bool caught = false;
    for (const Failure& f : report.failures) caught |= f.property == e.property;
    EXPECT_TRUE(caught) << e.property;
  }
  // Without faults, a backend that cries wolf fails liveness and the report has no matrix.
  std::vector<std::unique_ptr<Backend>> list;
  list.push_back(std::make_unique<FakeBackend>("alarmist", detects_on_clean_runs()));
  CheckOptions clean = random_faults("drop", 5);
  clean.faults.clear();
  const CheckReport report = run_check(clean, list, nullptr);
  ASSERT_FALSE(report.failures.empty());
  EXPECT_EQ(report.failures[0].property, "liveness");
  std::ostringstream text;
  print_report(report, text);
  EXPECT_EQ(text.str().find("outcomes under faults"), std::string::npos);
  EXPECT_EQ(text.str().find("under faults"), std::string::npos);
}

// ---- end to end on sim, whose executor checks, times out and retransmits ----

std::vector<std::unique_ptr<Backend>> faulty_backends(const std::string& spec) {
  auto made = make_backends(spec);
  if (!made) return {};
  std::vector<std::unique_ptr<Backend>> list;
  for (auto& backend : made.value()) list.push_back(std::move(with_faults(std::move(backend), FaultPlan{}).value()));
  return list;
}

std::size_t count(const CheckReport& report, Outcome outcome) {
  std::size_t n = 0;
  for (const auto& [key, counts] : report.outcomes) n += counts.runs[static_cast<std::size_t>(outcome)];
  return n;
}

TEST(SimUnderRandomFaults, OurExecutorsNeverCorruptOrHang) {
  auto list = faulty_backends("all@sim");
  ASSERT_FALSE(list.empty());
  for (std::uint64_t seed : {5, 6}) {
    CheckOptions o = random_faults("drop,delay,corrupt,duplicate,reorder,link-down,link-flap,straggler,stop,kill", 60);
    o.seed = seed;
    o.limits.max_ranks = 16;
    o.limits.max_count = 4096;
    const CheckReport report = run_check(o, list, nullptr);
    for (const Failure& f : report.failures)
      ADD_FAILURE() << f.backend << " " << f.property << ": " << f.detail << "\n" << f.replay;
    EXPECT_EQ(count(report, Outcome::Corrupt), 0u);
    EXPECT_EQ(count(report, Outcome::Hang), 0u);
    EXPECT_GT(count(report, Outcome::Detected), 50u) << "the faults bite";
  }
}

TEST(SimUnderRandomFaults, TheMutantsWithoutChecksumsOrTimeoutsAreCaught) {
  auto no_checksum = faulty_backends("mutant:no-checksum@sim");
  auto no_timeout = faulty_backends("mutant:no-timeout@sim");
  if (no_checksum.empty() || no_timeout.empty()) GTEST_SKIP() << "the sim link protocol's mutants are not built";
  CheckOptions corrupting = random_faults("corrupt", 30);
  corrupting.properties = {"safety"};
  const CheckReport unchecked = run_check(corrupting, no_checksum, nullptr);
  ASSERT_EQ(unchecked.failures.size(), 1u);
  EXPECT_EQ(unchecked.failures[0].plan.faults.size(), 1u) << to_string(unchecked.failures[0].plan);
  EXPECT_GT(count(unchecked, Outcome::Corrupt), 0u);
  CheckOptions dropping = random_faults("drop", 30);
  dropping.properties = {"liveness"};
  const CheckReport waiting = run_check(dropping, no_timeout, nullptr);
  ASSERT_EQ(waiting.failures.size(), 1u);
  EXPECT_NE(waiting.failures[0].detail.find("hang: "), std::string::npos) << waiting.failures[0].detail;
}

// ---- the decorator ----

TEST(FaultyBackend, TakesEachRunsPlanAndRunsCleanWhenAsked) {
  auto made = with_faults(std::move(make_backends("ring@sim").value().front()), plan("corrupt:link=0->1"));
  ASSERT_TRUE(made.ok());
  Backend& backend = **made;
  EXPECT_NE(classify(kCase, backend.run(kCase, RunOptions{1})), Outcome::Ok) << "the fixed plan bites";
  RunOptions clean{1};
  clean.without_faults = true;
  EXPECT_EQ(classify(kCase, backend.run(kCase, clean)), Outcome::Ok);
  RunOptions delayed{1};
  delayed.fault_plan = "delay:rank=1:ms=1";
  EXPECT_EQ(classify(kCase, backend.run(kCase, delayed)), Outcome::Ok) << "the run's own plan replaces the fixed one";
  RunOptions bad{1};
  bad.fault_plan = "drop:link=1";
  EXPECT_EQ(backend.run(kCase, bad).outcome, Outcome::Crash);
}

TEST(FaultyBackend, RefusesBackendsWithoutAHookAndSaysWhichCan) {
  class NoHook final : public Backend {
   public:
    std::string name() const override { return "nohook"; }
    Capabilities capabilities() const override { return Capabilities{}; }
    RepeatedRun run(const Case&, const RunOptions&) override { return {}; }
  };
  auto refused = with_faults(std::make_unique<NoHook>(), plan("drop"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().text().find("nohook cannot take faults yet"), std::string::npos);
  EXPECT_NE(refused.error().text().find("every @sim backend and launched @proc worlds"), std::string::npos);
  EXPECT_NE(refused.error().text().find("socket interposer"), std::string::npos);
}

}  // namespace
}  // namespace collcheck
