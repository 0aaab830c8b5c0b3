// Named predicates over one case run on one backend: the oracle, rank agreement, determinism,
// in-place, composition, buffer safety, repeat; and under faults safety, liveness, recovery and
// reliability. Each has a one-line doc; every run is classed as one Outcome.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "impls/backend/backend.h"

namespace collcheck {

struct PropertyResult {
  bool ok = true;
  bool skipped = false;  // does not apply to this case or backend (not a pass)
  std::string detail;    // on failure: what differs, where; on skip: why
};

struct PropertyContext {
  std::uint64_t schedule_seed = 0;  // the interleaving of the base run
  // The fault plan every run of the case is under, as text (faults/plan.h), passed on in
  // RunOptions::fault_plan to the properties' extra runs too; empty: a clean run.
  std::string fault_plan = {};
  bool transient = false;               // every fault of the plan heals by itself (see faults docs)
  double deadline = 0;                  // RunOptions::deadline of every run
  std::uint64_t message_memory = 0;     // RunOptions::message_memory of every run
  std::optional<Outcome> outcome = {};  // the base run's class, when the caller has it already
  // The check's time budget ran out during the base run: no property runs the case again (a hang
  // then costs one deadline past the budget, not one per property).
  bool budget_spent = false;

  bool under_faults() const { return !fault_plan.empty(); }
  // Options for one more run of the case under the same faults and deadline.
  RunOptions run_options(std::uint64_t seed, int calls = 1) const;
};

// What a run of `c` (generated inputs, `calls` back to back) ended as: the backend's own
// outcome, except that Ok with any rank's output off the oracle (or missing) is Corrupt.
Outcome classify(const Case& c, const RepeatedRun& run);

// Every property sees the base run of the case (its first call) and may run the backend again.
// `check` judges it by the property's `predicate`, except a base run the backend refused
// (RunEnding::refused): the case was outside what the backend takes, so every property skips it
// with the backend's reason, and no refusal is ever a failure, a shrink step or a false alarm.
struct Property {
  std::string_view name;
  std::string_view doc;
  PropertyResult (*predicate)(const Case&, Backend&, const RepeatedRun& base, const PropertyContext&);
  bool runs_again = false;  // the predicate runs the case again (skipped once the budget is spent)

  PropertyResult check(const Case&, Backend&, const RepeatedRun& base, const PropertyContext&) const;
};

std::span<const Property> all_properties();
const Property* find_property(std::string_view name);
std::string property_names();

}  // namespace collcheck
