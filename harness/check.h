// The property loop behind `collcheck check`: random cases per backend within a time budget,
// every property on every case, and each failure shrunk to the smallest case that still fails
// (under `--faults random`, a plan per case, drawn and shrunk together with it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "harness/case_generator.h"
#include "harness/fault_generator.h"
#include "harness/memory_check.h"
#include "impls/backend/backend.h"

namespace collcheck {

// One share of a campaign across hosts (harness/campaign.h): of every backend's stream of cases,
// the cases whose index i has i mod count == index. Which case goes where depends only on the
// case's index and the count, and a case is the same whoever draws it (Draws), so the shares
// together are exactly the stream one process would run.
struct CaseShare {
  std::size_t index = 0, count = 1;
};

struct CheckOptions {
  CaseLimits limits;
  // Per backend; 0: as many as the budget allows. In a campaign, the stream's first `cases`
  // cases, shared out among the shares.
  std::size_t cases = 0;
  CaseShare share;  // the whole stream unless this process runs one share of a campaign
  // Threads that run cases at once, each on its own instance of the backend (where its instances
  // allow it and make_backend is set); 0: one. The report is the same for any number.
  unsigned jobs = 0;
  std::uint64_t seed = 0;
  double time_budget = 60;              // seconds for all backends together
  std::vector<std::string> properties;  // empty: every property
  bool stop_at_first_failure = false;   // per backend: move on once one property failed
  // Distinct failures (groups) shrunk and reported, over all backends; failing cases of further
  // groups are counted, not shrunk.
  std::size_t max_failures = 10;
  double deadline = 0;  // seconds per run before it is a hang; 0: the backend's default
  // --faults as given (parse_fault_choice): a plan for every run, `random` or `random:KIND,...`
  // for a plan per case drawn from a swarm; empty: none. Backends must be wrapped by
  // with_faults() to take them.
  std::string faults;
  // Lockstep (every rank of a launched world runs this loop): returns rank 0's value of its
  // argument, so decisions that depend on the clock are taken once, by rank 0, and verdicts
  // can be compared. Unset: a single process.
  std::function<std::uint64_t(std::uint64_t)> agree;
  // Makes a backend from a spec as the user's were made (harness/draws.h): set, each case also
  // draws the knobs its backend leaves free and runs on the backend with them; unset: the
  // backends as given.
  std::function<Result<std::unique_ptr<Backend>>(const std::string& spec)> make_backend;
  // What every run may hold (CaseSetting::memory); no bytes: no bound.
  cli::MemoryBudget memory = {};
};

// A group of failing cases that share a signature — backend, property, the base run's outcome,
// the shrunk case's collective and the shape of what the property saw (its detail with every
// number taken out) — shrunk once, from the first of them, and reported once with their count.
struct Failure {
  std::string backend;  // the spec it failed on, drawn knobs included
  Collective collective = Collective::AllReduce;
  std::string property;
  Case shrunk;
  Case original;
  std::string knobs;  // the drawn knobs of the shrunk case (in `backend` too); empty: none
  std::uint64_t schedule_seed = 0;
  std::string detail;           // what the property saw on the shrunk case
  std::string replay;           // the command that reruns it
  std::size_t cases_until = 0;  // cases run on the backend until this one failed
  double seconds_until = 0;     // seconds from the backend's first case until then (before shrinking)
  std::size_t shrink_runs = 0;
  std::size_t count = 1;  // failing cases (case × property) in the group
  std::string signature;
  FaultPlan plan;  // the (shrunk) plan it failed under; empty: none
};

// How many base runs ended in each outcome, indexed by Outcome.
struct OutcomeCounts {
  std::array<std::size_t, 5> runs = {};
  std::size_t total() const;
};

struct Tally {
  std::size_t cases = 0, passed = 0, failed = 0, skipped = 0;
};

struct CheckReport {
  std::uint64_t seed = 0;
  double seconds = 0;
  std::vector<std::string> backends;
  std::map<std::pair<std::string, Collective>, Tally> table;  // backend × collective
  std::map<std::tuple<std::string, Collective, std::string>, Tally> per_property;
  std::map<std::tuple<std::string, Collective, std::string>, std::string> first_failure;
  std::vector<Failure> failures;        // one per group, in the order their first cases failed
  std::size_t unreported_failures = 0;  // failing cases of groups beyond --max-failures
  // Backends that could not run here (Backend::cannot_run_here), with why; their cases stop.
  std::map<std::string, std::string> cannot_run_here;
  // Per backend, the cases it refused when they ran (RunEnding::refused: a precondition met late,
  // not a finding), with the first one's reason; they are not in the table (nothing judged them).
  struct Refusals {
    std::size_t cases = 0;
    std::string first;
  };
  std::map<std::string, Refusals> refused;
  // Under faults: describe(FaultChoice), and backend × fault kind → outcomes of the base runs
  // whose plan holds that kind (a run counts under every kind of its plan). Empty: no faults.
  std::string faults;
  std::map<std::pair<std::string, std::string>, OutcomeCounts> outcomes;
  // A campaign's merged report (harness/campaign.h): how many shares ran, and those whose report
  // did not reach rank 0 by the merge deadline. 1 and none: one process ran the whole stream.
  struct MissingShare {
    std::size_t index = 0;
    std::string host, why;
  };
  std::size_t shares = 1;
  std::vector<MissingShare> missing_shares;

  Tally total() const;
};

// Runs the loop. `progress`, when set, gets a progress line now and then (\r-terminated).
CheckReport run_check(const CheckOptions&, std::vector<std::unique_ptr<Backend>>& backends, std::ostream* progress);

// The command that replays a failure: `collcheck replay --backend B --schedule-seed S 'CASE'`,
// with `--faults 'PLAN'` when the plan is not empty.
std::string replay_command(const std::string& backend, const Case&, std::uint64_t schedule_seed,
                           const std::string& property, const FaultPlan& plan = {});

}  // namespace collcheck
