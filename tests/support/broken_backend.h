// Test helpers for finding-power tests: a backend made from its spec, and one wrapped to be wrong
// only where a predicate says (its runs there end `outcome_`, a crash unless set otherwise), so a
// test can prove that the check loop draws, catches and shrinks toward exactly that kind of case.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "harness/check.h"
#include "impls/registry.h"

namespace collcheck::testing {

// A check of `cases` cases of `seed`, on at most `max_ranks` ranks and `max_count` elements, with a
// time budget that is never the limit (the sanitizer builds run ten times slower).
inline CheckOptions bounded_options(std::uint64_t seed, std::size_t cases, int max_ranks, std::size_t max_count) {
  CheckOptions options;
  options.seed = seed;
  options.cases = cases;
  options.time_budget = 600;
  options.limits.max_ranks = max_ranks;
  options.limits.max_count = max_count;
  return options;
}

// How finding-power tests check a broken backend: ranks low..high, 300 cases of at most 256
// elements, liveness alone, stopping at the first failure.
inline CheckOptions broken_options(int low, int high, std::uint64_t seed) {
  CheckOptions options = bounded_options(seed, 300, high, 256);
  options.limits.min_ranks = low;
  options.properties = {"liveness"};
  options.stop_at_first_failure = true;
  return options;
}

inline std::unique_ptr<Backend> backend_of(const std::string& spec) {
  auto made = make_backends(spec);
  EXPECT_TRUE(made.ok()) << made.error().text();
  return made.ok() ? std::move(made.value().front()) : nullptr;
}

// A backend that hands everything to the one it wraps; a test's wrapper overrides what it breaks.
class Forwarding : public Backend {
 public:
  explicit Forwarding(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  Capabilities capabilities() const override { return inner_->capabilities(); }
  RepeatedRun run(const Case& c, const RunOptions& options) override { return inner_->run(c, options); }
  MemoryEstimate estimate_memory(const Case& c, EstimateFor run) const override {
    return inner_->estimate_memory(c, run);
  }
  void abort() override { inner_->abort(); }
  std::string cannot_run_here() const override { return inner_->cannot_run_here(); }

 private:
  std::unique_ptr<Backend> inner_;
};

// A backend wrong only where `broken` says, on every case there: the run ends `outcome_`.
class BrokenWhere final : public Forwarding {
 public:
  BrokenWhere(std::unique_ptr<Backend> inner, std::function<bool(const Case&)> broken)
      : Forwarding(std::move(inner)), broken_(std::move(broken)) {}
  Capabilities capabilities() const override {
    Capabilities capabilities = Forwarding::capabilities();
    if (adjust_) adjust_(capabilities);
    return capabilities;
  }
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    if (broken_(c)) return RepeatedRun::ended(outcome_, "broken at " + std::to_string(c.nranks) + " ranks");
    return Forwarding::run(c, options);
  }
  Outcome outcome_ = Outcome::Crash;
  std::function<void(Capabilities&)> adjust_;  // what it declares beyond the inner backend's

 private:
  std::function<bool(const Case&)> broken_;
};

}  // namespace collcheck::testing
