// The conformance suite: what every backend must do, one TEST_P body per behaviour, the backend
// spec the parameter. Each executable checks the spec that collcheck_add_conformance gave it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "impls/link/hook.h"
#include "impls/registry.h"
#include "reference/inputs.h"
#include "tests/conformance/checks.h"
#include "tests/conformance/findings.h"
#include "tests/conformance/spec_under_test.h"

namespace collcheck::conformance {

namespace {

// Backends across processes run on worlds of threads of this process, unless a launcher started
// it (then in lockstep on the launched world).
BackendOptions suite_options() {
  BackendOptions options;
  options.worlds_of_threads = true;
  return options;
}

// The single-backend specs `spec` stands for, one test each (`all@sim`: `ring@sim`, `tree@sim`,
// ...); on an error `spec` itself, so that its one test reports the error instead of vanishing.
std::vector<std::string> expand(std::string_view spec) {
  std::vector<std::string> names;
  if (Result<std::vector<std::unique_ptr<Backend>>> backends = make_backends(spec, suite_options())) {
    for (const std::unique_ptr<Backend>& backend : *backends) names.push_back(backend->name());
  }
  if (names.empty()) names.emplace_back(spec);
  return names;
}

// How many failures a test prints in full; the rest are counted.
constexpr std::size_t kShownFailures = 3;

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    Result<std::unique_ptr<Backend>> made = make_one_backend(GetParam(), suite_options());
    ASSERT_TRUE(made.ok()) << made.error().text();
    backend_ = std::move(*made);
    const std::string cannot = backend_->cannot_run_here();
    if (!cannot.empty()) GTEST_SKIP() << GetParam() << " cannot run on this machine: " << cannot;
    capabilities_ = backend_->capabilities();
  }

  // Runs the case unless the capabilities exclude it or a known vendor finding stands in the
  // way (counted, and said at the end); then holds the run to check_run's verdict.
  void run_case(const Case& given, const RunOptions& options, std::size_t calls, std::uint64_t seed_step = 1) {
    const Case c = fitted(given);
    if (!capabilities_.supports(c)) return;
    const std::string_view finding = known_finding(GetParam(), c, options);
    if (!finding.empty()) {
      ++left_out_;
      left_out_because_ = finding;
      return;
    }
    ++ran_;
    note(check_run(c, backend_->run(c, options), calls, seed_step));
  }

  // `c` on the first rank count (3, 4, 2, 5, 1) the backend runs it on with no known finding in
  // the way; nullopt when there is none (the finding, if one stood in the way, is kept for the skip).
  std::optional<Case> runnable(Case c, const RunOptions& options, std::vector<int> wanted = {3, 4, 2, 5, 1}) {
    for (int nranks : rank_counts(capabilities_, std::move(wanted))) {
      c.nranks = nranks;
      c.root = std::min(c.root, nranks - 1);
      c = fitted(c);
      if (!capabilities_.supports(c)) continue;
      const std::string_view finding = known_finding(GetParam(), c, options);
      if (finding.empty()) return c;
      ++left_out_;
      left_out_because_ = finding;
    }
    return std::nullopt;
  }

  void note(const std::string& failure) {
    if (failure.empty()) return;
    if (failures_.size() < kShownFailures) failures_.push_back(failure);
    ++failed_;
  }

  // The test's verdict: fails with the failures found, skips when no case could run. The words
  // "does not hold on" are what ctest looks for where a mutant must fail (EXPECT_FAILURE).
  void conclude(const std::string& why_nothing_ran) {
    if (ran_ == 0 && left_out_ > 0) GTEST_SKIP() << GetParam() << ": every case is left out: " << left_out_because_;
    if (ran_ == 0) GTEST_SKIP() << GetParam() << ": " << why_nothing_ran;
    std::printf("%s: %d cases ran, %d left out%s%s\n", GetParam().c_str(), ran_, left_out_,
                left_out_ > 0 ? ", as " : "", std::string(left_out_because_).c_str());
    std::string shown;
    for (const std::string& failure : failures_) shown += failure + "\n";
    if (failed_ > 0) {
      ADD_FAILURE() << test_name() << " does not hold on " << GetParam() << ": " << failed_ << " of " << ran_
                    << " cases failed; the first:\n"
                    << shown;
    }
  }

  static std::string test_name() { return ::testing::UnitTest::GetInstance()->current_test_info()->name(); }

  std::unique_ptr<Backend> backend_;
  Capabilities capabilities_;
  int ran_ = 0, failed_ = 0, left_out_ = 0;
  std::string_view left_out_because_;
  std::vector<std::string> failures_;
};

// Every collective it runs on 1 to 5 ranks (in-process backends also on 7, 8 and 12: a prime, a
// power of two and a product of small primes, where hierarchical and radix algorithms break):
// every dtype, op and root, counts from 0 up, exact values bit for bit, real and special ones
// within the oracle's bound; in-process backends also every dtype with every op on 3 ranks.
TEST_P(Conformance, MatchesTheOracleOnFixedCases) {
  const bool in_process =
      GetParam().find("@sim") != std::string::npos || GetParam().find("@cuda-host") != std::string::npos;
  std::vector<int> wanted = {1, 2, 3, 4, 5};
  if (in_process) wanted.insert(wanted.end(), {7, 8, 12});
  for (int nranks : rank_counts(capabilities_, wanted)) {
    for (Collective collective : capabilities_.collectives) {
      // The v-collectives up to 5 ranks: a count per ordered pair makes the larger worlds cost
      // minutes under the sanitizers with small chunks; random cases and the proofs (up to 33
      // ranks) cover the rest.
      if (per_rank_counts(collective) && nranks > 5) continue;
      std::vector<Case> cases = oracle_cases(capabilities_, collective, nranks);
      if (in_process && nranks == 3) {
        for (const Case& c : every_dtype_and_op_cases(capabilities_, collective, nranks)) cases.push_back(c);
      }
      for (const Case& c : cases) {
        RunOptions options;
        options.schedule_seed = c.seed;
        run_case(c, options, 1);
      }
    }
  }
  conclude("no fixed case is within its capabilities");
}

// A training loop: three calls back to back on the same buffers, call k on the inputs of the
// case with seed + k, each call's outputs right.
TEST_P(Conformance, RepeatedCallsEachMatchTheirOwnInputs) {
  RunOptions options;
  options.calls = 3;
  for (int nranks : rank_counts(capabilities_, {2, 3})) {
    for (Collective collective : capabilities_.collectives) {
      for (bool in_place : {false, true}) {
        Case c = plain_case(capabilities_, nranks, 37);
        c.collective = collective;
        c.in_place = in_place;
        c.root = nranks - 1;
        run_case(c, options, 3);
      }
    }
  }
  conclude("it runs no repeated case");
}

// Timed runs (collcheck bench): the mean seconds per call are positive, a checked run returns
// every timed call's outputs (out of place, all the same), an unchecked one none.
TEST_P(Conformance, TimedRunsReportSecondsAndCheckedOutputs) {
  RunOptions options;
  options.timed = true;
  options.warmup = 2;
  options.iterations = 3;
  options.checked = true;
  for (Collective collective : capabilities_.collectives) {
    Case shape = plain_case(capabilities_, 1, 250);
    shape.collective = collective;
    const std::optional<Case> c = runnable(shape, options);
    if (!c) continue;
    ++ran_;
    const RepeatedRun checked = backend_->run(*c, options);
    note(check_run(*c, checked, 3, 0));
    if (checked.outcome == Outcome::Ok && !(checked.seconds > 0)) {
      note(to_string(*c) + ": a checked timed run reports " + std::to_string(checked.seconds) + " s per call");
    }
    RunOptions unchecked = options;
    unchecked.checked = false;
    const RepeatedRun run = backend_->run(*c, unchecked);
    if (run.outcome != Outcome::Ok || !(run.seconds > 0) || !run.calls.empty()) {
      note(to_string(*c) + ": an unchecked timed run: " + std::string(name(run.outcome)) + " " + run.error + ", " +
           std::to_string(run.seconds) + " s, " + std::to_string(run.calls.size()) + " calls' results");
    }
  }
  conclude("it runs no timed case");
}

// Inputs given rank by rank (the composition property's way) replace the generated ones: the
// outputs are those of the given inputs, here another seed's.
TEST_P(Conformance, GivenInputsReplaceTheGeneratedOnes) {
  for (Collective collective : capabilities_.collectives) {
    Case shape = plain_case(capabilities_, 1, 11);
    shape.collective = collective;
    const std::optional<Case> generated = runnable(shape, {});
    if (!generated) continue;
    Case given = *generated;
    given.seed = generated->seed + 1000;
    const InputGenerator inputs(given);
    std::vector<std::vector<std::byte>> buffers(static_cast<std::size_t>(given.nranks));
    for (int rank = 0; rank < given.nranks; ++rank) {
      auto& buffer = buffers[static_cast<std::size_t>(rank)];
      buffer.resize(input_elements(given, rank) * size_of(given.dtype));
      inputs.fill(rank, 0, buffer);
    }
    RunOptions options;
    options.inputs = &buffers;
    ++ran_;
    note(check_run(given, backend_->run(*generated, options), 1));
  }
  conclude("it runs no case with given inputs");
}

// In place (NCCL's layout: the input inside the output, or the output inside the input), at
// several misalignments; the result as out of place.
TEST_P(Conformance, InPlaceMatchesTheOracle) {
  if (!capabilities_.in_place) GTEST_SKIP() << GetParam() << " does not run in place (Capabilities::in_place)";
  for (int nranks : rank_counts(capabilities_, {1, 3, 4})) {
    for (Collective collective : capabilities_.collectives) {
      for (const Case& c : in_place_cases(capabilities_, collective, nranks)) run_case(c, {}, 1);
    }
  }
  conclude("no in-place case is within its capabilities");
}

// Nothing is written just before or after any buffer, at every misalignment and dtype size.
TEST_P(Conformance, GuardZonesHoldAtEveryMisalignment) {
  for (int nranks : rank_counts(capabilities_, {2, 5})) {
    for (Collective collective : capabilities_.collectives) {
      for (const Case& c : misaligned_cases(capabilities_, collective, nranks)) run_case(c, {}, 1);
    }
  }
  conclude("no misaligned case is within its capabilities");
}

// A hook that loses every message and sets the run's deadline.
class LoseEverything final : public LinkHook {
 public:
  explicit LoseEverything(double deadline) : deadline_(deadline) {}
  SendDecision on_send(const Message&, std::span<std::byte>) override { return {true, 0}; }
  double deadline() const override { return deadline_; }

 private:
  double deadline_;
};

// A wait for a message that never comes gives up by itself before the deadline: every rank
// reports an error (`detected`, not `hang`), soon; and the next case on the same backend is right.
TEST_P(Conformance, LostMessagesAreDetectedBeforeTheDeadline) {
  if (!capabilities_.hook) {
    GTEST_SKIP() << GetParam() << " takes no LinkHook (Capabilities::hook): its messages cannot be lost on purpose "
                 << "here; vendors' own timeouts are tested with the vendor, faults on their sockets by faults_sockets";
  }
  constexpr double kDeadline = 0.3;
  LoseEverything hook(kDeadline);
  RunOptions options;
  options.hook = &hook;
  options.deadline = kDeadline;
  const std::optional<Case> runs = runnable(plain_case(capabilities_, 1, 30), options, {3, 4, 2});
  if (!runs) GTEST_SKIP() << GetParam() << " runs no case on 2 to 4 ranks: it sends no message " << left_out_because_;
  const Case& c = *runs;
  const auto start = std::chrono::steady_clock::now();
  const RepeatedRun lost = backend_->run(c, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (lost.outcome != Outcome::Detected || lost.error.empty()) {
    note(to_string(c) + " with every message lost: " + std::string(name(lost.outcome)) + " (" + lost.error + ")");
  }
  if (seconds > 10 * kDeadline + 2) note("with every message lost, the run took " + std::to_string(seconds) + " s");
  ++ran_;
  note(check_run(c, backend_->run(c, {}), 1));
  conclude("");
}

// A case outside its capabilities (a collective, dtype or op it does not list, a rank count it
// does not take) is refused with an error, never run as `ok`; the backend runs on afterwards.
TEST_P(Conformance, CasesOutsideItsCapabilitiesAreRefused) {
  const std::vector<Case> refused = refused_cases(capabilities_);
  if (refused.empty())
    GTEST_SKIP() << GetParam() << " lists every collective, dtype, op and rank count: nothing to refuse";
  for (const Case& c : refused) {
    ++ran_;
    const RepeatedRun run = backend_->run(c, {});
    if (run.outcome == Outcome::Ok || run.error.empty()) {
      note(to_string(c) + ": not refused (" + std::string(name(run.outcome)) + ", error '" + run.error + "')");
    }
  }
  if (const std::optional<Case> c = runnable(plain_case(capabilities_, 1, 5), {})) run_case(*c, {}, 1);
  conclude("");
}

// `ring@sim:chunk=4` -> ring_sim_chunk_4: GoogleTest names are letters, digits and underscores.
std::string test_name_of(const ::testing::TestParamInfo<std::string>& info) {
  std::string out = info.param;
  for (char& ch : out) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return out;
}

// Evaluated as GoogleTest starts (InitGoogleTest), after main has read --backend.
INSTANTIATE_TEST_SUITE_P(Backend, Conformance, ::testing::ValuesIn(expand(spec_under_test())), test_name_of);

}  // namespace
}  // namespace collcheck::conformance
