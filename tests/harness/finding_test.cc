// Finding power: every rank count of the range is drawn (composite ones included, ranges above
// 64 too), a backend broken only at some rank counts is caught and shrunk to the smallest of
// them, a bug at every count shrinks to 2 ranks, and two bugs behind one property are both reported.
#include <gtest/gtest.h>

#include <atomic>

#include <functional>
#include <set>

#include "harness/case_generator.h"
#include "harness/check.h"
#include "harness/failure_groups.h"
#include "harness/knob_generator.h"
#include "impls/registry.h"
#include "tests/support/broken_backend.h"

namespace collcheck {
namespace {

using testing::backend_of;
using testing::broken_options;
using testing::BrokenWhere;
using testing::Forwarding;

// The rank counts of `draws` cases drawn as check draws them (sizes ramping up to 100).
std::set<int> drawn_rank_counts(const Capabilities& capabilities, int low, int high, int draws) {
  CaseLimits limits;
  limits.min_ranks = low;
  limits.max_ranks = high;
  limits.max_count = 64;
  const rc::Gen<Case> cases = case_generator(capabilities, limits);
  rc::Random random(7);
  std::set<int> seen;
  for (int i = 0; i < draws; ++i) seen.insert(cases(random.split(), std::min(10 + 3 * i, 100)).value().nranks);
  return seen;
}

TEST(CaseGenerator, EveryRankCountOfTheRangeIsDrawn) {
  const Capabilities capabilities = backend_of("ring@sim")->capabilities();
  std::set<int> every;
  for (int n = 2; n <= 12; ++n) every.insert(n);
  EXPECT_EQ(drawn_rank_counts(capabilities, 2, 12, 600), every);
  const std::set<int> large = drawn_rank_counts(capabilities, 100, 200, 4000);
  EXPECT_EQ(large.size(), 101u) << "drawn " << large.size() << " of the 101 counts in 100..200";
  EXPECT_EQ(*large.begin(), 100);
  EXPECT_EQ(*large.rbegin(), 200);
}

// Only the counts a precondition admits are drawn, every one of them (Gloo's bcube takes
// multiples of its base; modelled here so that the test needs no Gloo).
TEST(CaseGenerator, OnlyAdmittedRankCountsAreDrawnAndEachOfThem) {
  Capabilities capabilities = backend_of("ring@sim")->capabilities();
  capabilities.precondition = [](const Case& c) { return c.nranks % 3 == 0; };
  EXPECT_EQ(drawn_rank_counts(capabilities, 2, 40, 600),
            (std::set<int>{3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39}));
}

// A backend that runs only multiples of a count, or only in place (an MSCCL file), is drawn only
// those; without the limits, both kinds of case come up.
TEST(CaseGenerator, OnlyCountMultiplesAndTheAdmittedLayoutAreDrawn) {
  Capabilities capabilities = backend_of("ring@sim")->capabilities();
  CaseLimits limits;
  limits.max_count = 1000;
  limits.collectives = {Collective::AllReduce, Collective::AllGather};  // a v-collective draws counts of its own
  const auto drawn = [&](std::size_t multiple, bool out_of_place) {
    capabilities.count_multiple = multiple;
    capabilities.out_of_place = out_of_place;
    const rc::Gen<Case> cases = case_generator(capabilities, limits);
    rc::Random random(11);
    std::set<std::pair<std::size_t, bool>> seen;  // (count % 8, in place)
    for (int i = 0; i < 300; ++i) {
      const Case c = cases(random.split(), std::min(10 + i, 100)).value();
      seen.insert({c.count % 8, c.in_place});
    }
    return seen;
  };
  for (const auto& [remainder, in_place] : drawn(8, false)) {
    EXPECT_EQ(remainder, 0u);
    EXPECT_TRUE(in_place);
  }
  const auto free = drawn(1, true);
  EXPECT_TRUE(std::any_of(free.begin(), free.end(), [](const auto& seen) { return seen.first != 0; }));
  EXPECT_TRUE(std::any_of(free.begin(), free.end(), [](const auto& seen) { return !seen.second; }));
}

CheckReport check_broken(std::function<bool(int)> broken, int low, int high, std::uint64_t seed) {
  std::vector<std::unique_ptr<Backend>> list;
  list.push_back(std::make_unique<BrokenWhere>(
      backend_of("ring@sim"), [broken = std::move(broken)](const Case& c) { return broken(c.nranks); }));
  return run_check(broken_options(low, high, seed), list, nullptr);
}

// Wrong only on composite counts that are not powers of two, 6 and 12, in 2..12: caught on
// every seed tried, and shrunk to 6 even when found at 12 (the counts between pass).
TEST(CaseGenerator, ABackendBrokenOnlyAtCompositeRankCountsIsCaughtAndShrunkToTheSmallest) {
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    const CheckReport report = check_broken([](int n) { return n % 6 == 0; }, 2, 12, seed);
    ASSERT_EQ(report.failures.size(), 1u) << "seed " << seed;
    EXPECT_EQ(report.failures[0].shrunk.nranks, 6) << "seed " << seed << ": " << to_string(report.failures[0].shrunk);
  }
  const CheckReport ten = check_broken([](int n) { return n == 10; }, 2, 12, 1);
  ASSERT_EQ(ten.failures.size(), 1u);
  EXPECT_EQ(ten.failures[0].shrunk.nranks, 10);
}

// A bug at every rank count from 2 on, first seen on a large world (the backend breaks from its
// 60th run on, when cases are full-sized), shrinks to 2 ranks; in 100..140 (every world large,
// broken from the third run on), to 100.
TEST(CaseGenerator, ABugAtEveryRankCountShrinksToTheFewestRanks) {
  for (std::uint64_t seed : {1, 2, 3}) {
    int runs = 0;
    const CheckReport report = check_broken([&runs](int n) { return ++runs > 60 && n >= 2; }, 2, 64, seed);
    ASSERT_EQ(report.failures.size(), 1u) << "seed " << seed;
    EXPECT_GT(report.failures[0].original.nranks, 2) << "seed " << seed;
    EXPECT_EQ(report.failures[0].shrunk.nranks, 2) << "seed " << seed << ": " << to_string(report.failures[0].shrunk);
  }
  int runs = 0;
  const CheckReport large = check_broken([&runs](int n) { return ++runs > 2 && n >= 100; }, 100, 140, 1);
  ASSERT_EQ(large.failures.size(), 1u);
  EXPECT_EQ(large.failures[0].shrunk.nranks, 100) << to_string(large.failures[0].shrunk);
}

// Two bugs behind one property — a crash at 3 ranks and a hang at 5 — are two groups, each
// shrunk once and counted; the 3-rank crashes seen after the first are counted, not shrunk
// again; --max-failures 1 reports the first and counts the rest.
TEST(Check, TwoBugsBehindOnePropertyAreBothReportedWithTheirCounts) {
  auto two_bugs = [] {
    auto crashing = std::make_unique<BrokenWhere>(backend_of("ring@sim"), [](const Case& c) { return c.nranks == 3; });
    std::vector<std::unique_ptr<Backend>> list;
    list.push_back(std::make_unique<BrokenWhere>(std::move(crashing), [](const Case& c) { return c.nranks == 5; }));
    static_cast<BrokenWhere&>(*list.back()).outcome_ = Outcome::Hang;
    return list;
  };
  CheckOptions options = broken_options(2, 8, 1);
  options.stop_at_first_failure = false;
  auto list = two_bugs();
  const CheckReport report = run_check(options, list, nullptr);
  ASSERT_EQ(report.failures.size(), 2u);
  std::set<std::pair<int, std::string>> found;
  for (const Failure& f : report.failures) {
    found.insert({f.shrunk.nranks, f.detail.substr(0, 4)});
    EXPECT_GT(f.count, 1u) << f.detail;
    EXPECT_LE(f.shrink_runs, 40u) << f.detail;
  }
  EXPECT_EQ(found, (std::set<std::pair<int, std::string>>{{3, "cras"}, {5, "hang"}}));
  EXPECT_EQ(report.unreported_failures, 0u);

  options.max_failures = 1;
  list = two_bugs();
  const CheckReport bounded = run_check(options, list, nullptr);
  ASSERT_EQ(bounded.failures.size(), 1u);
  EXPECT_GT(bounded.unreported_failures, 0u);
}

// A backend wrong only when its spec carries one knob setting (as drawn knobs make it).
class BrokenWithSetting final : public Forwarding {
 public:
  BrokenWithSetting(std::unique_ptr<Backend> inner, std::string setting)
      : Forwarding(std::move(inner)), setting_(std::move(setting)) {}
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    const std::string spec = name();
    const std::size_t colon = spec.find(':');
    const std::string settings = "," + (colon == std::string::npos ? "" : spec.substr(colon + 1)) + ",";
    if (settings.find("," + setting_ + ",") != std::string::npos)
      return RepeatedRun::ended(Outcome::Crash, "broken at " + setting_);
    return Forwarding::run(c, options);
  }

 private:
  std::string setting_;
};

CheckReport check_knob_broken(const std::string& spec, const std::string& setting, std::uint64_t seed) {
  std::vector<std::unique_ptr<Backend>> list;
  list.push_back(std::make_unique<BrokenWithSetting>(backend_of(spec), setting));
  CheckOptions options = broken_options(1, 16, seed);
  options.make_backend = [setting](const std::string& knobbed) -> Result<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(std::make_unique<BrokenWithSetting>(backend_of(knobbed), setting));
  };
  return run_check(options, list, nullptr);
}

// Wrong only with 3 channels: found by drawing the knob, shrunk to that knob alone (the chunk
// drawn with it goes back to its default), and replayed with it in the spec.
TEST(Knobs, ABackendBrokenOnlyAtOneKnobValueIsCaughtAndShrunkToIt) {
  for (std::uint64_t seed : {1, 2, 3}) {
    const CheckReport report = check_knob_broken("ring@sim", "channels=3", seed);
    ASSERT_EQ(report.failures.size(), 1u) << "seed " << seed;
    const Failure& failure = report.failures[0];
    EXPECT_EQ(failure.knobs, "channels=3") << "seed " << seed;
    EXPECT_EQ(failure.backend, "ring@sim:channels=3");
    EXPECT_NE(failure.replay.find("--backend 'ring@sim:channels=3'"), std::string::npos) << failure.replay;
    EXPECT_EQ(failure.shrunk.nranks, 1) << to_string(failure.shrunk);
  }
}

// A knob the user fixes in the spec is never drawn: the same bug is not reached.
TEST(Knobs, AKnobFixedInTheSpecIsNeverDrawn) {
  const CheckReport report = check_knob_broken("ring@sim:channels=1", "channels=3", 1);
  EXPECT_TRUE(report.failures.empty());
  EXPECT_GT(report.total().cases, 100u);
}

TEST(Knobs, SettingsAndSpecs) {
  const std::vector<KnobSpace> spaces = backend_of("innet@sim:fan-in=3")->capabilities().knobs;
  ASSERT_EQ(spaces.size(), 2u);  // chunk and channels; fan-in is fixed
  EXPECT_EQ(spaces[0].name, "chunk");
  EXPECT_EQ(spaces[1].name, "channels");
  Case c;
  c.count = 6400;
  c.nranks = 4;
  EXPECT_EQ(knob_settings(spaces, {std::uint64_t{8}, std::uint64_t{1}}, c),
            "chunk=100");  // fitted; channels=1 is the default
  EXPECT_EQ(knob_settings(spaces, {std::nullopt, std::uint64_t{64}}, c), "channels=32");  // at most 128 / 4
  EXPECT_EQ(spec_with_knobs("ring@sim", "chunk=8"), "ring@sim:chunk=8");
  EXPECT_EQ(spec_with_knobs("ring@sim:reliable=on", "chunk=8"), "ring@sim:reliable=on,chunk=8");
  EXPECT_EQ(spec_with_knobs("mutant:drop-remainder@sim", "chunk=8"), "mutant:drop-remainder@sim:chunk=8");
  EXPECT_EQ(spec_with_knobs("ring@sim", ""), "ring@sim");
}

// Every value of a knob's range is reachable: over many draws, every channel count 1..64 comes.
TEST(Knobs, EveryValueOfAKnobIsReachable) {
  const std::vector<KnobSpace> spaces = backend_of("ring@sim:chunk=4")->capabilities().knobs;
  ASSERT_EQ(spaces.size(), 1u);
  const rc::Gen<KnobValues> knobs = knob_generator(spaces);
  rc::Random random(3);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 4000; ++i) seen.insert(knobs(random.split(), 100).value()[0].value_or(1));
  EXPECT_EQ(seen.size(), 64u);
}

// Cases on several threads (each on its own instances of the backends) give the same report as on
// one: the same cases, verdicts, groups, counts and shrunk cases, whatever thread ran which case.
TEST(Check, ThreadsGiveTheSameReportAsOne) {
  auto report_with = [](unsigned jobs) {
    std::vector<std::unique_ptr<Backend>> list;
    list.push_back(backend_of("ring@sim"));
    list.push_back(backend_of("mutant:chunk-off-by-one@sim"));
    CheckOptions options = testing::bounded_options(11, 90, 12, 512);
    options.jobs = jobs;
    options.make_backend = [](const std::string& spec) -> Result<std::unique_ptr<Backend>> { return backend_of(spec); };
    return run_check(options, list, nullptr);
  };
  const CheckReport one = report_with(1);
  const CheckReport three = report_with(3);
  ASSERT_EQ(one.table.size(), three.table.size());
  for (const auto& [key, tally] : one.table) {
    EXPECT_EQ(tally.cases, three.table.at(key).cases);
    EXPECT_EQ(tally.failed, three.table.at(key).failed);
  }
  ASSERT_FALSE(one.failures.empty());
  ASSERT_EQ(one.failures.size(), three.failures.size());
  for (std::size_t k = 0; k < one.failures.size(); ++k) {
    EXPECT_EQ(one.failures[k].backend, three.failures[k].backend);
    EXPECT_EQ(to_string(one.failures[k].shrunk), to_string(three.failures[k].shrunk));
    EXPECT_EQ(one.failures[k].count, three.failures[k].count);
    EXPECT_EQ(one.failures[k].cases_until, three.failures[k].cases_until);
  }
}

// Stopping at the first failure, threads take no case after one has failed (they run the cases of
// a batch, many a thread, and the cases after a failure would not be counted): with a backend
// that fails every case, each thread runs one case, not the batch.
TEST(Check, ThreadsStopTakingCasesAtTheFirstFailure) {
  std::atomic<int> worker_runs{0};
  std::vector<std::unique_ptr<Backend>> list;
  list.push_back(std::make_unique<BrokenWhere>(backend_of("ring@sim"), [](const Case&) { return true; }));
  CheckOptions options = broken_options(1, 8, 5);
  options.jobs = 2;
  options.make_backend = [&worker_runs](const std::string& spec) -> Result<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(std::make_unique<BrokenWhere>(backend_of(spec), [&worker_runs](const Case&) {
      ++worker_runs;
      return true;
    }));
  };
  const CheckReport report = run_check(options, list, nullptr);
  ASSERT_EQ(report.failures.size(), 1u);
  EXPECT_EQ(report.total().cases, 1u);
  EXPECT_GE(worker_runs.load(), 1);
  EXPECT_LE(worker_runs.load(), 2 * static_cast<int>(options.jobs)) << "cases run after the first failure";
}

// Wrong only when empty buffers come as null pointers: caught, and shrunk to a case that says so.
TEST(CaseGenerator, ABackendBrokenOnlyOnNullEmptyBuffersIsCaught) {
  std::vector<std::unique_ptr<Backend>> list;
  list.push_back(std::make_unique<BrokenWhere>(backend_of("ring@sim"), [](const Case& c) { return c.empty_as_null; }));
  const CheckReport report = run_check(broken_options(1, 8, 1), list, nullptr);
  ASSERT_EQ(report.failures.size(), 1u);
  EXPECT_TRUE(report.failures[0].shrunk.empty_as_null);
  EXPECT_NE(to_string(report.failures[0].shrunk).find("/n=0/ranks=1/root=0/outofplace/offset=0/emptynull/"),
            std::string::npos)
      << to_string(report.failures[0].shrunk);
}

// A backend that says it changes protocol at 32 KiB, wrong only where a message's bytes lie
// within one element of a multiple of that: caught on every seed tried (random counts of
// 0..60000 elements almost never land there: without the declared edge it is missed on all three).
bool at_byte_edge(const Case& c, std::size_t edge) {
  const std::size_t bytes = c.count * size_of(c.dtype), element = size_of(c.dtype);
  const std::size_t past = bytes % edge;
  return bytes + element >= edge && (past == 0 || past == element || past == edge - element);
}

TEST(CaseGenerator, ABackendBrokenOnlyAtItsByteEdgesIsCaught) {
  for (std::uint64_t seed : {1, 2, 3}) {
    std::vector<std::unique_ptr<Backend>> list;
    auto broken =
        std::make_unique<BrokenWhere>(backend_of("ring@sim"), [](const Case& c) { return at_byte_edge(c, 32768); });
    broken->adjust_ = [](Capabilities& capabilities) {
      capabilities.chunk = 0;  // (its multiples would land near the edge too)
      capabilities.edge_bytes = {32768};
    };
    list.push_back(std::move(broken));
    CheckOptions options = broken_options(2, 8, seed);
    options.limits.max_count = 60000;  // (not a power of two: the cap on block collectives would land on edges)
    const CheckReport report = run_check(options, list, nullptr);
    ASSERT_EQ(report.failures.size(), 1u) << "seed " << seed;
    EXPECT_TRUE(at_byte_edge(report.failures[0].shrunk, 32768)) << to_string(report.failures[0].shrunk);
  }
}

// One bug reads the same at other ranks, elements, values and fault plans; another does not.
TEST(Check, DetailShapesLeaveOutNumbersAndPlans) {
  EXPECT_EQ(detail_shape("3 of 17 elements wrong\n  rank 2 element 5: expected -4, got 1.5e+3"),
            "# of # elements wrong");
  EXPECT_EQ(detail_shape("1 of 1 elements wrong"), detail_shape("12 of 4096 elements wrong"));
  EXPECT_EQ(detail_shape("corrupt: the run reported success with a wrong result under corrupt:rank=3:p=0.5: 1 of 1 "
                         "elements wrong"),
            detail_shape("corrupt: the run reported success with a wrong result under drop:link=0->1;stop:rank=1: 2 "
                         "of 9 elements wrong"));
  EXPECT_NE(detail_shape("ranks disagree: rank 1 element 0"), detail_shape("in place and out of place differ: rank 1"));
  EXPECT_EQ(kind_of(Outcome::Crash, "crash: rank 1 died: signal 6"), kind_of(Outcome::Crash, "crash: rank 0 died"));
  EXPECT_NE(kind_of(Outcome::Crash, "crash: rank 1 died"), kind_of(Outcome::Hang, "crash: rank 1 died"));
}

}  // namespace
}  // namespace collcheck
