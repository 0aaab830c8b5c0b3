// The check loop: cases drawn from RapidCheck's generator with a seed per backend (under
// `--faults random` each with its own plan), the base run shared by the properties, its outcome
// counted per fault kind, and greedy shrinking of case and plan along RapidCheck's shrink tree.
// Every property is checked on every case; failures are grouped by signature, and each group is
// shrunk once, from its first case.
#include "harness/check.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "harness/case_runs.h"
#include "harness/draws.h"
#include "harness/failure_groups.h"
#include "properties/property.h"
#include "reference/numbers.h"
#include "reference/random.h"

namespace collcheck {
namespace {

constexpr std::size_t kMaxShrinkRuns = 400;
// Groups of one backend, property, outcome and collective shrunk at most: details that keep
// changing shape past this are counted, not shrunk again.
constexpr std::size_t kMaxShrinksPerKind = 4;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::vector<const Property*> selected_properties(const CheckOptions& options) {
  std::vector<const Property*> selected;
  for (const Property& p : all_properties()) {
    if (options.properties.empty() ||
        std::find(options.properties.begin(), options.properties.end(), p.name) != options.properties.end()) {
      selected.push_back(&p);
    }
  }
  return selected;
}

// Whether the clock has passed `deadline`: in lockstep, as rank 0's clock says.
bool past(const CheckOptions& options, Clock::time_point deadline) {
  const bool passed = Clock::now() >= deadline;
  return options.agree ? options.agree(passed) != 0 : passed;
}

// Lockstep: every rank saw the same runs, so it must reach the same verdicts as rank 0.
void agree_on_verdict(const CheckOptions& options, const Case& c, bool failed, const std::string& detail) {
  if (!options.agree) return;
  const std::uint64_t mine = mix64(hash_text(to_string(c)) ^ hash_text(detail) ^ (failed ? 1 : 0));
  if (options.agree(mine) == mine) return;
  std::fprintf(stderr, "collcheck check: this rank's verdict on '%s' differs from rank 0's; stopping\n",
               to_string(c).c_str());
  std::abort();
}

// The property on one case, and the kind of its failure (when it fails).
std::pair<PropertyResult, FailureKind> run_property(const Property& property, const DrawnCase& drawn, Backend& backend,
                                                    std::uint64_t schedule_seed, const CheckOptions& options) {
  const PropertyContext context =
      context_for(options.deadline, schedule_seed, drawn.plan, cli::message_room(backend, drawn.c, options.memory));
  const RepeatedRun base = backend.run(drawn.c, context.run_options(schedule_seed));
  PropertyResult result = property.check(drawn.c, backend, base, context);
  const FailureKind kind = kind_of(base.outcome, result.detail);
  return {std::move(result), kind};
}

// A smaller case (and plan) worth running: one the backend takes, and a drawn plan valid on it.
bool worth_running(const DrawnCase& candidate, Backend& backend, const FaultChoice& faults) {
  if (!backend.capabilities().supports(candidate.c) || !validate(candidate.c)) return false;
  return !faults.random || validate(candidate.plan, candidate.c.nranks).ok();
}

// Walks down the shrink tree: the first smaller case that still fails the same way (`kind`)
// becomes the current one.
Failure shrink(const Drawn& failing, const Property& property, const FailureKind& kind, Runners& runners,
               std::uint64_t schedule_seed, std::string detail, Clock::time_point deadline, const CheckOptions& options,
               const FaultChoice& faults) {
  Failure failure;
  Drawn current = failing;
  bool smaller = true;
  while (smaller && failure.shrink_runs < kMaxShrinkRuns && !past(options, deadline)) {
    smaller = false;
    rc::Seq<Drawn> candidates = current.shrinks();
    while (auto next = candidates.next()) {
      const DrawnCase candidate = next->value();
      Backend& backend = runners.at(candidate.knobs);
      if (!worth_running(candidate, backend, faults)) continue;
      ++failure.shrink_runs;
      const auto [result, candidate_kind] = run_property(property, candidate, backend, schedule_seed, options);
      if (!backend.cannot_run_here().empty()) break;  // not a verdict: the failure stays as it was
      agree_on_verdict(options, candidate.c, !result.ok, result.detail);
      if (!result.ok && candidate_kind == kind) {
        current = *next;
        detail = result.detail;
        smaller = true;
        break;
      }
      if (failure.shrink_runs >= kMaxShrinkRuns || past(options, deadline)) break;
    }
  }
  failure.shrunk = current.value().c;
  failure.plan = current.value().plan;
  failure.knobs = current.value().knobs;
  failure.original = failing.value().c;
  failure.detail = std::move(detail);
  return failure;
}

void print_progress(std::ostream& out, std::size_t cases, std::size_t failures, double left) {
  char line[128];
  std::snprintf(line, sizeof line, "\rcases %zu, failures %zu, %.0f s left   ", cases, failures, std::max(left, 0.0));
  out << line << std::flush;
}

// A base run under faults, counted under every kind its plan holds.
void count_outcome(CheckReport& report, const std::string& backend, const FaultPlan& plan, Outcome outcome) {
  std::set<std::string> kinds;
  for (const Fault& f : plan.faults) kinds.insert(std::string(to_string(f.kind)));
  if (kinds.empty()) kinds.insert("none");
  for (const std::string& kind : kinds) ++report.outcomes[{backend, kind}].runs[static_cast<std::size_t>(outcome)];
}

// How one case went over every selected property.
struct CaseVerdict {
  bool failed = false, all_skipped = true;
  bool cannot_run_here = false;  // the backend found it cannot run on this machine
  bool refused = false;          // the backend refused the case when it ran
};

// One case of one backend: the base run, its outcome under faults, every property, and each
// failure into its group.
struct Loop {
  const CheckOptions& options;
  FaultChoice faults;
  std::vector<const Property*> properties;
  Clock::time_point deadline;
};

// One backend's part of the loop: its name (the user's spec), the backends its drawn knobs run on,
// its failure groups, and when its first case started.
struct BackendLoop {
  std::string name;
  Runners runners;
  FailureGroups groups;
  Clock::time_point start = Clock::now();
};

// A property's failure on one case, as the loop saw it.
struct FailureSeen {
  const Property& property;
  std::string detail;
  Outcome outcome;
  std::size_t case_index;
  std::uint64_t schedule_seed;
  double seconds_until;
};

// Counts the failure into the group its signature names; a new signature is shrunk, and joins the
// group of its shrunk signature or starts a new one (while there are fewer than --max-failures).
void record_failure(const Loop& loop, BackendLoop& backend, const Drawn& drawn, const DrawnCase& value,
                    const FailureSeen& seen, CheckReport& report) {
  FailureGroups& groups = backend.groups;
  const std::string kind = failure_kind(backend.name, seen.property.name, seen.outcome, value.c.collective);
  const std::string first_signature = kind + "\n" + detail_shape(seen.detail);
  if (const auto found = groups.by_signature.find(first_signature); found != groups.by_signature.end()) {
    ++report.failures[found->second].count;
    return;
  }
  std::size_t& shrinks = groups.shrinks_per_kind[kind];
  if (shrinks >= kMaxShrinksPerKind) {
    // Every shrink of this kind so far ended in one group: a new shape of its detail is that bug.
    const std::set<std::size_t>& ended_in = groups.groups_of_kind[kind];
    if (ended_in.size() == 1) {
      ++report.failures[*ended_in.begin()].count;
      groups.by_signature.emplace(first_signature, *ended_in.begin());
    } else {
      ++report.unreported_failures;
    }
    return;
  }
  if (report.failures.size() >= loop.options.max_failures) {
    ++report.unreported_failures;
    return;
  }
  ++shrinks;
  Failure failure = shrink(drawn, seen.property, kind_of(seen.outcome, seen.detail), backend.runners,
                           seen.schedule_seed, seen.detail, loop.deadline, loop.options, loop.faults);
  const std::string property_name(seen.property.name);
  failure.backend = spec_with_knobs(backend.name, failure.knobs);
  failure.collective = failure.shrunk.collective;
  failure.property = property_name;
  failure.schedule_seed = seen.schedule_seed;
  failure.cases_until = seen.case_index + 1;
  failure.seconds_until = seen.seconds_until;
  failure.signature = failure_kind(backend.name, seen.property.name, seen.outcome, failure.collective) + "\n" +
                      detail_shape(failure.detail);
  if (const auto same = groups.by_signature.find(failure.signature); same != groups.by_signature.end()) {
    ++report.failures[same->second].count;
    groups.by_signature.emplace(first_signature, same->second);
    groups.groups_of_kind[kind].insert(same->second);
    return;
  }
  failure.replay = replay_command(failure.backend, failure.shrunk, seen.schedule_seed, property_name, failure.plan);
  report.first_failure.emplace(std::tuple{backend.name, value.c.collective, property_name}, failure.detail);
  groups.by_signature.emplace(first_signature, report.failures.size());
  groups.by_signature.emplace(failure.signature, report.failures.size());
  groups.groups_of_kind[kind].insert(report.failures.size());
  report.failures.push_back(std::move(failure));
}

// Counts one case's run: its outcome under faults, every property's verdict, and each failure
// into its group.
CaseVerdict count_case(const Loop& loop, BackendLoop& user, const Drawn& drawn, const DrawnCase& value, std::size_t i,
                       const CaseRun& run, CheckReport& report) {
  const CheckOptions& options = loop.options;
  const Case& c = value.c;
  if (!run.cannot_run_here.empty()) return CaseVerdict{.cannot_run_here = true};
  if (!run.refused.empty()) return CaseVerdict{.refused = true};
  if (run.classified) count_outcome(report, user.name, value.plan, *run.classified);
  CaseVerdict verdict;
  for (std::size_t k = 0; k < run.results.size(); ++k) {
    const Property& property = *loop.properties[k];
    const PropertyResult& result = run.results[k];
    agree_on_verdict(options, c, !result.ok, result.detail);
    Tally& per = report.per_property[{user.name, c.collective, std::string(property.name)}];
    ++per.cases;
    if (result.skipped) {
      ++per.skipped;
      continue;
    }
    verdict.all_skipped = false;
    if (result.ok) {
      ++per.passed;
      continue;
    }
    ++per.failed;
    verdict.failed = true;
    const FailureSeen seen{property, result.detail, run.base_outcome, i, mix64(options.seed + i), run.finished};
    record_failure(loop, user, drawn, value, seen, report);
  }
  return verdict;
}

// Cases a worker in each batch. A batch ends when its last case does, so a worker waits there
// while another finishes a large case: with case sizes drawn over orders of magnitude, batches of
// 4 cases a worker kept two workers busy 1.3 cores of 2; batches of 64 wait so once in many cases.
constexpr std::size_t kCasesPerWorker = 64;

// The next cases of one backend (as drawn, and their values, evaluated once here) and their
// runs: one at a time on the user's backend, or a batch on every core.
struct NextCases {
  std::vector<Drawn> drawn;
  std::vector<DrawnCase> values;
  std::vector<CaseRun> runs;
};

NextCases next_runs(const Loop& loop, BackendLoop& user, Draws& draws, CaseWorkers& workers, std::size_t first,
                    Clock::time_point deadline) {
  const CheckOptions& options = loop.options;
  CaseSetting setting{loop.properties, loop.faults.any(), options.deadline, user.start};
  setting.memory = options.memory;
  setting.stop_at_failure = options.stop_at_first_failure;
  // Threads of their own never agree in lockstep: each reads the clock.
  if (workers.any()) setting.spent = [deadline] { return Clock::now() >= deadline; };
  else setting.spent = [&options, deadline] { return past(options, deadline); };
  const std::size_t step = options.share.count;  // the next case of this share is `step` on
  std::size_t batch = workers.any() ? kCasesPerWorker * workers.size() : 1;
  if (options.cases > 0) batch = std::min(batch, (options.cases - first + step - 1) / step);
  NextCases next;
  std::vector<std::uint64_t> seeds;
  for (std::size_t k = 0; k < batch; ++k) {
    next.drawn.push_back(draws.next(first + k * step));
    next.values.push_back(next.drawn.back().value());
    seeds.push_back(mix64(options.seed + first + k * step));
  }
  if (workers.any()) {
    next.runs = workers.run(setting, next.values, seeds, deadline);
  } else {
    const DrawnCase& only = next.values.front();
    next.runs.push_back(run_case(setting, user.runners.at(only.knobs), only, seeds.front()));
  }
  return next;
}

// Counts the k-th of the next cases (case number `i`) into the table; false when the backend's
// cases stop there: the case did not run (deadline), the backend cannot run here (the case not
// counted), or it failed under --stop-at-first-failure (counted).
bool count_into_table(const Loop& loop, BackendLoop& user, const NextCases& next, std::size_t k, std::size_t i,
                      CheckReport& report) {
  const CaseRun& run = next.runs[k];
  if (!run.ran) return false;
  const Collective collective = next.values[k].c.collective;
  Tally& cell = report.table[{user.name, collective}];
  const CaseVerdict verdict = count_case(loop, user, next.drawn[k], next.values[k], i, run, report);
  if (verdict.cannot_run_here) {
    if (cell.cases == 0) report.table.erase({user.name, collective});
    report.cannot_run_here[user.name] = run.cannot_run_here;
    return false;
  }
  if (verdict.refused) {  // a precondition met late: counted apart, and the backend's cases go on
    if (cell.cases == 0) report.table.erase({user.name, collective});
    CheckReport::Refusals& refusals = report.refused[user.name];
    if (refusals.cases++ == 0) refusals.first = to_string(next.values[k].c) + ": " + run.refused;
    return true;
  }
  ++cell.cases;
  if (verdict.failed) ++cell.failed;
  else if (verdict.all_skipped) ++cell.skipped;
  else ++cell.passed;
  return !(verdict.failed && loop.options.stop_at_first_failure);
}

// Every case of one backend (of this process's share) until its deadline (or --cases), counted in
// case order.
void check_backend(const Loop& loop, Backend& backend, Clock::time_point backend_deadline, CheckReport& report,
                   std::size_t& all_cases, std::ostream* progress) {
  const CheckOptions& options = loop.options;
  Draws draws(options.limits, options.seed, loop.faults, backend, static_cast<bool>(options.make_backend));
  BackendLoop user{backend.name(), Runners(backend, options.make_backend), {}};
  // One thread unless asked for more: a soak under random faults once crashed with two threads.
  const unsigned threads = options.jobs > 0 ? options.jobs : 1;
  CaseWorkers workers(backend, options.make_backend, threads);
  bool done = false;
  const std::size_t step = options.share.count;
  for (std::size_t i = options.share.index; !done && (options.cases == 0 || i < options.cases);) {
    if (past(options, backend_deadline)) break;
    const NextCases next = next_runs(loop, user, draws, workers, i, backend_deadline);
    for (std::size_t k = 0; k < next.drawn.size() && !done; ++k, i += step) {
      done = !count_into_table(loop, user, next, k, i, report);
      if (!done) ++all_cases;
      if (progress != nullptr && all_cases % 8 == 0) {
        print_progress(*progress, all_cases, report.failures.size(),
                       std::chrono::duration<double>(loop.deadline - Clock::now()).count());
      }
    }
  }
  // Done with this backend: let it release what it holds (launched worlds of processes).
  workers.release();
  user.runners.release();
  backend.abort();
}

}  // namespace

std::size_t OutcomeCounts::total() const {
  std::size_t sum = 0;
  for (std::size_t n : runs) sum += n;
  return sum;
}

Tally CheckReport::total() const {
  Tally sum;
  for (const auto& [key, tally] : table) {
    sum.cases += tally.cases;
    sum.passed += tally.passed;
    sum.failed += tally.failed;
    sum.skipped += tally.skipped;
  }
  return sum;
}

std::string replay_command(const std::string& backend, const Case& c, std::uint64_t schedule_seed,
                           const std::string& property, const FaultPlan& plan) {
  return "collcheck replay --backend '" + backend + "' --schedule-seed " + std::to_string(schedule_seed) +
         " --property " + property + " '" + to_string(c) + "'" +
         (plan.empty() ? "" : " --faults '" + to_string(plan) + "'");
}

CheckReport run_check(const CheckOptions& options, std::vector<std::unique_ptr<Backend>>& backends,
                      std::ostream* progress) {
  CheckReport report;
  report.seed = options.seed;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = clock_after(start, options.time_budget);
  // The command line has checked the text already; a caller's bad text means no faults.
  Result<FaultChoice> faults = parse_fault_choice(options.faults, options.seed);
  const Loop loop{options, faults ? *faults : FaultChoice{}, selected_properties(options), deadline};
  if (loop.faults.any()) report.faults = describe(loop.faults, options.seed);
  std::size_t all_cases = 0;
  for (std::size_t b = 0; b < backends.size(); ++b) {
    Backend& backend = *backends[b];
    report.backends.push_back(backend.name());
    const Capabilities capabilities = backend.capabilities();
    if (!any_case_possible(options.make_backend ? with_knob_precondition(capabilities) : capabilities, options.limits))
      continue;
    // Each backend gets an equal share of what is left of the budget.
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    const Clock::time_point backend_deadline =
        clock_after(Clock::now(), std::max(left, 0.0) / static_cast<double>(backends.size() - b));
    check_backend(loop, backend, backend_deadline, report, all_cases, progress);
  }
  if (progress != nullptr) *progress << "\r" << std::string(48, ' ') << "\r" << std::flush;
  report.seconds = since(start);
  return report;
}

}  // namespace collcheck
