// The check loop end to end: every mutant is caught by the property meant to catch it and
// shrunk small; good backends pass; the same seed draws the same cases; reports are well formed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "faults/plan.h"
#include "harness/check.h"
#include "harness/faulty_backend.h"
#include "harness/report.h"
#include "impls/mutants/mutants.h"
#include "impls/registry.h"
#include "properties/property.h"
#include "reference/inputs.h"
#include "tests/support/broken_backend.h"

namespace collcheck {
namespace {

// The backends of `spec`, under the fault plan `faults` when one is given.
std::vector<std::unique_ptr<Backend>> backends(const std::string& spec, const std::string& faults = "") {
  auto made = make_backends(spec);
  EXPECT_TRUE(made.ok()) << made.error().text();
  if (!made) return {};
  std::vector<std::unique_ptr<Backend>> list = std::move(made).value();
  if (faults.empty()) return list;
  const Result<FaultPlan> plan = parse_fault_plan(faults);
  EXPECT_TRUE(plan.ok()) << plan.error().text();
  for (auto& backend : list) {
    auto faulty = with_faults(std::move(backend), plan.ok() ? *plan : FaultPlan{});
    EXPECT_TRUE(faulty.ok()) << faulty.error().text();
    backend = std::move(faulty).value();
  }
  return list;
}

CheckOptions options(std::uint64_t seed, double budget, std::size_t cases = 0) {
  CheckOptions o;
  o.seed = seed;
  o.time_budget = budget;
  o.cases = cases;
  o.limits.max_ranks = 16;
  o.limits.max_count = 4096;
  return o;
}

// Bugs that cannot show on a small case: none of ours so far.
bool shrinks_small(const Failure& f) { return f.shrunk.nranks <= 8 && input_elements(f.shrunk) <= std::size_t{64} * 8; }

TEST(Mutants, EveryMutantIsCaughtByTheRightPropertyAndShrunk) {
  ASSERT_GE(all_mutants().size(), 17u);
  std::string table = "mutant                     caught  by              cases  seconds  shrunk case\n";
  int missed = 0;
  for (const Mutant& mutant : all_mutants()) {
    auto list = backends(mutant.variant.name + "@sim", mutant.faults);
    CheckOptions o = options(1, 20);
    o.faults = mutant.faults;
    o.stop_at_first_failure = true;
    const auto start = std::chrono::steady_clock::now();
    const CheckReport report = run_check(o, list, nullptr);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Failure* right = nullptr;
    for (const Failure& f : report.failures) {
      for (std::string_view property : mutant.caught_by) {
        if (f.property == property && right == nullptr) right = &f;
      }
    }
    char line[512];
    std::snprintf(line, sizeof line, "%-26s %-7s %-15s %-6zu %-8.1f %s\n", mutant.variant.name.c_str(),
                  right ? "yes" : "NO", right ? right->property.c_str() : "-", right ? right->cases_until : 0, seconds,
                  right ? to_string(right->shrunk).c_str() : "-");
    table += line;
    if (right == nullptr) {
      ++missed;
      ADD_FAILURE() << mutant.variant.name << " was not caught by " << mutant.caught_by.front();
      continue;
    }
    EXPECT_TRUE(shrinks_small(*right)) << mutant.variant.name << " shrunk only to " << to_string(right->shrunk);
  }
  std::printf("%s", table.c_str());
  EXPECT_EQ(missed, 0);
}

TEST(Check, GoodBackendsPassEveryProperty) {
  auto list = backends("all@sim");
  const CheckReport report = run_check(options(2, 30, 40), list, nullptr);
  for (const Failure& f : report.failures)
    ADD_FAILURE() << f.backend << " " << f.property << ": " << f.detail << "\n" << f.replay;
  EXPECT_GT(report.total().passed, 200u);
}

TEST(Check, TheSameSeedDrawsTheSameCases) {
  auto first = backends("ring@sim");
  auto second = backends("ring@sim");
  const CheckReport a = run_check(options(99, 30, 25), first, nullptr);
  const CheckReport b = run_check(options(99, 30, 25), second, nullptr);
  ASSERT_EQ(a.table.size(), b.table.size());
  for (const auto& [key, tally] : a.table) EXPECT_EQ(tally.cases, b.table.at(key).cases);
}

TEST(Check, ReportsAreWellFormedAndCarryTheFailures) {
  auto list = backends("mutant:drop-remainder@sim");
  CheckOptions o = options(3, 20);
  o.stop_at_first_failure = true;
  const CheckReport report = run_check(o, list, nullptr);
  ASSERT_FALSE(report.failures.empty());
  // The time to the failure, before shrinking: within the run, and not nothing.
  EXPECT_GT(report.failures.front().seconds_until, 0);
  EXPECT_LE(report.failures.front().seconds_until, report.seconds);
  std::ostringstream json, junit, text;
  write_json(report, json);
  write_junit(report, junit);
  print_report(report, text);
  const nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(json.str());
  std::vector<std::string> keys;
  for (const auto& [key, value] : parsed.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"seed", "seconds", "backends", "summary", "table", "failures"}));
  EXPECT_EQ(parsed["seed"], 3);
  EXPECT_EQ(parsed["backends"], nlohmann::ordered_json::array({"mutant:drop-remainder@sim"}));
  EXPECT_EQ(parsed["summary"]["cases"], report.total().cases);
  EXPECT_EQ(parsed["summary"]["failed"], report.total().failed);
  EXPECT_EQ(parsed["table"].size(), report.table.size());
  EXPECT_EQ(parsed["table"][0]["collective"], std::string(name(report.table.begin()->first.second)));
  ASSERT_EQ(parsed["failures"].size(), report.failures.size());
  const nlohmann::ordered_json& failure = parsed["failures"][0];
  EXPECT_EQ(failure["property"], "oracle");
  EXPECT_EQ(failure["case"], to_string(report.failures[0].shrunk));
  EXPECT_EQ(failure["schedule_seed"], report.failures[0].schedule_seed);
  EXPECT_EQ(failure["detail"], report.failures[0].detail);
  EXPECT_FALSE(failure.contains("faults"));
  const std::string replay = failure["replay"];
  EXPECT_TRUE(replay.starts_with("collcheck replay --backend 'mutant:drop-remainder@sim'")) << replay;
  EXPECT_NE(junit.str().find("<testsuites name=\"collcheck\""), std::string::npos);
  EXPECT_NE(junit.str().find("<failure message=\"oracle failed"), std::string::npos);
  EXPECT_NE(text.str().find("FAILED oracle on mutant:drop-remainder@sim"), std::string::npos);
  EXPECT_NE(text.str().find("replay: collcheck replay"), std::string::npos);
}

// Names and details are written as given, quotes, backslashes and control characters included;
// bytes that are not UTF-8 become U+FFFD rather than failing the report.
TEST(Check, JsonReportKeepsEveryCharacterOfItsStrings) {
  CheckReport report;
  report.seed = 7;
  report.seconds = 1.26;
  report.backends = {"odd \"name\" \\ with\ttab", std::string("latin-1 caf\xe9")};
  Failure failure;
  failure.backend = report.backends[0];
  failure.property = "oracle";
  failure.detail = "line 1\nline \"2\"\x01 {not: json}";
  failure.replay = "collcheck replay --backend 'x' 'a/b'";
  report.failures.push_back(failure);
  std::ostringstream json;
  write_json(report, json);
  const nlohmann::json parsed = nlohmann::json::parse(json.str());
  EXPECT_EQ(parsed["seconds"], 1.3);  // tenths, as the text report prints them
  EXPECT_EQ(parsed["backends"][0], report.backends[0]);
  EXPECT_EQ(parsed["backends"][1], "latin-1 caf\xef\xbf\xbd");
  EXPECT_EQ(parsed["failures"][0]["backend"], failure.backend);
  EXPECT_EQ(parsed["failures"][0]["detail"], failure.detail);
  EXPECT_EQ(parsed["failures"][0]["replay"], failure.replay);
  EXPECT_EQ(parsed["failures"][0]["collective"], "allreduce");
}

TEST(BackendGrammar, NamesEveryPartThatIsWrong) {
  EXPECT_EQ(make_backends("all@sim").value().size(), 9u);
  EXPECT_EQ(make_backends("ring@sim:chunk=4096,channels=2").value().front()->name(), "ring@sim:chunk=4096,channels=2");
  EXPECT_EQ(make_backends("mutant:drop-remainder@sim").value().size(), 1u);
  auto message = [](std::string_view spec) { return make_backends(spec).error().text(); };
  EXPECT_NE(message("ring").find("must be ALGORITHM@TRANSPORT"), std::string::npos);
  EXPECT_NE(message("ring@gpu").find("transport 'gpu': must be sim"), std::string::npos);
  EXPECT_NE(message("wheel@sim").find("'wheel' is not an algorithm: algorithms are ring, "), std::string::npos);
  EXPECT_NE(message("ring@sim:chunk=x").find("chunk=x: must be an integer, 0..68719476736 (elements)"),
            std::string::npos);
  EXPECT_NE(message("ring@sim:channels=99").find("channels=99: must be 1..64"), std::string::npos);
  EXPECT_NE(message("ring@sim:speed=2").find("unknown option 'speed'"), std::string::npos);
  EXPECT_NE(message("mutant:nope@sim").find("no such mutant: mutants are mutant:"), std::string::npos);
  EXPECT_NE(message("ring\x01@sim").find("'ring\\x01@sim'"), std::string::npos) << message("ring\x01@sim");
  EXPECT_EQ(make_backends("all@cuda-host:chunk=3").value().front()->name(), "ring@cuda-host:chunk=3");
  EXPECT_EQ(make_backends("ring@cuda-host:reliable=on").value().front()->capabilities().reliable, true);
}

// Every knob has a range, checked when the spec is parsed: a value beyond it is a usage error that
// names the knob and the range, never a schedule that cannot be built.
TEST(BackendGrammar, EveryKnobHasARange) {
  auto message = [](std::string_view spec) {
    Result<std::vector<std::unique_ptr<Backend>>> made = make_backends(spec);
    return made ? std::string("(accepted)") : made.error().text();
  };
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"ring@sim:chunk=18446744073709551615", "chunk=18446744073709551615: must be 0..68719476736 (elements)"},
      {"ring@sim:chunk=68719476737", "chunk=68719476737: must be 0..68719476736 (elements)"},
      {"ring@sim:channels=0", "channels=0: must be 1..64"},
      {"ring@sim:channels=65", "channels=65: must be 1..64"},
      {"innet@sim:fan-in=1", "fan-in=1: must be 2..64"},
      {"innet@sim:fan_in=65", "fan_in=65: must be 2..64"},
      {"ring@sim:timeout=0", "timeout=0: must be 1..3600000 (milliseconds)"},
      {"ring@sim:timeout=3600001", "timeout=3600001: must be 1..3600000 (milliseconds)"},
      {"ring@sim:retries=101", "retries=101: must be 0..100"},
      {"ring@sim:reliable=yes", "reliable=yes: must be on or off"},
      {"ring@sim:chunk=+4", "chunk=+4: must be an integer, 0..68719476736 (elements)"},
      {"ring@sim:chunk=0x10", "chunk=0x10: must be an integer"},
      {"ring@proc:chunk=18446744073709551615", "chunk=18446744073709551615: must be 0..68719476736 (elements)"},
  };
  for (const auto& [spec, words] : cases) {
    EXPECT_NE(message(spec).find(words), std::string::npos) << spec << ": " << message(spec);
    EXPECT_EQ(message(spec).rfind("--backend '", 0), 0u) << message(spec);
  }
  EXPECT_EQ(message("ring@sim:chunk=68719476736,channels=64,timeout=3600000,retries=100"), "(accepted)");
}

// Runs one property on one case of a backend, as the check loop does.
PropertyResult run_one(const std::string& spec, const std::string& property, const Case& c) {
  auto list = backends(spec);
  const RepeatedRun base = list.front()->run(c, RunOptions{1, 1});
  return find_property(property)->check(c, *list.front(), base, PropertyContext{1});
}

// A backend that, from its third run on, finds it cannot run here (as a launched backend does
// when mpirun cannot start ranks): its runs then end as crashes, which must not be verdicts.
class StopsRunningHere final : public testing::Forwarding {
 public:
  using Forwarding::Forwarding;
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    if (++runs_ < 3) return Forwarding::run(c, options);
    return RepeatedRun::ended(Outcome::Crash, "mpirun: no such option");
  }
  std::string cannot_run_here() const override { return runs_ >= 3 ? "mpirun: no such option" : ""; }

 private:
  int runs_ = 0;
};

TEST(Check, ABackendThatCannotRunHereIsReportedNotJudged) {
  std::vector<std::unique_ptr<Backend>> list = backends("ring@sim");
  ASSERT_EQ(list.size(), 1u);
  list.front() = std::make_unique<StopsRunningHere>(std::move(list.front()));
  const CheckReport report = run_check(options(1, 20, 50), list, nullptr);
  EXPECT_TRUE(report.failures.empty());
  ASSERT_EQ(report.cannot_run_here.size(), 1u);
  EXPECT_EQ(report.cannot_run_here.at("ring@sim"), "mpirun: no such option");
  EXPECT_LE(report.total().cases, 2u);  // the cases before it stopped, every property on each
  std::ostringstream text;
  print_report(report, text);
  EXPECT_NE(text.str().find("NOT RUN ring@sim: mpirun: no such option"), std::string::npos) << text.str();
}

// A backend that refuses, when they run, the cases whose count is odd (as NCCL refuses with
// ncclInvalidUsage a combination it does not run), and runs every other one right.
class RefusesOddCounts final : public testing::Forwarding {
 public:
  explicit RefusesOddCounts(std::unique_ptr<Backend> inner, bool and_even = false)
      : Forwarding(std::move(inner)), and_even_(and_even) {}
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    if (c.count % 2 == 0 && !and_even_) return Forwarding::run(c, options);
    RepeatedRun refused = RepeatedRun::ended(Outcome::Detected, "rank 0: an odd count is not taken");
    refused.refused = true;
    return refused;
  }

 private:
  bool and_even_;
};

TEST(Check, CasesABackendRefusesWhenTheyRunAreCountedApartNotJudged) {
  std::vector<std::unique_ptr<Backend>> list = backends("ring@sim");
  ASSERT_EQ(list.size(), 1u);
  list.front() = std::make_unique<RefusesOddCounts>(std::move(list.front()));
  CheckOptions o = options(3, 60, 60);
  o.properties = {"liveness", "oracle", "recovery"};
  const CheckReport report = run_check(o, list, nullptr);
  EXPECT_TRUE(report.failures.empty()) << report.failures.front().detail;  // a refusal is no false alarm
  ASSERT_EQ(report.refused.count("ring@sim"), 1u);
  const CheckReport::Refusals& refusals = report.refused.at("ring@sim");
  EXPECT_GT(refusals.cases, 0u);
  EXPECT_NE(refusals.first.find("an odd count is not taken"), std::string::npos) << refusals.first;
  EXPECT_EQ(report.total().cases + refusals.cases, 60u);  // every case drawn is one or the other
  EXPECT_GT(report.total().passed, 0u);
  std::ostringstream text, json;
  print_report(report, text);
  EXPECT_NE(text.str().find("REFUSED by ring@sim: " + std::to_string(refusals.cases) + " case"), std::string::npos)
      << text.str();
  write_json(report, json);
  const nlohmann::json parsed = nlohmann::json::parse(json.str());
  EXPECT_EQ(parsed.at("refused").at(0).at("cases").get<std::size_t>(), refusals.cases);
  EXPECT_TRUE(refused_every_case(report).empty());
  // One that refuses every case tested nothing, and is named for it (check exits 77).
  std::vector<std::unique_ptr<Backend>> refusing = backends("ring@sim");
  refusing.front() = std::make_unique<RefusesOddCounts>(std::move(refusing.front()), true);
  EXPECT_EQ(refused_every_case(run_check(o, refusing, nullptr)), std::vector<std::string>{"ring@sim"});
  // Under faults, a refused run is no outcome to count either.
  std::vector<std::unique_ptr<Backend>> faulty = backends("ring@sim", "drop:p=0.5");
  ASSERT_EQ(faulty.size(), 1u);
  faulty.front() = std::make_unique<RefusesOddCounts>(std::move(faulty.front()));
  o.faults = "drop:p=0.5";
  const CheckReport under_faults = run_check(o, faulty, nullptr);
  std::size_t counted = 0;
  for (const auto& [key, counts] : under_faults.outcomes) counted += counts.total();
  EXPECT_EQ(counted + under_faults.refused.at("ring@sim").cases, 60u);
}

// Every property skips a refused run, naming the backend's reason; the same run not marked refused
// is a false alarm to liveness (so the skip is the refusal's doing).
TEST(Properties, EveryPropertySkipsARunTheBackendRefused) {
  std::vector<std::unique_ptr<Backend>> list = backends("ring@sim");
  ASSERT_EQ(list.size(), 1u);
  const Case c = parse_case("allreduce/f32/sum/n=7/ranks=4").value();
  RepeatedRun base = RepeatedRun::ended(Outcome::Detected, "NCCL refused the call (ncclInvalidUsage)");
  base.refused = true;
  for (const Property& property : all_properties()) {
    const PropertyResult result = property.check(c, *list.front(), base, PropertyContext{1});
    EXPECT_TRUE(result.ok && result.skipped) << property.name;
    EXPECT_NE(result.detail.find("refused the case (a precondition, not a finding): NCCL refused"), std::string::npos)
        << property.name << ": " << result.detail;
  }
  base.refused = false;
  EXPECT_FALSE(find_property("liveness")->check(c, *list.front(), base, PropertyContext{1}).ok);
}

// A simulated run whose messages outgrow the room the memory budget left them stops, refused (a
// precondition met late: too large for the machine, not a finding); a property whose own run is
// refused so skips with the reason instead of failing.
TEST(Properties, ARunRefusedForItsMessagesRoomIsSkippedNotFailed) {
  std::vector<std::unique_ptr<Backend>> list = backends("ring@sim");
  ASSERT_EQ(list.size(), 1u);
  Backend& backend = *list.front();
  const Case c = parse_case("allreduce/f32/sum/n=64/ranks=4").value();
  RunOptions roomy{1}, cramped{1};
  cramped.message_memory = 1;
  const RepeatedRun base = backend.run(c, roomy);
  ASSERT_EQ(base.outcome, Outcome::Ok) << base.error;
  const RepeatedRun stopped = backend.run(c, cramped);
  EXPECT_TRUE(stopped.refused);
  EXPECT_EQ(stopped.outcome, Outcome::Detected);
  EXPECT_NE(stopped.error.find("left to them"), std::string::npos) << stopped.error;
  PropertyContext context{1};
  context.message_memory = 1;
  for (const char* name : {"determinism", "repeat"}) {
    const PropertyResult result = find_property(name)->check(c, backend, base, context);
    EXPECT_TRUE(result.ok && result.skipped) << name << ": " << result.detail;
    EXPECT_NE(result.detail.find("refused one of the property's runs"), std::string::npos)
        << name << ": " << result.detail;
  }
  context.message_memory = 0;
  EXPECT_FALSE(find_property("determinism")->check(c, backend, base, context).skipped);
}

TEST(Properties, CompositionFailsWhenReduceScatterAndAllGatherDoNotComposeIntoAllReduce) {
  const Case c = parse_case("allreduce/i32/sum/n=12/ranks=3").value();
  EXPECT_TRUE(run_one("ring@sim", "composition", c).ok);
  const PropertyResult broken = run_one("mutant:gather-rotated@sim", "composition", c);
  EXPECT_FALSE(broken.ok);
  EXPECT_NE(broken.detail.find("reduce-scatter then all-gather is not the all-reduce"), std::string::npos)
      << broken.detail;
  EXPECT_TRUE(run_one("mutant:gather-rotated@sim", "oracle", c).ok) << "its all-reduce itself is right";
}

TEST(Properties, AllToAllTwiceGivesTheInputBack) {
  const Case c = parse_case("alltoall/f16/sum/n=5/ranks=4/values=special").value();
  EXPECT_TRUE(run_one("pairwise@sim", "composition", c).ok);
  EXPECT_TRUE(run_one("bruck@sim", "composition", c).ok);
}

// A backend right on the inputs it generates itself that ignores inputs given to it (a stale
// registered buffer in an adapter): the oracle cannot see it, all-to-all twice can.
class IgnoresGivenInputs final : public testing::Forwarding {
 public:
  using Forwarding::Forwarding;
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    RunOptions generated = options;
    generated.inputs = nullptr;
    return Forwarding::run(c, generated);
  }
};

TEST(Properties, CompositionFailsWhenTheSecondAllToAllIgnoresItsInputs) {
  // All-to-all-v's second run sends back with the count matrix transposed: 3 ranks whose counts
  // differ in each direction, a zero among them, so a wrong transposition would fail the right
  // backend too.
  for (const char* text : {"alltoall/i32/sum/n=4/ranks=3", "alltoallv/i32/sum/counts=1,4,0,2,3,5,0,6,1/ranks=3"}) {
    SCOPED_TRACE(text);
    const Case c = parse_case(text).value();
    EXPECT_TRUE(run_one("pairwise@sim", "composition", c).ok);
    IgnoresGivenInputs broken(std::move(backends("pairwise@sim").front()));
    const RepeatedRun base = broken.run(c, RunOptions{1, 1});
    EXPECT_TRUE(find_property("oracle")->check(c, broken, base, PropertyContext{1}).ok) << "one run alone is right";
    const PropertyResult composed = find_property("composition")->check(c, broken, base, PropertyContext{1});
    EXPECT_FALSE(composed.ok);
    EXPECT_NE(composed.detail.find("all-to-all twice does not give the input back"), std::string::npos)
        << composed.detail;
  }
}

TEST(Properties, RepeatFailsWhenLaterCallsReadStaleInputs) {
  const Case c = parse_case("allreduce/f32/sum/n=9/ranks=3").value();
  EXPECT_TRUE(run_one("ring@sim", "repeat", c).ok);
  EXPECT_TRUE(run_one("mutant:registered-once@sim", "oracle", c).ok) << "one call alone is right";
  const PropertyResult broken = run_one("mutant:registered-once@sim", "repeat", c);
  EXPECT_FALSE(broken.ok);
  EXPECT_NE(broken.detail.find("call 1: "), std::string::npos) << broken.detail;
}

TEST(Properties, EveryPropertyHasANameAndADocLine) {
  EXPECT_EQ(all_properties().size(), 11u);
  for (const Property& p : all_properties()) {
    EXPECT_FALSE(p.name.empty());
    EXPECT_GT(p.doc.size(), 20u) << p.name;
  }
  EXPECT_NE(find_property("oracle"), nullptr);
  EXPECT_EQ(find_property("nope"), nullptr);
}

}  // namespace
}  // namespace collcheck
