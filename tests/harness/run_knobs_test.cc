// Knobs drawn per case for backends that take them per run (launched worlds: ALG@proc, gloo,
// mpi): every knob dimension they declare is caught by a backend wrong only at one of its values,
// the knobs reach the run in RunOptions (no backend is made per setting), and the failure's
// replay line carries them in the spec.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "harness/knob_generator.h"
#include "impls/registry.h"
#include "tests/support/broken_backend.h"

namespace collcheck {
namespace {

using testing::backend_of;

// The launched backend of `spec` (made, never run: no world starts), or null where this build
// has no such backend.
std::unique_ptr<Backend> launched(const std::string& spec) {
  auto made = make_backends(spec);
  return made.ok() ? std::move(made.value().front()) : nullptr;
}

// As the launched backend of a spec declares itself (name, capabilities: its knobs, taken per
// run), wrong only where a run's knobs hold `setting`; other runs run on ring@sim. Counts the runs
// whose knobs break a precondition of the spec (Gloo's bcube base must divide the ranks).
class BrokenAtRunKnob final : public Backend {
 public:
  BrokenAtRunKnob(std::unique_ptr<Backend> declared, std::string setting)
      : declared_(std::move(declared)), inner_(backend_of("ring@sim")), setting_(std::move(setting)) {}
  std::string name() const override { return declared_->name(); }
  Capabilities capabilities() const override { return declared_->capabilities(); }
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    if (!knob_allowed(options.knobs, c)) ++forbidden_runs;
    if (("," + options.knobs + ",").find("," + setting_ + ",") != std::string::npos)
      return RepeatedRun::ended(Outcome::Crash, "broken at " + setting_);
    return inner_->run(c, options);
  }
  int forbidden_runs = 0;

 private:
  // A base the run's knobs give (or the default, 2) must divide the ranks.
  bool knob_allowed(const std::string& knobs, const Case& c) const {
    if (name().find("bcube") == std::string::npos) return true;
    const std::size_t at = knobs.find("base=");
    const int base = at == std::string::npos ? 2 : std::stoi(knobs.substr(at + 5));
    return c.nranks % base == 0;
  }

  std::unique_ptr<Backend> declared_;
  std::unique_ptr<Backend> inner_;
  std::string setting_;
};

struct RunKnobCheck {
  CheckReport report;
  int made = 0;            // backends made for drawn knobs: none, the knobs go with each run
  int forbidden_runs = 0;  // runs whose knobs broke a precondition
};

RunKnobCheck check_broken_at(std::unique_ptr<Backend> declared, const std::string& setting, int low, int high,
                             std::uint64_t seed) {
  auto broken = std::make_unique<BrokenAtRunKnob>(std::move(declared), setting);
  BrokenAtRunKnob& seen = *broken;
  std::vector<std::unique_ptr<Backend>> list;
  list.push_back(std::move(broken));
  CheckOptions options = testing::broken_options(low, high, seed);
  RunKnobCheck result;
  options.make_backend = [&result](const std::string& spec) -> Result<std::unique_ptr<Backend>> {
    ++result.made;
    return backend_of(spec);
  };
  result.report = run_check(options, list, nullptr);
  result.forbidden_runs = seen.forbidden_runs;
  return result;
}

// Checks `declared` broken only at its knob `setting` on ranks 1..high (seed 1): caught, shrunk
// to the setting alone, replayed with it in the spec (`replayed`), on no backend made for it.
void expect_caught_at(std::unique_ptr<Backend> declared, const std::string& setting, int high,
                      const std::string& replayed) {
  const RunKnobCheck check = check_broken_at(std::move(declared), setting, 1, high, 1);
  ASSERT_EQ(check.report.failures.size(), 1u) << setting;
  EXPECT_EQ(check.report.failures[0].knobs, setting);
  EXPECT_EQ(check.report.failures[0].backend, replayed);
  EXPECT_NE(check.report.failures[0].replay.find("--backend '" + replayed + "'"), std::string::npos);
  EXPECT_EQ(check.made, 0);
}

// `ring@proc` declares chunk and channels, taken per run: wrong only with 3 channels, caught on
// every seed tried.
TEST(RunKnobs, AProcBackendBrokenOnlyAtOneChannelCountIsCaught) {
  for (std::uint64_t seed : {1, 2, 3}) {
    const RunKnobCheck check = check_broken_at(launched("ring@proc"), "channels=3", 1, 8, seed);
    ASSERT_EQ(check.report.failures.size(), 1u) << "seed " << seed;
    EXPECT_EQ(check.report.failures[0].knobs, "channels=3") << "seed " << seed;
    EXPECT_EQ(check.made, 0);
  }
  expect_caught_at(launched("ring@proc"), "channels=3", 8, "ring@proc:channels=3");
}

// The pipeline chunk of @proc (a mutant keeps its own default, 0: the generator's).
TEST(RunKnobs, AProcBackendBrokenOnlyAtOneChunkIsCaught) {
  expect_caught_at(launched("mutant:chunk-off-by-one@proc"), "chunk=3", 4, "mutant:chunk-off-by-one@proc:chunk=3");
}

// Gloo's bcube base: drawn only where it divides the ranks (Gloo's documented precondition), so
// odd rank counts run too, with a base that divides them; wrong only at base 3: caught, and
// shrunk to 3 ranks, where 3 is the only base there is.
TEST(RunKnobs, AGlooBackendBrokenOnlyAtOneBaseIsCaughtAndNoForbiddenBaseIsDrawn) {
  if (!launched("gloo:allreduce_bcube")) GTEST_SKIP() << "this build has no Gloo";
  const RunKnobCheck check = check_broken_at(launched("gloo:allreduce_bcube"), "base=3", 1, 12, 1);
  ASSERT_EQ(check.report.failures.size(), 1u);
  EXPECT_EQ(check.report.failures[0].shrunk.nranks, 3) << to_string(check.report.failures[0].shrunk);
  EXPECT_EQ(check.forbidden_runs, 0);
  expect_caught_at(launched("gloo:allreduce_bcube"), "base=3", 12, "gloo:allreduce_bcube:base=3");
}

// Gloo's segment size, where the algorithm takes one.
TEST(RunKnobs, AGlooBackendBrokenOnlyAtOneSegmentSizeIsCaught) {
  if (!launched("gloo:allreduce")) GTEST_SKIP() << "this build has no Gloo";
  expect_caught_at(launched("gloo:allreduce"), "segment=9", 4, "gloo:allreduce:segment=9");
}

// Open MPI's segment size of a forced algorithm that segments.
TEST(RunKnobs, AnMpiBackendBrokenOnlyAtOneSegmentSizeIsCaught) {
  if (!launched("mpi")) GTEST_SKIP() << "this build has no MPI";
  expect_caught_at(launched("mpi:allreduce=segmented_ring"), "allreduce_segsize=1000", 4,
                   "mpi:allreduce=segmented_ring,allreduce_segsize=1000");
}

// Which launched backends declare which knobs, and none that the spec fixes or the algorithm
// does not use.
TEST(RunKnobs, LaunchedBackendsDeclareTheKnobsTheyTakePerRun) {
  auto names = [](const std::string& spec) {
    std::string out;
    for (const KnobSpace& space : launched(spec)->capabilities().knobs) out += (out.empty() ? "" : ",") + space.name;
    return out;
  };
  EXPECT_EQ(names("ring@proc"), "chunk,channels");
  EXPECT_EQ(names("innet@proc:chunk=8,transport=tcp"), "channels,fan-in");
  EXPECT_TRUE(launched("ring@proc")->capabilities().knobs_per_run);
  if (launched("gloo:allreduce")) {
    EXPECT_EQ(names("gloo:allreduce_bcube"), "base");
    EXPECT_EQ(names("gloo:allreduce_bcube:base=4"), "");
    EXPECT_EQ(names("gloo:allreduce"), "segment");
    EXPECT_EQ(names("gloo:allreduce_ring"), "");
    EXPECT_EQ(spec_with_knobs("gloo:allreduce_bcube", "base=3"), "gloo:allreduce_bcube:base=3");
    EXPECT_EQ(spec_with_knobs("gloo:allreduce:timeout=5", "segment=64"), "gloo:allreduce:timeout=5,segment=64");
  }
  if (launched("mpi")) {
    EXPECT_EQ(names("mpi"), "");
    EXPECT_EQ(names("mpi:bcast=pipeline"), "bcast_segsize");
    EXPECT_EQ(names("mpi:bcast=pipeline,bcast_segsize=4096"), "");
    EXPECT_EQ(names("mpi:bcast=basic_linear"), "");
    EXPECT_EQ(names("mpi:allreduce=ring"), "");
    EXPECT_EQ(spec_with_knobs("mpi:bcast=pipeline", "bcast_segsize=64"), "mpi:bcast=pipeline,bcast_segsize=64");
  }
}

}  // namespace
}  // namespace collcheck
