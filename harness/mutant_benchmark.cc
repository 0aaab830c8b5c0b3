// mutant_benchmark: how fast the check loop finds each built-in mutant. Every mutant of
// all_mutants() runs on @sim (under its fault plan) with several seeds, each run stopped at its
// first failure; per mutant it prints the property that caught it, the time and cases until
// that failure (before shrinking; median and max over the seeds) and how many seeds caught it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <limits>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "faults/plan.h"
#include "harness/arguments.h"
#include "harness/check.h"
#include "harness/faulty_backend.h"
#include "harness/text_table.h"
#include "impls/mutants/mutants.h"
#include "impls/registry.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

constexpr int kUsageError = 2;
constexpr double kMissed = std::numeric_limits<double>::infinity();

constexpr cli::Option kOptions[] = {
    {"seeds", "N", "5", "runs per mutant, with the seeds S..S+N-1"},
    {"first-seed", "S", "1", "the first seed"},
    {"time-budget", "T", "60s", "per run, as check's --time-budget: 30s, 2m, 90 (seconds)"},
    {"jobs", "N", "", "threads running cases at once, as check's --jobs: 1..256; default: 1"},
    {"mutant", "NAME", "", "only these mutants (NAME or mutant:NAME); default: every built-in one",
     cli::Use::Repeatable},
};

struct Settings {
  std::uint64_t seeds = 5, first_seed = 1;
  double time_budget = 60;
  unsigned jobs = 0;  // 0: check's default, one thread
  std::vector<const Mutant*> mutants;
};

void print_help(std::ostream& out) {
  out << "usage: mutant_benchmark [--seeds N] [--first-seed S] [--time-budget T] [--jobs N] [--mutant NAME ...]\n\n"
         "Runs the check loop (as `collcheck check --backend mutant:NAME@sim` with the mutant's fault plan and\n"
         "check's default limits) on each built-in mutant with each seed, stopped at the first failure, and\n"
         "prints the time (ms) and cases until that failure (before shrinking).\n\noptions:\n";
  for (const cli::Option& option : kOptions) {
    char line[256];
    std::snprintf(line, sizeof line, "  --%-12s %-5s %s%s%s\n", std::string(option.name).c_str(),
                  std::string(option.value).c_str(), std::string(option.help).c_str(),
                  option.fallback.empty() ? "" : "; default: ", std::string(option.fallback).c_str());
    out << line;
  }
}

std::string mutants_text(std::size_t n) { return std::to_string(n) + (n == 1 ? " mutant" : " mutants"); }

Result<Settings> parse_settings(std::span<const std::string_view> args) {
  Result<cli::Arguments> parsed = cli::Arguments::parse(args, kOptions);
  if (!parsed) return parsed.error();
  Settings settings;
  Result<std::uint64_t> seeds = cli::parse_count("--seeds", parsed->get("seeds"), 1, 1000);
  if (!seeds) return seeds.error();
  settings.seeds = *seeds;
  Result<std::uint64_t> first = cli::parse_count("--first-seed", parsed->get("first-seed"), 0, 1u << 30);
  if (!first) return first.error();
  settings.first_seed = *first;
  Result<double> budget = parse_duration("--time-budget", parsed->get("time-budget"), DurationRange{0, true, 86400});
  if (!budget) return budget.error();
  settings.time_budget = *budget;
  Result<unsigned> jobs = cli::jobs_option(*parsed, settings.jobs);
  if (!jobs) return jobs.error();
  settings.jobs = *jobs;
  for (const std::string& name : parsed->all("mutant")) {
    const Mutant* mutant = find_mutant(name);
    if (mutant == nullptr) return Error{"--mutant", quoted_input(name) + ": must be one of " + mutant_names()};
    settings.mutants.push_back(mutant);
  }
  if (settings.mutants.empty()) {
    for (const Mutant& mutant : all_mutants()) settings.mutants.push_back(&mutant);
  }
  return settings;
}

// The backend of a spec (`mutant:own-twice@sim`, with knobs drawn: `...@sim:chunk=64`), wrapped
// to run under the fault plan `faults` when there is one.
Result<std::unique_ptr<Backend>> backend_of(const std::string& spec, const std::string& faults) {
  Result<std::unique_ptr<Backend>> made = make_one_backend(spec);
  if (!made) return made.error();
  std::unique_ptr<Backend> backend = std::move(*made);
  if (faults.empty()) return backend;
  Result<FaultPlan> plan = parse_fault_plan(faults);
  if (!plan) return plan.error();
  return with_faults(std::move(backend), *plan);
}

// One run: the first failure's property, seconds and cases; none when the budget ran out first.
struct Found {
  std::string property;
  double seconds = kMissed;
  double cases = kMissed;
};

Result<Found> first_failure(const Mutant& mutant, std::uint64_t seed, const Settings& settings) {
  Result<std::unique_ptr<Backend>> backend = backend_of(mutant.variant.name + "@sim", mutant.faults);
  if (!backend) return backend.error();
  std::vector<std::unique_ptr<Backend>> backends;
  backends.push_back(std::move(backend).value());
  CheckOptions options;
  options.limits.max_count = std::size_t{64} * 1024;  // check's default --count 0..64K (ranks: 1..64, the same)
  options.seed = seed;
  options.time_budget = settings.time_budget;
  options.jobs = settings.jobs;
  options.faults = mutant.faults;
  options.stop_at_first_failure = true;
  // As check does: each case also draws the knobs the spec leaves free (chunk, channels, fan-in).
  options.make_backend = [&mutant](const std::string& spec) { return backend_of(spec, mutant.faults); };
  const CheckReport report = run_check(options, backends, nullptr);
  if (report.failures.empty()) return Found{};
  // A case may fail several properties; the first failure is the one found first.
  const Failure& first = report.failures.front();
  return Found{first.property, first.seconds_until, static_cast<double>(first.cases_until)};
}

// The median of `values` (kMissed counts as larger than any).
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// A number of the table: seconds as milliseconds, cases as they are; a missed run's (infinite)
// seconds show as "> BUDGET s", its cases as "-".
std::string milliseconds(double seconds, double budget) {
  if (std::isinf(seconds)) return "> " + number_text(budget) + " s";
  return printf_text("%.1f", seconds * 1000);
}

std::string cases_text(double cases) {
  if (std::isinf(cases)) return "-";
  return printf_text("%.0f", cases);
}

// One mutant over every seed: what each run found.
struct Runs {
  std::vector<double> seconds, cases;  // kMissed where the budget ran out first
  std::set<std::string> properties;    // that caught it, over the seeds
  std::size_t caught = 0;
};

Result<Runs> run_seeds(const Mutant& mutant, const Settings& settings) {
  Runs runs;
  for (std::uint64_t i = 0; i < settings.seeds; ++i) {
    Result<Found> found = first_failure(mutant, settings.first_seed + i, settings);
    if (!found) return found.error();
    runs.seconds.push_back(found->seconds);
    runs.cases.push_back(found->cases);
    if (found->property.empty()) continue;
    runs.properties.insert(found->property);
    ++runs.caught;
  }
  return runs;
}

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  if (std::any_of(args.begin(), args.end(), [](std::string_view arg) { return arg == "--help" || arg == "-h"; })) {
    print_help(out);
    return 0;
  }
  Result<Settings> settings = parse_settings(args);
  if (!settings) {
    err << "mutant_benchmark: " << settings.error().text() << "\n";
    return kUsageError;
  }
  const double budget = settings->time_budget;
  out << "mutant_benchmark: " << mutants_text(settings->mutants.size()) << " on @sim, seeds " << settings->first_seed
      << ".." << settings->first_seed + settings->seeds - 1 << ", time budget " << number_text(budget) << " s a run, "
      << (settings->jobs == 0 ? std::string("1 thread")
                              : std::to_string(settings->jobs) + (settings->jobs == 1 ? " thread" : " threads"))
      << ", check's default limits, stopped at the first failure\n\n"
      << std::flush;
  cli::TextTable table;
  table.add_row({"mutant", "caught by", "ms median", "max", "cases median", "max", "seeds caught"});
  std::vector<double> seconds_medians, cases_medians;
  std::size_t caught_on_every_seed = 0;
  for (const Mutant* mutant : settings->mutants) {
    Result<Runs> runs = run_seeds(*mutant, *settings);
    if (!runs) {
      err << "mutant_benchmark: " << mutant->variant.name << ": " << runs.error().text() << "\n";
      return 1;
    }
    std::string by;
    for (const std::string& property : runs->properties) by += (by.empty() ? "" : ",") + property;
    seconds_medians.push_back(median(runs->seconds));
    cases_medians.push_back(median(runs->cases));
    if (runs->caught == settings->seeds) ++caught_on_every_seed;
    table.add_row({mutant->variant.name, by.empty() ? "-" : by, milliseconds(seconds_medians.back(), budget),
                   milliseconds(*std::max_element(runs->seconds.begin(), runs->seconds.end()), budget),
                   cases_text(cases_medians.back()),
                   cases_text(*std::max_element(runs->cases.begin(), runs->cases.end())),
                   std::to_string(runs->caught) + "/" + std::to_string(settings->seeds)});
  }
  table.print(out, 0);
  const double seconds_median = median(seconds_medians);
  out << "\nmedian over " << mutants_text(settings->mutants.size()) << ": " << milliseconds(seconds_median, budget)
      << (std::isinf(seconds_median) ? "" : " ms") << " and " << cases_text(median(cases_medians))
      << " cases to the first failure; " << caught_on_every_seed << " of " << settings->mutants.size()
      << " caught on every seed\n";
  return 0;
}

}  // namespace
}  // namespace collcheck

int main(int argc, char** argv) {
  try {
    std::vector<std::string_view> args;
    for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
    const int status = collcheck::run(args, std::cout, std::cerr);
    std::cout.flush();
    return std::cout ? status : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "mutant_benchmark: %s\n", error.what());
    return 1;
  }
}
