// The check loop: cases drawn from RapidCheck's generator with a seed per backend (under
// `--faults random` each with its own plan), the base run shared by the properties, its outcome
// counted per fault kind, and greedy shrinking of case and plan along RapidCheck's shrink tree.
#include "harness/check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "properties/property.h"
#include "reference/numbers.h"
#include "reference/random.h"

namespace collcheck {
namespace {

using Clock = std::chrono::steady_clock;
using Drawn = rc::Shrinkable<std::pair<Case, FaultPlan>>;

constexpr std::size_t kMaxShrinkRuns = 400;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::uint64_t hash_text(const std::string& text) {
  std::uint64_t h = 0;
  for (char ch : text) h = mix64(h ^ static_cast<unsigned char>(ch));
  return h;
}

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

// What every run of one case is under: its schedule seed, the deadline, and its fault plan.
PropertyContext context_for(const CheckOptions& options, std::uint64_t schedule_seed, const FaultPlan& plan) {
  PropertyContext context{schedule_seed};
  context.deadline = options.deadline;
  if (!plan.empty()) {
    context.fault_plan = to_string(plan);
    context.transient = transient(plan);
  }
  return context;
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

PropertyResult run_property(const Property& property, const std::pair<Case, FaultPlan>& drawn, Backend& backend,
                            std::uint64_t schedule_seed, const CheckOptions& options) {
  const PropertyContext context = context_for(options, schedule_seed, drawn.second);
  const RepeatedRun base = backend.run(drawn.first, context.run_options(schedule_seed));
  return property.check(drawn.first, backend, base, context);
}

// A smaller case (and plan) worth running: one the backend takes, and a drawn plan valid on it.
bool worth_running(const std::pair<Case, FaultPlan>& candidate, Backend& backend, const FaultChoice& faults) {
  if (!backend.capabilities().supports(candidate.first) || !validate(candidate.first)) return false;
  return !faults.random || validate(candidate.second, candidate.first.nranks).ok();
}

// Walks down the shrink tree: the first smaller case that still fails becomes the current one.
Failure shrink(const Drawn& failing, const Property& property, Backend& backend, std::uint64_t schedule_seed,
               std::string detail, Clock::time_point deadline, const CheckOptions& options, const FaultChoice& faults) {
  Failure failure;
  Drawn current = failing;
  bool smaller = true;
  while (smaller && failure.shrink_runs < kMaxShrinkRuns && !past(options, deadline)) {
    smaller = false;
    rc::Seq<Drawn> candidates = current.shrinks();
    while (auto next = candidates.next()) {
      const std::pair<Case, FaultPlan> candidate = next->value();
      if (!worth_running(candidate, backend, faults)) continue;
      ++failure.shrink_runs;
      const PropertyResult result = run_property(property, candidate, backend, schedule_seed, options);
      if (!backend.cannot_run_here().empty()) break;  // not a verdict: the failure stays as it was
      agree_on_verdict(options, candidate.first, !result.ok, result.detail);
      if (!result.ok) {
        current = *next;
        detail = result.detail;
        smaller = true;
        break;
      }
      if (failure.shrink_runs >= kMaxShrinkRuns || past(options, deadline)) break;
    }
  }
  failure.shrunk = current.value().first;
  failure.plan = current.value().second;
  failure.original = failing.value().first;
  failure.detail = std::move(detail);
  return failure;
}

void print_progress(std::ostream& out, std::size_t cases, std::size_t failures, double left) {
  char line[128];
  std::snprintf(line, sizeof line, "\rcases %zu, failures %zu, %.0f s left   ", cases, failures, std::max(left, 0.0));
  out << line << std::flush;
}

// Draws the cases of one backend, each with the plan it runs under. The cases come from the
// same Random as without faults, so `--faults` does not change which cases a seed draws; plans
// come from a Random of their own, drawn for the largest world and fitted to each case.
class Draws {
 public:
  Draws(const CheckOptions& options, const FaultChoice& faults, Backend& backend)
      : faults_(faults), cases_(case_generator(backend.capabilities(), options.limits)),
        plans_(fault_plan_generator(std::max(2, std::min(options.limits.max_ranks, backend.capabilities().max_ranks)),
                                    faults.swarm)),
        case_random_(options.seed ^ hash_text(backend.name())),
        plan_random_(mix64(options.seed ^ hash_text(backend.name()) ^ 0xfa17)) {}

  Drawn next(std::size_t i) {
    // RapidCheck's sizes: small cases first, full-sized ones (100) from the 30th case on.
    const int size = static_cast<int>(std::min<std::size_t>(10 + 3 * i, 100));
    rc::Shrinkable<Case> c = cases_(case_random_.split(), size);
    if (!faults_.random) {
      return rc::shrinkable::pair(std::move(c), rc::shrinkable::just(faults_.plan));
    }
    return rc::shrinkable::map(rc::shrinkable::pair(std::move(c), plans_(plan_random_.split(), size)),
                               [](std::pair<Case, FaultPlan> drawn) {
                                 drawn.second = fit(drawn.second, drawn.first.nranks);
                                 return drawn;
                               });
  }

 private:
  const FaultChoice& faults_;
  rc::Gen<Case> cases_;
  rc::Gen<FaultPlan> plans_;
  rc::Random case_random_;
  rc::Random plan_random_;
};

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
};

// One case of one backend: the base run, its outcome under faults, every property, and each
// new failure shrunk into the report.
struct Loop {
  const CheckOptions& options;
  FaultChoice faults;
  std::vector<const Property*> properties;
  Clock::time_point deadline;
};

CaseVerdict check_case(const Loop& loop, Backend& backend, const Drawn& drawn, std::size_t i,
                       std::vector<std::string>& failed_properties, CheckReport& report) {
  const CheckOptions& options = loop.options;
  const Case& c = drawn.value().first;
  const FaultPlan& plan = drawn.value().second;
  const std::uint64_t schedule_seed = mix64(options.seed + i);
  PropertyContext context = context_for(options, schedule_seed, plan);
  const RepeatedRun base = backend.run(c, context.run_options(schedule_seed));
  if (!backend.cannot_run_here().empty()) return CaseVerdict{.cannot_run_here = true};
  if (loop.faults.any()) {
    context.outcome = classify(c, base);
    count_outcome(report, backend.name(), plan, *context.outcome);
  }
  CaseVerdict verdict;
  for (const Property* property : loop.properties) {
    const std::string property_name(property->name);
    if (std::find(failed_properties.begin(), failed_properties.end(), property_name) != failed_properties.end())
      continue;
    const PropertyResult result = property->check(c, backend, base, context);
    if (!backend.cannot_run_here().empty()) return CaseVerdict{.cannot_run_here = true};
    agree_on_verdict(options, c, !result.ok, result.detail);
    Tally& per = report.per_property[{backend.name(), c.collective, property_name}];
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
    failed_properties.push_back(property_name);
    Failure failure =
        shrink(drawn, *property, backend, schedule_seed, result.detail, loop.deadline, options, loop.faults);
    failure.backend = backend.name();
    failure.collective = failure.shrunk.collective;
    failure.property = property_name;
    failure.schedule_seed = schedule_seed;
    failure.cases_until = i + 1;
    failure.replay = replay_command(backend.name(), failure.shrunk, schedule_seed, property_name, failure.plan);
    report.first_failure[{backend.name(), c.collective, property_name}] = failure.detail;
    report.failures.push_back(std::move(failure));
  }
  return verdict;
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
    if (!any_case_possible(backend.capabilities(), options.limits)) continue;
    // Each backend gets an equal share of what is left of the budget.
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    const Clock::time_point backend_deadline =
        clock_after(Clock::now(), std::max(left, 0.0) / static_cast<double>(backends.size() - b));
    Draws draws(options, loop.faults, backend);
    std::vector<std::string> failed_properties;
    for (std::size_t i = 0; options.cases == 0 || i < options.cases; ++i) {
      if (past(options, backend_deadline)) break;
      const Drawn drawn = draws.next(i);
      Tally& cell = report.table[{backend.name(), drawn.value().first.collective}];
      ++cell.cases;
      ++all_cases;
      const CaseVerdict verdict = check_case(loop, backend, drawn, i, failed_properties, report);
      if (verdict.cannot_run_here) {
        --all_cases;
        if (--cell.cases == 0) report.table.erase({backend.name(), drawn.value().first.collective});
        report.cannot_run_here[backend.name()] = backend.cannot_run_here();
        break;
      }
      if (verdict.failed) ++cell.failed;
      else if (verdict.all_skipped) ++cell.skipped;
      else ++cell.passed;
      if (verdict.failed && options.stop_at_first_failure) break;
      if (progress != nullptr && all_cases % 8 == 0) {
        print_progress(*progress, all_cases, report.failures.size(),
                       std::chrono::duration<double>(deadline - Clock::now()).count());
      }
    }
    // Done with this backend: let it release what it holds (launched worlds of processes).
    backend.abort();
  }
  if (progress != nullptr) *progress << "\r" << std::string(48, ' ') << "\r" << std::flush;
  report.seconds = since(start);
  return report;
}

}  // namespace collcheck
