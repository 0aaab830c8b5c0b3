// Gloo's own defects (docs/vendors.md, Gloo's findings), each expected explicitly on thread
// worlds: a test here fails when Gloo fixes one, and is then turned around.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <csignal>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "reference/counts.h"
#include "reference/oracle.h"
#include "tests/impls/gloo_worlds.h"
#include "tests/support/cases.h"

namespace collcheck {
namespace {

using namespace gloo_worlds;  // one_spec, on_world, run_cases, outcomes_of
using collcheck::testing::make_case;

// Counts the calls, over all ranks, whose output is wrong in `calls` back-to-back calls of c.
int wrong_back_to_back_calls(const std::string& text, const Case& c, int calls) {
  RankRunOptions options;
  options.calls = calls;
  std::mutex lock;
  int wrong = 0;
  on_world(one_spec(text), c.nranks, [&](int rank, RankBackend& backend, std::vector<std::string>&) {
    const RankRun run = backend.run(c, options);
    for (std::size_t k = 0; k < run.calls.size(); ++k) {
      Case call = c;
      call.seed = c.seed + k;
      if (compare(call, rank, run.calls[k].output).ok) continue;
      std::lock_guard<std::mutex> guard(lock);
      ++wrong;
    }
  });
  return wrong;
}

// SIGFPE; under AddressSanitizer, whose handler reports the FPE and then exits or aborts, that
// report (the death test's regex checks it).
bool killed_by_division_by_zero(int status) {
#if defined(__SANITIZE_ADDRESS__)
  if ((WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) || (WIFEXITED(status) && WEXITSTATUS(status) != 0))
    return true;
#endif
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGFPE;
}
#if defined(__SANITIZE_ADDRESS__)
constexpr const char* kDivisionByZeroReport = "AddressSanitizer: FPE";
#else
constexpr const char* kDivisionByZeroReport = "";
#endif

// gloo::allgather with zero elements takes its offsets modulo the output's size, zero: SIGFPE.
// Smallest case: allgather/i8/n=0/ranks=2 (any dtype, any ranks > 1, in or out of place).
TEST(GlooFindingsDeathTest, AllgatherOfZeroElementsDividesByZero) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Case c = make_case(Collective::AllGather, DType::Int8, RedOp::Sum, 0, 2);
  EXPECT_EXIT(
      {
        on_world(one_spec("gloo:allgather"), 2,
                 [&](int, RankBackend& backend, std::vector<std::string>&) { backend.run(c, RankRunOptions{}); });
        std::exit(0);
      },
      killed_by_division_by_zero, kDivisionByZeroReport);
}

// gloo::ReduceScatterHalvingDoubling on ranks that are not a power of two: the ranks of the
// smaller binary block send their part to the larger block without waiting for the send or
// for the receiver's clear-to-send, so back-to-back calls (the same algorithm object, as users
// reuse it) overwrite data that a larger-block rank has not reduced yet: ranks 0.. get wrong
// elements. Smallest case: reducescatter/i32/sum/n=1/ranks=5, calls >= 2 (intermittent; on 5
// ranks about 1 call in 30 per rank; ranks 2 and 4 never).
TEST(GlooFindings, ReduceScatterHalvingDoublingCorruptsBackToBackCallsOnFiveRanks) {
  Case c = make_case(Collective::ReduceScatter, DType::Int32, RedOp::Sum, 1, 5);
  RankRunOptions options;
  options.calls = 300;
  const int wrong = wrong_back_to_back_calls("gloo:reduce_scatter_halving_doubling", c, options.calls);
  EXPECT_GT(wrong, 0) << "no wrong call in 300 back-to-back calls on 5 ranks: has Gloo fixed it?";
  // The same on a power of two is exact.
  c.nranks = 4;
  const auto failures = on_world(one_spec("gloo:reduce_scatter_halving_doubling"), 4, run_cases({c}, options));
  EXPECT_TRUE(failures.empty()) << (failures.empty() ? "" : failures[0]);
}

// gloo::AllgatherRing<T> receives straight into the caller's output, and its last step tells the
// left neighbour it may write again: a neighbour that starts the next call writes that call's
// block into this rank's output before this rank's caller has read the previous result. Smallest
// case: allgather/i32/n=1/ranks=3 with calls >= 2 (intermittent, most runs of 50 calls).
TEST(GlooFindings, AllgatherRingOutputIsOverwrittenByTheNextCall) {
  const Case c = make_case(Collective::AllGather, DType::Int32, RedOp::Sum, 1, 3);
  const int wrong = wrong_back_to_back_calls("gloo:allgather_ring", c, 50);
  EXPECT_GT(wrong, 0) << "no wrong call in 50 back-to-back calls on 3 ranks: has Gloo fixed it?";
}

// gloo::ReduceScatterHalvingDoubling<T> with recvElems: where a rank's block is empty and lies
// inside the chunk another rank reduced, that rank's distribution step sends it an empty piece
// and waits for a notification the empty rank never sends (it posts no receive): every call
// waits until the pairs' timeout, then throws. Empty blocks at the end, or at a chunk's start,
// run. Smallest case: reducescatterv/i32/sum/n=3/counts=1,0,2/ranks=3 (any dtype).
TEST(GlooFindings, ReduceScatterHalvingDoublingWaitsForEverOnAnEmptyBlockInsideAChunk) {
  Case c = make_case(Collective::ReduceScatterV, DType::Int32, RedOp::Sum, 0, 3);
  set_counts(c, {1, 0, 2});
  const auto outcomes = outcomes_of("gloo:reduce_scatter_halving_doubling:timeout=0.5", c);
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_NE(outcomes[0].find("Read timeout"), std::string::npos) << outcomes[0] << "\nhas Gloo fixed it?";
  // The same blocks with the empty one last run.
  set_counts(c, {1, 2, 0});
  const auto failures = on_world(one_spec("gloo:reduce_scatter_halving_doubling"), 3, run_cases({c}));
  EXPECT_TRUE(failures.empty()) << (failures.empty() ? "" : failures[0]);
}

// gloo::AllgatherRing<T> on one rank looks for a pair to itself: "pair missing (index 0)".
TEST(GlooFindings, AllgatherRingNeedsTwoRanks) {
  const Case c = make_case(Collective::AllGather, DType::Int32, RedOp::Sum, 4, 1);
  const auto outcomes = outcomes_of("gloo:allgather_ring", c);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_NE(outcomes[0].find("pair missing"), std::string::npos) << outcomes[0] << "\nhas Gloo fixed it?";
}

// gloo::AllreduceBcube<T> on 4 ranks (base 2): back-to-back calls now and then give some
// elements wrong on some ranks (about 1 rank-call in 100 at n=1; never seen on 2 ranks).
// Smallest case: allreduce/i32/sum/n=1/ranks=4, calls >= 2 (intermittent).
TEST(GlooFindings, AllreduceBcubeCorruptsBackToBackCallsOnFourRanks) {
  const Case c = make_case(Collective::AllReduce, DType::Int32, RedOp::Sum, 1, 4);
  EXPECT_GT(wrong_back_to_back_calls("gloo:allreduce_bcube", c, 1000), 0)
      << "no wrong call in 1000 back-to-back calls on 4 ranks: has Gloo fixed it?";
}

}  // namespace
}  // namespace collcheck
