// The check loop: cases drawn from RapidCheck's generator with a seed per backend, the base run
// shared by the properties, and greedy shrinking along RapidCheck's shrink tree.
#include "harness/check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "properties/property.h"
#include "reference/random.h"

namespace collcheck {
namespace {

using Clock = std::chrono::steady_clock;

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

RunOptions run_options(const CheckOptions& options, std::uint64_t schedule_seed) {
  RunOptions run{schedule_seed, 1, nullptr};
  run.deadline = options.deadline;
  return run;
}

// Lockstep: every rank saw the same runs, so it must reach the same verdicts as rank 0.
void agree_on_verdict(const CheckOptions& options, const Case& c, bool failed, const std::string& detail) {
  if (!options.agree) return;
  const std::uint64_t mine = mix64(hash_text(to_string(c)) ^ hash_text(detail) ^ (failed ? 1 : 0));
  if (options.agree(mine) == mine) return;
  std::fprintf(stderr, "collcheck check: this rank's verdict on '%s' differs from rank 0's; stopping\n", to_string(c).c_str());
  std::abort();
}

PropertyResult run_property(const Property& property, const Case& c, Backend& backend, std::uint64_t schedule_seed,
                            const CheckOptions& options) {
  const RepeatedRun base = backend.run(c, run_options(options, schedule_seed));
  return property.check(c, backend, base, PropertyContext{schedule_seed});
}

// Walks down the shrink tree: the first smaller case that still fails becomes the current one.
Failure shrink(const rc::Shrinkable<Case>& failing, const Property& property, Backend& backend,
               std::uint64_t schedule_seed, std::string detail, Clock::time_point deadline, const CheckOptions& options) {
  Failure failure;
  rc::Shrinkable<Case> current = failing;
  bool smaller = true;
  while (smaller && failure.shrink_runs < kMaxShrinkRuns && !past(options, deadline)) {
    smaller = false;
    rc::Seq<rc::Shrinkable<Case>> candidates = current.shrinks();
    while (auto next = candidates.next()) {
      const Case candidate = next->value();
      if (!backend.capabilities().supports(candidate) || !validate(candidate)) continue;
      ++failure.shrink_runs;
      const PropertyResult result = run_property(property, candidate, backend, schedule_seed, options);
      agree_on_verdict(options, candidate, !result.ok, result.detail);
      if (!result.ok) {
        current = *next;
        detail = result.detail;
        smaller = true;
        break;
      }
      if (failure.shrink_runs >= kMaxShrinkRuns || past(options, deadline)) break;
    }
  }
  failure.shrunk = current.value();
  failure.original = failing.value();
  failure.detail = std::move(detail);
  return failure;
}

void print_progress(std::ostream& out, std::size_t cases, std::size_t failures, double left) {
  char line[128];
  std::snprintf(line, sizeof line, "\rcases %zu, failures %zu, %.0f s left   ", cases, failures, std::max(left, 0.0));
  out << line << std::flush;
}

}  // namespace

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
                           const std::string& property) {
  return "collcheck replay --backend '" + backend + "' --schedule-seed " + std::to_string(schedule_seed) +
         " --property " + property + " '" + to_string(c) + "'";
}

CheckReport run_check(const CheckOptions& options, std::vector<std::unique_ptr<Backend>>& backends,
                      std::ostream* progress) {
  CheckReport report;
  report.seed = options.seed;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(options.time_budget));
  const std::vector<const Property*> properties = selected_properties(options);
  std::size_t all_cases = 0;
  for (std::size_t b = 0; b < backends.size(); ++b) {
    Backend& backend = *backends[b];
    report.backends.push_back(backend.name());
    const Capabilities capabilities = backend.capabilities();
    if (!any_case_possible(capabilities, options.limits)) continue;
    // Each backend gets an equal share of what is left of the budget.
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    const Clock::time_point backend_deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(std::max(left, 0.0) / static_cast<double>(backends.size() - b)));
    const rc::Gen<Case> generator = case_generator(capabilities, options.limits);
    rc::Random random(options.seed ^ hash_text(backend.name()));
    std::vector<std::string> failed_properties;
    for (std::size_t i = 0; options.cases == 0 || i < options.cases; ++i) {
      if (past(options, backend_deadline)) break;
      // RapidCheck's sizes: small cases first, full-sized ones (100) from the 30th case on.
      const rc::Shrinkable<Case> drawn = generator(random.split(), static_cast<int>(std::min<std::size_t>(10 + 3 * i, 100)));
      const Case c = drawn.value();
      const std::uint64_t schedule_seed = mix64(options.seed + i);
      const RepeatedRun base = backend.run(c, run_options(options, schedule_seed));
      Tally& cell = report.table[{backend.name(), c.collective}];
      ++cell.cases;
      ++all_cases;
      bool failed = false, all_skipped = true;
      for (const Property* property : properties) {
        const std::string property_name(property->name);
        if (std::find(failed_properties.begin(), failed_properties.end(), property_name) != failed_properties.end()) continue;
        const PropertyResult result = property->check(c, backend, base, PropertyContext{schedule_seed});
        agree_on_verdict(options, c, !result.ok, result.detail);
        Tally& per = report.per_property[{backend.name(), c.collective, property_name}];
        ++per.cases;
        if (result.skipped) {
          ++per.skipped;
          continue;
        }
        all_skipped = false;
        if (result.ok) {
          ++per.passed;
          continue;
        }
        ++per.failed;
        failed = true;
        failed_properties.push_back(property_name);
        Failure failure = shrink(drawn, *property, backend, schedule_seed, result.detail, deadline, options);
        failure.backend = backend.name();
        failure.collective = failure.shrunk.collective;
        failure.property = property_name;
        failure.schedule_seed = schedule_seed;
        failure.cases_until = i + 1;
        failure.replay = replay_command(backend.name(), failure.shrunk, schedule_seed, property_name);
        if (!options.faults.empty()) failure.replay += " --faults '" + options.faults + "'";
        report.first_failure[{backend.name(), c.collective, property_name}] = failure.detail;
        report.failures.push_back(std::move(failure));
      }
      if (failed) ++cell.failed;
      else if (all_skipped) ++cell.skipped;
      else ++cell.passed;
      if (failed && options.stop_at_first_failure) break;
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
