// The suite's own support, each part made to fail: the findings table steps around only the
// cases its findings name; a backend on worlds of threads fails its run when one rank's part
// fails, as a launcher's would. (How a spec becomes the suite's backends is the registry's:
// tests/impls/backend_test.cc.)
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "impls/registry.h"
#include "impls/worlds/thread_world_backend.h"
#include "reference/case.h"
#include "tests/conformance/checks.h"
#include "tests/conformance/findings.h"

namespace collcheck::conformance {
namespace {

Case case_of(const char* text) {
  Result<Case> parsed = parse_case(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.value();
}

TEST(ConformanceFindings, AFindingStepsAroundOnlyTheCasesItNames) {
  // Gloo finding 14: an empty block inside a reduced chunk (block 1 starts at 1, chunks of 2).
  const Case hangs = case_of("reducescatterv/f32/sum/counts=1,0,2/ranks=3");
  const std::string_view why = known_finding("gloo:reduce_scatter_halving_doubling", hangs, RunOptions{});
  EXPECT_NE(why.find("finding 14"), std::string_view::npos) << why;
  EXPECT_NE(why.find("GlooFindings.ReduceScatterHalvingDoublingWaitsForEverOnAnEmptyBlockInsideAChunk"),
            std::string_view::npos)
      << "the reason names the test that asserts it: " << why;

  // The same case on our own ring, and Gloo on counts where no empty block lies inside a chunk.
  EXPECT_EQ(known_finding("ring@sim", hangs, RunOptions{}), "");
  EXPECT_EQ(known_finding("ring@proc", hangs, RunOptions{}), "");
  EXPECT_EQ(known_finding("gloo:reduce_scatter_halving_doubling",
                          case_of("reducescatterv/f32/sum/counts=1,2,2/ranks=3"), RunOptions{}),
            "");
  EXPECT_EQ(known_finding("gloo:reduce_scatter_halving_doubling",
                          case_of("reducescatterv/f32/sum/counts=2,0,2/ranks=3"), RunOptions{}),
            "")
      << "the empty block starts a chunk";

  // A finding of one call alone does not step around a single call.
  const Case five = case_of("reducescatter/f32/sum/n=10/ranks=5");
  RunOptions twice;
  twice.calls = 2;
  EXPECT_NE(known_finding("gloo:reduce_scatter_halving_doubling", five, twice), "");
  EXPECT_EQ(known_finding("gloo:reduce_scatter_halving_doubling", five, RunOptions{}), "");
}

// ring@proc's rank part, and on one rank a part that breaks its run: `ends` it, or flips a bit
// of its output.
class BrokenOnOneRank final : public RankBackend {
 public:
  BrokenOnOneRank(std::unique_ptr<RankBackend> inner, Outcome ends) : inner_(std::move(inner)), ends_(ends) {}
  std::string name() const override { return inner_->name(); }
  RankRun run(const Case& c, const RankRunOptions& options) override {
    RankRun run = inner_->run(c, options);
    if (ends_ != Outcome::Ok) return RankRun::ended(ends_, "this rank's part failed");
    if (!run.calls.empty() && !run.calls.front().output.empty()) run.calls.front().output[0] ^= std::byte{1};
    return run;
  }

 private:
  std::unique_ptr<RankBackend> inner_;
  Outcome ends_;
};

std::unique_ptr<Backend> ring_broken_on_rank(int broken_rank, Outcome ends) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs("ring@proc");
  EXPECT_TRUE(specs.ok() && specs->size() == 1u);
  RankBackendSpec spec = std::move(specs->front());
  auto make_ring = spec.make;
  spec.make = [make_ring, broken_rank, ends](World& world) -> Result<std::unique_ptr<RankBackend>> {
    Result<std::unique_ptr<RankBackend>> made = make_ring(world);
    if (!made || world.rank() != broken_rank) return made;
    return std::unique_ptr<RankBackend>(std::make_unique<BrokenOnOneRank>(std::move(*made), ends));
  };
  return make_thread_world_backend(std::move(spec));
}

TEST(ConformanceBackends, ARunOnThreadWorldsFailsWhenOneRankPartFails) {
  const Case c = case_of("allreduce/i32/sum/n=7/ranks=3/seed=2");
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs("ring@proc");
  ASSERT_TRUE(specs.ok());
  const std::unique_ptr<Backend> right = make_thread_world_backend(std::move(specs->front()));
  EXPECT_EQ(check_run(c, right->run(c, RunOptions{}), 1), "");

  const RepeatedRun detected = ring_broken_on_rank(1, Outcome::Detected)->run(c, RunOptions{});
  EXPECT_EQ(detected.outcome, Outcome::Detected);
  EXPECT_NE(detected.error.find("this rank's part failed"), std::string::npos) << detected.error;
  EXPECT_NE(check_run(c, detected, 1), "");

  const std::string wrong = check_run(c, ring_broken_on_rank(2, Outcome::Ok)->run(c, RunOptions{}), 1);
  EXPECT_NE(wrong.find("rank 2"), std::string::npos) << "verdict: '" << wrong << "'";
}

}  // namespace
}  // namespace collcheck::conformance
