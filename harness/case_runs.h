// Running drawn cases without counting them: one case's base run and every property on it, and
// a batch of cases on every core (a backend instance per thread), handed back in case order so
// that the loop counts them, shrinks and reports exactly as if one thread had run them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/draws.h"
#include "harness/memory_check.h"
#include "properties/property.h"

namespace collcheck {

using Clock = std::chrono::steady_clock;

// What every run of one case is under: its schedule seed, the deadline per run (0: the
// backend's default), its fault plan and the room its messages have (0: no bound).
PropertyContext context_for(double deadline, std::uint64_t schedule_seed, const FaultPlan& plan,
                            std::uint64_t message_memory = 0);

// One case as it ran, nothing counted yet.
struct CaseRun {
  bool ran = false;             // false: not run (the deadline came first)
  std::string cannot_run_here;  // the backend found it cannot run on this machine (Backend::cannot_run_here)
  std::string refused;          // the backend refused the case when it ran (RunEnding::refused): why
  Outcome base_outcome = Outcome::Ok;
  std::optional<Outcome> classified;    // under faults: the base run's outcome class
  std::vector<PropertyResult> results;  // per property, in order
  double finished = 0;                  // seconds from `start` until it was done

  bool failed() const {  // a property judged the case and it did not hold
    for (const PropertyResult& result : results) {
      if (!result.skipped && !result.ok) return true;
    }
    return false;
  }
};

// What the loop runs every case under.
struct CaseSetting {
  std::vector<const Property*> properties;
  bool faults = false;  // classify the base run's outcome
  double deadline = 0;  // per run
  Clock::time_point start;
  // Whether the time budget has run out (in lockstep, as rank 0's clock says): asked once per case
  // after its base run (PropertyContext::budget_spent); unset: never.
  std::function<bool()> spent = {};
  // What every run may hold (--memory-limit, or what the machine has available): each case's
  // messages get what its estimate leaves them (message_room); no bytes: no bound.
  cli::MemoryBudget memory = {};
  // The loop stops at the first failed case (CheckOptions::stop_at_first_failure): once one has
  // failed, the workers take no later case, which would not be counted.
  bool stop_at_failure = false;
};

CaseRun run_case(const CaseSetting& setting, Backend& backend, const DrawnCase& drawn, std::uint64_t schedule_seed);

// The threads' own backends: an instance of the user's backend per thread, made as the user's
// was (`make`), with the backends of its drawn knobs.
class CaseWorkers {
 public:
  // `threads` workers when the backend's instances may run at once (Capabilities::
  // independent_instances) and `make` makes them; none otherwise (the caller runs cases itself).
  CaseWorkers(const Backend& backend, const BackendMaker& make, unsigned threads);
  bool any() const { return !workers_.empty(); }
  std::size_t size() const { return workers_.size(); }

  // Runs every case (its schedule seed `seeds[k]`) on the workers, each case once, until all
  // ran, `deadline` passed or (setting.stop_at_failure) one failed; the runs come back in the
  // order of `cases`, those not run with `ran` false. The cases are values,
  // not RapidCheck's shrinkables: those are evaluated on the calling thread only (RapidCheck's
  // generation state is not thread-safe).
  std::vector<CaseRun> run(const CaseSetting& setting, const std::vector<DrawnCase>& cases,
                           const std::vector<std::uint64_t>& seeds, Clock::time_point deadline);
  void release();

 private:
  struct Worker {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<Runners> runners;
  };
  std::vector<Worker> workers_;
};

}  // namespace collcheck
