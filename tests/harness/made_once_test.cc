// What a case makes once while it is checked, for all of its runs (the determinism run, in place,
// the repeated calls): its inputs (InputMemo) and, on `@sim`, its schedule. Each is held to being
// made once, and to every run still getting its own case's.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "harness/check.h"
#include "impls/registry.h"
#include "impls/sim/sim_backend.h"
#include "reference/inputs.h"
#include "tests/support/broken_backend.h"

namespace collcheck {
namespace {

// Watches the inputs kept while a case is checked (InputMemo): whether a memo is in use, whether
// it starts empty, and whether a run of the same case as the run before finds every rank's input
// already made.
class WatchesKeptInputs final : public testing::Forwarding {
 public:
  using Forwarding::Forwarding;
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    const InputMemo* memo = InputMemo::current();
    if (memo == nullptr) {
      ++without_memo;
    } else {
      if (memo->held() == 0) ++empty_memo;
      if (last_case_ && same_inputs(*last_case_, c)) {
        ++same_as_before;
        bool every_rank = true;
        for (int rank = 0; rank < c.nranks; ++rank) every_rank = every_rank && !memo->find(c, rank).empty();
        if (every_rank) ++found_kept;
      }
    }
    // Given inputs are not the generator's: the next run has nothing of this one's to find.
    last_case_ = options.inputs == nullptr ? std::optional<Case>(c) : std::nullopt;
    return Forwarding::run(c, options);
  }
  int without_memo = 0, empty_memo = 0, same_as_before = 0, found_kept = 0;

 private:
  std::optional<Case> last_case_;
};

// Checking a case makes its inputs once: each case starts with an empty memo of its own, and every
// later run of the same inputs (another interleaving, in place, the repeated calls) finds them kept.
TEST(Check, ACaseInputsAreMadeOnceWhileItIsChecked) {
  Result<std::vector<std::unique_ptr<Backend>>> made = make_backends("ring@sim");
  ASSERT_TRUE(made.ok() && made->size() == 1u);
  std::vector<std::unique_ptr<Backend>> list = std::move(made).value();
  auto watching = std::make_unique<WatchesKeptInputs>(std::move(list.front()));
  const WatchesKeptInputs& watched = *watching;
  list.front() = std::move(watching);
  CheckOptions o = testing::bounded_options(3, 30, 16, 4096);
  o.limits.min_count = 1;
  o.limits.collectives = {Collective::AllReduce, Collective::AllGather};
  const CheckReport report = run_check(o, list, nullptr);
  EXPECT_TRUE(report.failures.empty());
  ASSERT_GE(report.total().cases, 20u);
  EXPECT_EQ(watched.without_memo, 0);
  EXPECT_EQ(static_cast<std::size_t>(watched.empty_memo), report.total().cases);
  EXPECT_GE(static_cast<std::size_t>(watched.same_as_before), 2 * report.total().cases);
  EXPECT_EQ(watched.found_kept, watched.same_as_before);
}

// The cases a backend is asked to run, in order.
class RecordsRuns final : public testing::Forwarding {
 public:
  explicit RecordsRuns(std::unique_ptr<Backend> inner) : Forwarding(std::move(inner)) {}
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    runs.push_back(c);
    return Forwarding::run(c, options);
  }
  std::vector<Case> runs;
};

// A case's schedule is made once for all of its runs on `@sim` (the determinism run, the repeated
// calls, ...), and another case's, even one that differs from it in a single field (in place, a
// root), is made anew: the check finds nothing wrong only if every run simulated its own case's
// schedule.
TEST(Check, ACaseScheduleIsMadeOnceForItsRuns) {
  Result<SimVariant> ring = algorithm_variant("ring");
  ASSERT_TRUE(ring);
  auto made = std::make_shared<std::vector<Case>>();
  SimVariant counted = *ring;
  counted.schedule = [made, make = ring->schedule](const Case& c, const Knobs& knobs) {
    made->push_back(c);
    return make(c, knobs);
  };
  auto recording = std::make_unique<RecordsRuns>(make_sim_backend(counted, Knobs{}, "ring@sim"));
  const RecordsRuns& recorded = *recording;
  std::vector<std::unique_ptr<Backend>> list;
  list.push_back(std::move(recording));
  CheckOptions o = testing::bounded_options(5, 30, 16, 4096);
  o.limits.min_count = 1;
  o.limits.collectives = {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter};
  const CheckReport report = run_check(o, list, nullptr);
  EXPECT_TRUE(report.failures.empty()) << report.failures.front().detail;
  ASSERT_EQ(report.total().cases, 30u);
  // Every case run had its schedule made, and only those; none made again before four others
  // were (the backend keeps the last four cases' schedules), so most runs made nothing.
  for (const Case& run : recorded.runs) EXPECT_NE(std::find(made->begin(), made->end(), run), made->end());
  for (const Case& shape : *made)
    EXPECT_NE(std::find(recorded.runs.begin(), recorded.runs.end(), shape), recorded.runs.end());
  for (std::size_t i = 0; i < made->size(); ++i) {
    for (std::size_t j = i + 1; j < made->size() && j <= i + 4; ++j)
      EXPECT_FALSE((*made)[i] == (*made)[j]) << i << ", " << j;
  }
  EXPECT_LT(3 * made->size(), 2 * recorded.runs.size())
      << made->size() << " schedules made for " << recorded.runs.size() << " runs";
}

// Nothing is kept past the case: the schedules live in the case's memo, so a run outside a check
// (no memo in use) makes its own, every time, and a case checked again makes them again.
TEST(Check, ACaseScheduleIsKeptOnlyWhileTheCaseIsChecked) {
  Result<SimVariant> ring = algorithm_variant("ring");
  ASSERT_TRUE(ring);
  auto made = std::make_shared<int>(0);
  SimVariant counted = *ring;
  counted.schedule = [made, make = ring->schedule](const Case& c, const Knobs& knobs) {
    ++*made;
    return make(c, knobs);
  };
  const std::unique_ptr<Backend> backend = make_sim_backend(counted, Knobs{}, "ring@sim");
  Case c;
  c.collective = Collective::AllReduce;
  c.nranks = 4;
  c.count = 64;
  RunOptions options;
  for (int run = 1; run <= 3; ++run) {
    ASSERT_EQ(backend->run(c, options).outcome, Outcome::Ok);
    EXPECT_EQ(*made, run);
  }
  for (int checked = 1; checked <= 2; ++checked) {
    InputMemo memo(std::uint64_t{1} << 20);
    const InputMemo::Use use(memo);
    ASSERT_EQ(backend->run(c, options).outcome, Outcome::Ok);
    ASSERT_EQ(backend->run(c, options).outcome, Outcome::Ok);
    EXPECT_EQ(*made, 3 + checked);
  }
}

}  // namespace
}  // namespace collcheck
