// The conformance suite's own verdict (check_run) against runs broken one way each: a wrong
// output, a written guard zone, a changed input, a missing call, a crash. Every backend's suite
// rests on it, so each way must fail it, and the unbroken run must pass.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "impls/registry.h"
#include "reference/case.h"
#include "tests/conformance/checks.h"

namespace collcheck::conformance {
namespace {

RepeatedRun run_on_ring(const Case& c, int calls) {
  auto made = make_backends("ring@sim");
  EXPECT_TRUE(made.ok()) << made.error().text();
  RunOptions options;
  options.calls = calls;
  return made.value().front()->run(c, options);
}

void expect_failure(const std::string& verdict, const std::string& wanted) {
  EXPECT_NE(verdict.find(wanted), std::string::npos) << "verdict: '" << verdict << "'";
}

TEST(ConformanceChecks, EachWayARunCanBeBrokenFailsItsVerdict) {
  const Case c = parse_case("allreduce/i32/sum/n=7/ranks=3/seed=4").value();
  const RepeatedRun right = run_on_ring(c, 2);
  ASSERT_EQ(right.outcome, Outcome::Ok) << right.error;
  EXPECT_EQ(check_run(c, right, 2), "");

  RepeatedRun wrong_output = right;
  wrong_output.calls[1][2].output[0] ^= std::byte{1};
  expect_failure(check_run(c, wrong_output, 2), "call 1 rank 2: ");

  RepeatedRun guard_written = right;
  guard_written.calls[0][1].guards_intact = false;
  expect_failure(check_run(c, guard_written, 2), "call 0 rank 1: a guard zone around a buffer was written");

  RepeatedRun input_changed = right;
  input_changed.calls[1][0].input[3] ^= std::byte{0x80};
  expect_failure(check_run(c, input_changed, 2), "call 1 rank 0: the input changed out of place");

  RepeatedRun call_missing = right;
  call_missing.calls.pop_back();
  expect_failure(check_run(c, call_missing, 2), "1 calls' results for 2 calls");

  RepeatedRun rank_missing = right;
  rank_missing.calls[0].pop_back();
  expect_failure(check_run(c, rank_missing, 2), "2 ranks' results");

  expect_failure(check_run(c, RepeatedRun::ended(Outcome::Crash, "rank 1 died"), 2), "rank 1 died");

  // The seed step: the second call is checked against the case's seed plus the step.
  expect_failure(check_run(c, right, 2, 5), "call 1 rank ");
}

}  // namespace
}  // namespace collcheck::conformance
