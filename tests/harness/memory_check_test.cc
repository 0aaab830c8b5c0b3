// The memory budget and the refusal: MemAvailable and cgroup limits read from their texts, the
// machine's budget never above what /proc/meminfo says, --memory-limit's grammar, the wording of
// a refusal, sizes in words, a backend's estimate that covers its buffers, and the lines a sweep
// keeps for its proofs in pieces held within what its proofs leave.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "harness/memory_check.h"
#include "impls/algorithms/algorithms.h"
#include "impls/registry.h"
#include "reference/counts.h"

namespace collcheck::cli {
namespace {

TEST(MemoryBudget, ReadsMemAvailableInKibibytes) {
  EXPECT_EQ(meminfo_available("MemTotal:       32000000 kB\nMemFree:  100 kB\nMemAvailable:   23598512 kB\n"),
            std::uint64_t{23598512} * 1024);
  EXPECT_FALSE(meminfo_available("MemTotal: 1 kB\n"));
  EXPECT_FALSE(meminfo_available("MemAvailable: lots\n"));
}

TEST(MemoryBudget, ReadsCgroupLimitsAndTheirAbsence) {
  EXPECT_EQ(cgroup_limit("8589934592\n"), std::uint64_t{8} << 30);
  EXPECT_FALSE(cgroup_limit("max\n"));                  // v2: no limit
  EXPECT_FALSE(cgroup_limit("9223372036854771712\n"));  // v1: no limit
  EXPECT_FALSE(cgroup_limit(""));
}

TEST(MemoryBudget, TheMachinesIsAtMostMemAvailable) {
  std::ifstream file("/proc/meminfo");
  std::ostringstream text;
  text << file.rdbuf();
  const std::optional<std::uint64_t> available = meminfo_available(text.str());
  if (!available) GTEST_SKIP() << "no /proc/meminfo here";
  const MemoryBudget budget = available_memory();
  EXPECT_GT(budget.bytes, 0u);
  // Memory moves between the two reads: allow a gibibyte of it.
  EXPECT_LE(budget.bytes, *available + (std::uint64_t{1} << 30));
  EXPECT_FALSE(budget.source.empty());
}

Result<MemoryBudget> budget_of(std::vector<std::string_view> words) {
  constexpr Option kOptions[] = {kMemoryLimitOption};
  Result<Arguments> args = Arguments::parse(words, kOptions);
  if (!args) return args.error();
  return memory_budget(*args);
}

TEST(MemoryBudget, TakesSizesAndZeroForNoLimit) {
  EXPECT_EQ(budget_of({"--memory-limit", "512M"})->bytes, std::uint64_t{512} << 20);
  EXPECT_EQ(budget_of({"--memory-limit", "64G"})->source, "--memory-limit");
  EXPECT_EQ(budget_of({"--memory-limit", "0"})->bytes, 0u);
  EXPECT_EQ(budget_of({})->source, available_memory().source);
  Result<MemoryBudget> bad = budget_of({"--memory-limit", "-1"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "--memory-limit");
}

TEST(MemoryBudget, RefusesWithTheEstimateTheLimitAndTheKnobs) {
  MemoryEstimate estimate;
  estimate.add("buffers", std::uint64_t{3} << 30, "2 ranks x 1.5 GiB");
  estimate.add("schedule", 880, "10 steps x 88 B");
  EXPECT_TRUE(fits(estimate, MemoryBudget{std::uint64_t{4} << 30, "MemAvailable"}, "it", "lower n"));
  EXPECT_TRUE(fits(estimate, MemoryBudget{0, "--memory-limit"}, "it", "lower n"));
  Status refused = fits(estimate, MemoryBudget{std::uint64_t{2} << 30, "MemAvailable"}, "it", "lower n");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().text(),
            "it needs about 3.0 GiB (buffers 3.0 GiB: 2 ranks x 1.5 GiB; schedule 880 B: 10 steps x 88 B), more than "
            "the 2.0 GiB available (MemAvailable); lower n, or raise --memory-limit");
  Status limited = fits(estimate, MemoryBudget{std::uint64_t{1} << 30, "--memory-limit"}, "it", "lower n");
  ASSERT_FALSE(limited);
  EXPECT_NE(limited.error().message.find("more than the --memory-limit of 1.0 GiB;"), std::string::npos);
}

// A part that may outgrow its estimate (the simulator's messages) gets what the other parts leave.
TEST(MemoryBudget, LeavesAPartWhatTheOtherPartsDoNotTake) {
  MemoryEstimate estimate;
  estimate.add("links", 300);
  estimate.add("messages", 200);
  estimate.add("routes", 100);
  EXPECT_EQ(room_for_part(estimate, MemoryBudget{1000, "--memory-limit"}, "messages"), 600u);
  EXPECT_EQ(room_for_part(estimate, MemoryBudget{1000, "--memory-limit"}, "routes"), 500u);
  EXPECT_EQ(room_for_part(estimate, MemoryBudget{0, "--memory-limit"}, "messages"), 0u);  // no limit
  EXPECT_EQ(room_for_part(estimate, MemoryBudget{350, "MemAvailable"}, "messages"), 1u);  // nothing left
}

// A checked case's run on `sim` gets, for its messages, what the budget leaves after the rest of
// the case's estimate (the oracle, the second run, the schedule, ...); no budget, no bound.
TEST(MemoryBudget, ACheckedCaseMessagesGetWhatItsOtherPartsLeave) {
  Result<std::vector<std::unique_ptr<Backend>>> backends = make_backends("ring@sim", BackendOptions{});
  ASSERT_TRUE(backends.ok());
  const Backend& backend = *backends->front();
  Case c;
  c.count = 4096;
  c.nranks = 8;
  const MemoryEstimate estimate = checked_case_memory(backend, c);
  const std::uint64_t messages = estimate.part("messages");
  ASSERT_GT(messages, 0u);
  const std::uint64_t budget = estimate.total() + 1000;
  EXPECT_EQ(message_room(backend, c, MemoryBudget{budget, "--memory-limit"}), messages + 1000);
  EXPECT_EQ(message_room(backend, c, MemoryBudget{0, "--memory-limit"}), 0u);
}

TEST(MemoryEstimate, SaysSizesInWordsAndNeverWraps) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(std::uint64_t{72} << 30), "72.0 GiB");
  EXPECT_EQ(saturating_product(std::uint64_t{1} << 40, std::uint64_t{1} << 40), ~std::uint64_t{0});
  EXPECT_EQ(saturating_sum(~std::uint64_t{0}, 1), ~std::uint64_t{0});
}

// Every backend's estimate covers at least one set of its buffers, and the case's memory grows
// with its size.
TEST(MemoryEstimate, BackendsCoverTheirBuffers) {
  Result<std::vector<std::unique_ptr<Backend>>> backends = make_backends("all@sim", BackendOptions{});
  ASSERT_TRUE(backends);
  Result<Case> c = parse_case("allreduce/f32/sum/n=1048576/ranks=4");
  ASSERT_TRUE(c);
  const std::uint64_t buffers = std::uint64_t{4} * 2 * 4 * 1048576;
  for (const auto& backend : *backends) {
    if (!backend->capabilities().supports(*c)) continue;
    const std::uint64_t run = backend->estimate_memory(*c, EstimateFor::CheckedRun).total();
    EXPECT_GE(run, buffers) << backend->name();
    EXPECT_GT(checked_case_memory(*backend, *c).total(), run) << backend->name();
  }
}

// A timed run that nobody checks (bench -c 0) hands nothing back: where the ranks hold buffers
// its estimate is theirs alone, and on @sim, which times such a run without data, it holds none
// (a 16 GiB sweep of predicted times needs kilobytes, not the 600 GiB a checked run would).
TEST(MemoryEstimate, ATimedRunHandsNothingBackAndOnSimHoldsNoData) {
  Result<Case> c = parse_case("allreduce/f32/sum/n=1048576/ranks=4");
  ASSERT_TRUE(c);
  const std::uint64_t buffers = std::uint64_t{4} * 2 * 4 * 1048576;
  BackendOptions threads;
  threads.worlds_of_threads = true;
  Result<std::vector<std::unique_ptr<Backend>>> proc = make_backends("ring@proc", threads);
  ASSERT_TRUE(proc);
  const MemoryEstimate timed = proc->front()->estimate_memory(*c, EstimateFor::TimedRun);
  EXPECT_GE(timed.part("buffers"), buffers);
  EXPECT_EQ(timed.part("results"), 0u);
  EXPECT_GE(proc->front()->estimate_memory(*c, EstimateFor::CheckedRun).part("results"), buffers);

  for (const std::string_view spec : {"ring@sim", "tree@sim", "rhd@sim"}) {
    Result<std::vector<std::unique_ptr<Backend>>> sim = make_backends(spec, BackendOptions{});
    ASSERT_TRUE(sim) << spec;
    const auto& backend = sim->front();
    const MemoryEstimate without_data = backend->estimate_memory(*c, EstimateFor::TimedRun);
    EXPECT_EQ(without_data.part("buffers"), 0u) << backend->name() << ": " << without_data.describe();
    EXPECT_EQ(without_data.part("results"), 0u) << backend->name();
    EXPECT_LT(without_data.total(), buffers / 16) << backend->name() << ": " << without_data.describe();
    EXPECT_GT(without_data.part("schedule"), 0u) << backend->name();
  }
}

// The ring at 16,384 ranks is made on demand in a simulation, so its billion steps are not
// counted: timing only it fits in 4 GiB (stored, the steps alone would be 48 GiB); a ring small
// enough to store is counted step by step.
TEST(MemoryEstimate, ASimulatedRingMadeOnDemandHoldsNoSteps) {
  Result<Case> large = parse_case("allreduce/f32/sum/n=16384/ranks=16384");
  ASSERT_TRUE(large);
  Result<MemoryEstimate> estimate = simulated_case_memory("ring", *large, Knobs{}, false, true, {});
  ASSERT_TRUE(estimate);
  EXPECT_LT(estimate->total(), std::uint64_t{4} << 30) << estimate->describe();
  EXPECT_NE(estimate->describe().find(": no steps held (made on demand)"), std::string::npos) << estimate->describe();
  Result<Case> small = parse_case("allreduce/f32/sum/n=1024/ranks=64");
  ASSERT_TRUE(small);
  Result<MemoryEstimate> stored = simulated_case_memory("ring", *small, Knobs{}, false, true, {});
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->describe().find("no steps held"), std::string::npos) << stored->describe();
}

// A sweep's lines cut ahead of their proofs: each taken once; one that would not fit in the room
// left beside those kept is not kept; held within a bound by letting go of those kept last (whose
// proofs come last and cut theirs again); a line taken is no longer held.
TEST(CutLines, HoldsWithinTheBoundLettingGoOfTheLastKept) {
  const Case shape = spread_case(Collective::AllGatherV, 64, 8, 0, false);
  const Schedule made = make_schedule("ring", shape, Knobs{}, Form::OnDemand).value();
  const auto line = [&] { return in_pieces(made).value(); };
  const InPieces one = line();
  EXPECT_GE(kept_line_bytes(shape, one), shape.counts.size() * 2 * sizeof(std::size_t));
  CutLines lines;
  lines.keep("first", line(), 100, 1000);
  lines.keep("second", line(), 200, 1000);
  lines.keep("too many", line(), 500, 700);  // with those kept, more than the room left
  lines.keep("third", line(), 300, 1000);
  EXPECT_EQ(lines.held(), 600u);
  EXPECT_FALSE(lines.take("too many")) << "not kept: its proof cuts it again";
  lines.hold_at_most(350);
  EXPECT_EQ(lines.held(), 300u);
  EXPECT_FALSE(lines.take("third")) << "the last kept goes first";
  ASSERT_TRUE(lines.take("second"));
  EXPECT_FALSE(lines.take("second")) << "taken once";
  EXPECT_EQ(lines.held(), 100u);
  lines.hold_at_most(0);
  EXPECT_EQ(lines.held(), 0u);
  EXPECT_FALSE(lines.take("first"));
}

}  // namespace
}  // namespace collcheck::cli
