// `collcheck check --backend ring@sim --time-budget 60s` and `collcheck replay --backend B CASE`:
// options into a CheckOptions, backends from the grammar, the report out, exit codes as
// docs/cli.md says (0 held, 1 failed, 2 usage, 77 nothing available here).
#include "harness/cli_check.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "faults/plan.h"
#include "harness/arguments.h"
#include "harness/check.h"
#include "harness/cli_campaign.h"
#include "harness/fault_generator.h"
#include "harness/faulty_backend.h"
#include "harness/memory_check.h"
#include "harness/report.h"
#include "impls/backend/rank_backend.h"
#include "impls/registry.h"
#include "impls/worlds/mpi_world.h"
#include "properties/property.h"
#include "reference/numbers.h"
#include "reference/oracle.h"

namespace collcheck::cli {
namespace {

constexpr int kUsageError = 2;
constexpr int kUnavailable = 77;
constexpr Option kCheckOptions[] = {
    {"backend", "B", "all@sim", "what to test; the grammar is below", Use::Repeatable},
    {"collective", "C", "", "only these collectives; default: all the backend has", Use::Repeatable},
    {"dtype", "D", "", "only these element types; default: all", Use::Repeatable},
    {"op", "O", "", "only these reduction ops; default: all", Use::Repeatable},
    {"values", "V", "", "only these value kinds (exact, real, special); default: all", Use::Repeatable},
    {"ranks", "A..B", "1..64",
     "every rank count in the range, 1, 2, 3, primes, powers of two, 2^k+-1 and products of small primes (6, 10, 12, "
     "24 ...) drawn more often"},
    {"count", "A..B", "0..64K", "elements (NCCL's count)"},
    {"cases", "N", "0", "cases per backend (0: as many as the budget allows)"},
    {"jobs", "N", "",
     "threads running cases at once, 1..256; default: one per core (@sim; backends across processes run one case at "
     "a time)"},
    {"max-failures", "N", "10", "distinct failures (groups) shrunk and reported, 1..1000; further ones are counted"},
    {"seed", "S", "", "the same seed and options give the same cases; default: drawn at random, always printed"},
    {"time-budget", "T", "60s", "for all backends together: 30s, 2m, 90 (seconds), up to 24h"},
    {"property", "P", "", "only these properties (docs/properties.md); default: all", Use::Repeatable},
    {"json", "FILE", "", "write the report as JSON"},
    {"junit", "FILE", "", "write the report as JUnit XML"},
    {"html", "FILE", "", "write the report as one self-contained HTML page"},
    {"deadline", "T", "",
     "across processes: a run not done by then is a hang (8s, 2m; none); default: 20 s + 1 s per 50 MB"},
    {"mpirun-args", "'ARGS'", "", "across processes: extra arguments for mpirun (--hostfile hosts)"},
    {"faults", "PLAN", "", "every run under a fault plan, or random[:KIND,...] for a plan per case (docs/faults.md)"},
    {"share", "auto|I/N", "",
     "a campaign across the hosts of an mpirun or srun job: this process runs share I of N of the cases (auto: its "
     "rank and the job's size); rank 0 prints the merged report"},
    {"share-wait", "T", "60s", "campaign: how long rank 0 waits for the other shares past the time budget"},
    kMemoryLimitOption,
};
// The files of the report, each written by its writer where its option asks for it.
constexpr std::pair<std::string_view, ReportWriter> kReportFiles[] = {
    {"json", &write_json}, {"junit", &write_junit}, {"html", &write_html}};
constexpr Option kReplayOptions[] = {
    {"backend", "B", "ring@sim", "the backend (check --help gives the grammar)"},
    {"schedule-seed", "S", "0", "the schedule seed of the failure's replay line"},
    {"property", "P", "", "check only this property; default: all"},
    {"deadline", "T", "",
     "across processes: a run not done by then is a hang (8s, 2m; none); default: 20 s + 1 s per 50 MB"},
    {"mpirun-args", "'ARGS'", "", "across processes: extra arguments for mpirun"},
    {"faults", "PLAN", "none", "the one plan of the failure's replay line (not random)"},
    kMemoryLimitOption,
};

template <typename T, typename Parse>
Status parse_list(const Arguments& args, std::string_view flag, Parse parse, std::vector<T>& out) {
  for (const std::string& text : args.all(flag)) {
    Result<T> value = parse(text);
    if (!value) return Error{"--" + std::string(flag), value.error().message};
    out.push_back(*value);
  }
  return Ok{};
}

Status parse_limits(const Arguments& args, CaseLimits& limits) {
  Status s = parse_list<Collective>(args, "collective", parse_collective, limits.collectives);
  if (s) s = parse_list<DType>(args, "dtype", parse_dtype, limits.dtypes);
  if (s) s = parse_list<RedOp>(args, "op", parse_op, limits.ops);
  if (s) s = parse_list<ValueKind>(args, "values", parse_value_kind, limits.values);
  if (!s) return s;
  Result<std::pair<std::uint64_t, std::uint64_t>> ranks = parse_range("--ranks", args.get("ranks"), 1, kMaxRanks);
  if (!ranks) return ranks.error();
  Result<std::pair<std::uint64_t, std::uint64_t>> count = parse_range("--count", args.get("count"), 0, 1 << 24);
  if (!count) return count.error();
  limits.min_ranks = static_cast<int>(ranks->first);
  limits.max_ranks = static_cast<int>(ranks->second);
  limits.min_count = count->first;
  limits.max_count = count->second;
  return Ok{};
}

Result<CheckOptions> parse_options(const Arguments& args, const Lockstep& lockstep) {
  CheckOptions options;
  Status limits = parse_limits(args, options.limits);
  if (!limits) return limits.error();
  if (lockstep.world != nullptr) {
    // Every case runs on the whole world the launcher started.
    const int n = lockstep.world->size();
    if (args.has("ranks") && (options.limits.min_ranks > n || options.limits.max_ranks < n)) {
      return Error{"--ranks", quoted_input(args.get("ranks")) + ": under mpirun every case runs on all " +
                                  std::to_string(n) + " ranks of the world; leave --ranks out or include " +
                                  std::to_string(n)};
    }
    options.limits.min_ranks = options.limits.max_ranks = n;
    World* world = lockstep.world;
    options.agree = [world](std::uint64_t mine) {
      std::byte bytes[8];
      std::memcpy(bytes, &mine, 8);
      const std::vector<std::vector<std::byte>> all = world->allgather(bytes);
      std::uint64_t first = 0;
      std::memcpy(&first, all.front().data(), 8);
      return first;
    };
  }
  Result<std::uint64_t> cases = parse_count("--cases", args.get("cases"), 0, 1u << 30);
  if (!cases) return cases.error();
  options.cases = *cases;
  Result<std::uint64_t> max_failures = parse_count("--max-failures", args.get("max-failures"), 1, 1000);
  if (!max_failures) return max_failures.error();
  options.max_failures = *max_failures;
  Result<unsigned> jobs = jobs_option(args, cores());
  if (!jobs) return jobs.error();
  options.jobs = *jobs;
  const std::string seed = args.get("seed");
  if (seed.empty()) {
    options.seed = std::random_device{}() ^
                   static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    options.seed %= 1000000007;
  } else {
    Result<std::uint64_t> parsed = parse_count("--seed", seed, 0, ~std::uint64_t{0});
    if (!parsed) return parsed.error();
    options.seed = *parsed;
  }
  options.faults = args.get("faults");
  if (Result<FaultChoice> faults = parse_fault_choice(options.faults, options.seed); !faults) return faults.error();
  Result<double> budget = parse_duration("--time-budget", args.get("time-budget"), DurationRange{0, true, 86400});
  if (!budget) return budget.error();
  options.time_budget = *budget;
  for (const std::string& property : args.all("property")) {
    if (!find_property(property))
      return Error{"--property", quoted_input(property) + ": must be one of " + property_names()};
    options.properties.push_back(property);
  }
  return options;
}

// --deadline and --mpirun-args, for backends that run across processes.
Result<BackendOptions> backend_options(const Arguments& args) {
  BackendOptions options;
  if (args.has("deadline")) {
    Result<double> deadline = parse_duration("--deadline", args.get("deadline"), kDeadlineRange);
    if (!deadline) return deadline.error();
    options.deadline = *deadline;
  }
  std::istringstream words(args.get("mpirun-args"));
  for (std::string word; words >> word;) options.launcher_arguments.push_back(word);
  return options;
}

// The backends the specs name, each wrapped to take the faults --faults asks for.
Result<std::vector<std::unique_ptr<Backend>>> backends_of(const std::vector<std::string>& specs, const Arguments& args,
                                                          const FaultChoice& faults) {
  Result<BackendOptions> options = backend_options(args);
  if (!options) return options.error();
  std::vector<std::unique_ptr<Backend>> all;
  for (const std::string& spec : specs) {
    auto made = make_backends(spec, *options);
    if (!made) return made.error();
    for (auto& backend : made.value()) {
      if (!faults.any()) {
        all.push_back(std::move(backend));
        continue;
      }
      Result<std::unique_ptr<Backend>> faulty = with_faults(std::move(backend), faults.plan);
      if (!faulty) return faulty.error();
      all.push_back(std::move(faulty).value());
    }
  }
  return all;
}

// Replay takes one concrete plan: the one a failure's replay line carries.
Result<FaultChoice> replay_faults(const Arguments& args) {
  Result<FaultChoice> faults = parse_fault_choice(args.get("faults"), 0);
  if (faults && faults->random) {
    return Error{"--faults", quoted_input(args.get("faults")) +
                                 ": replay takes one plan, the --faults '...' of the "
                                 "failure's replay line, not random"};
  }
  return faults;
}

// --collective names only collectives none of the backends implements (`mpi:allreduce=ring` runs
// allreduce alone): a usage error naming what they implement, rather than a check of no case.
Status some_collective_implemented(const CaseLimits& limits, const std::vector<std::unique_ptr<Backend>>& backends) {
  if (limits.collectives.empty()) return Ok{};
  std::vector<bool> implemented(all_collectives().size(), false);
  for (const auto& backend : backends) {
    for (Collective collective : backend->capabilities().collectives) {
      if (std::find(limits.collectives.begin(), limits.collectives.end(), collective) != limits.collectives.end()) {
        return Ok{};
      }
      implemented[static_cast<std::size_t>(collective)] = true;
    }
  }
  std::string asked, offered;
  for (Collective collective : limits.collectives) asked += (asked.empty() ? "" : ", ") + std::string(name(collective));
  for (Collective collective : all_collectives()) {
    if (implemented[static_cast<std::size_t>(collective)]) {
      offered += (offered.empty() ? "" : ", ") + std::string(name(collective));
    }
  }
  const std::string who = backends.size() == 1 ? backends.front()->name() + " implements " : "the backends implement ";
  return Error{"--collective", asked + ": " + who + (offered.empty() ? "no collective" : offered)};
}

// The run's outcome (a wrong result reported as success is `corrupt`) and each rank's verdict.
void print_replayed_run(const Case& c, const Backend& backend, const RepeatedRun& base, const PropertyContext& context,
                        std::ostream& out) {
  const Outcome outcome = classify(c, base);
  out << "replay " << to_string(c) << " on " << backend.name() << " (schedule seed " << context.schedule_seed << ")"
      << (context.under_faults() ? " under faults " + context.fault_plan : "") << "\n"
      << "outcome: " << (base.refused ? "refused by the backend (a precondition, not a finding)" : name(outcome))
      << (base.error.empty() ? "" : ": " + base.error) << "\n";
  if (base.outcome != Outcome::Ok || base.calls.empty()) return;
  Oracle oracle(c);
  for (int rank = 0; rank < c.nranks; ++rank) {
    const RankResult& result = base.calls[0][static_cast<std::size_t>(rank)];
    const Verdict verdict = compare(oracle.expected(rank), rank, result.output);
    out << "  rank " << rank << ": " << (verdict.ok ? "ok" : "WRONG") << ", " << verdict.checked << " elements checked"
        << (result.guards_intact ? "" : ", guard zone damaged") << "\n";
    if (!verdict.ok) out << "    " << verdict.describe(c.dtype);
  }
}

// Replay's arguments: the options with their values, and the case, the one argument that is
// neither an option nor an option's value. False, said on `err`, when there are two cases.
bool split_replay_arguments(std::span<const std::string_view> raw, std::vector<std::string_view>& options,
                            std::string_view& case_text, std::ostream& err) {
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i].starts_with("--")) {
      options.push_back(raw[i]);
      if (raw[i].find('=') == std::string_view::npos && i + 1 < raw.size()) options.push_back(raw[++i]);
    } else if (case_text.empty()) {
      case_text = raw[i];
    } else {
      err << "collcheck replay: '" << raw[i] << "': one case only (the first was '" << case_text << "')\n";
      return false;
    }
  }
  return true;
}

// Checks every property (or `only` one) on the replayed run and prints a line each; true when none failed.
bool print_property_checks(const Case& c, Backend& backend, const RepeatedRun& base, const PropertyContext& context,
                           const Property* only, std::ostream& out) {
  bool failed = false;
  for (const Property& property : all_properties()) {
    if (only && only != &property) continue;
    const PropertyResult result = property.check(c, backend, base, context);
    out << (result.skipped ? "skipped "
            : result.ok    ? "held    "
                           : "FAILED  ")
        << property.name << (result.detail.empty() ? "" : ": " + result.detail) << "\n";
    failed |= !result.ok;
  }
  return !failed;
}

// ", 2 of 4 jobs at once (...)" where the memory budget lowered --jobs; else nothing.
std::string jobs_text(unsigned jobs, unsigned asked) {
  if (jobs >= asked) return "";
  return ", " + std::to_string(jobs) + " of " + std::to_string(asked) +
         " jobs at once (the memory budget holds no more of the largest case)";
}

}  // namespace

const CommandHelp& check_help() {
  static constexpr CommandHelp help{
      "check",
      "run random cases on backends, check every property, shrink failures",
      kCheckOptions,
      "",
      "backends: ALGORITHM@sim[:chunk=N,channels=N,fan-in=N], all@sim, mutant:NAME@sim, schedule:FILE@sim; the same "
      "@proc\n"
      "[:...,transport=auto|shm|tcp]; mpi[:COLL=ALG,...|:all-algorithms]; gloo[:NAME[:OPTIONS]|:all-algorithms]\n"
      "(collcheck list names them). Under mpirun or srun every rank runs in lockstep. Exit status: 0 held,\n"
      "1 failed, 2 usage error, 77 nothing could run here. The reports: docs/cli.md.",
      "collcheck check --backend ring@sim --backend tree@sim --ranks 2..16 --time-budget 30s --json report.json"};
  return help;
}

const CommandHelp& replay_help() {
  static constexpr CommandHelp help{
      "replay",
      "rerun one case on one backend with per-rank detail",
      kReplayOptions,
      "'CASE'",
      "CASE: the text form of a case (docs/oracle.md), as a failure's replay line gives it.",
      "collcheck replay --backend ring@sim 'allreduce/f32/sum/n=10/ranks=3'"};
  return help;
}

// The report printed (and written to --json, --junit and --html on rank 0), and check's exit status:
// 0 held, 1 a property failed, 2 a report could not be written, 77 some backend (or all) could not run here
// or refused every case it ran.
int report_status(const CheckReport& report, const Arguments& args, Lockstep& lockstep, std::ostream& speak,
                  std::ostream& err) {
  std::ostream& complain = lockstep.quiet ? lockstep.discard : err;
  print_report(report, speak);
  for (const auto& [flag, writer] : kReportFiles) {
    if (lockstep.quiet || !args.has(flag) || write_report_file(args.get(flag), writer, report)) continue;
    err << "collcheck check: cannot write '" << args.get(flag) << "'\n";
    return kUsageError;
  }
  for (const auto& [backend, why] : report.cannot_run_here)
    complain << "collcheck check: " << backend << " cannot run here: " << why << '\n';
  // A backend that refused every case it was given tested nothing: it could not run here either.
  const std::vector<std::string> refused_everything = refused_every_case(report);
  for (const std::string& backend : refused_everything)
    complain << "collcheck check: " << backend
             << " refused every case it ran; the first: " << report.refused.at(backend).first << '\n';
  if (report.total().cases == 0) {
    complain << "collcheck check: no backend could run a case with these options\n";
    return kUnavailable;
  }
  if (!report.failures.empty()) return 1;
  return report.cannot_run_here.empty() && report.missing_shares.empty() && refused_everything.empty() ? 0
                                                                                                       : kUnavailable;
}

// The report (in a campaign, rank 0's merged from every share's) printed and the exit status; a
// campaign whose share never reported ends the job here (it may hold MPI up for ever). A
// campaign's other ranks, which have sent theirs, return 0.
int finish_check(const Campaign& campaign, const CheckReport& merged, const Arguments& args, Lockstep& lockstep,
                 std::ostream& speak, std::ostream& err) {
  if (campaign.quiet()) return 0;
  const int status = report_status(merged, args, lockstep, speak, err);
  if (!merged.missing_shares.empty()) {
    speak << std::flush;
    err << std::flush;
    abort_launched_world(status);
  }
  return status;
}

// The report's files opened (made) by the process that writes them before any case runs, so
// that hours of cases never end in "cannot write".
Status report_files_open(const Arguments& args, const Lockstep& lockstep) {
  for (const auto& [flag, writer] : kReportFiles) {
    if (!lockstep.quiet && args.has(flag) && !std::ofstream(args.get(flag), std::ios::app))
      return Error{"--" + std::string(flag), quoted_input(args.get(flag)) + ": cannot be written"};
  }
  return Ok{};
}

int run_check(std::span<const std::string_view> raw, std::ostream& out, std::ostream& err) {
  Result<Arguments> args = Arguments::parse(raw, kCheckOptions);
  if (!args) {
    err << "collcheck check: " << args.error().text() << '\n';
    return kUsageError;
  }
  std::vector<std::string> specs = args->all("backend");
  if (specs.empty()) specs.push_back(args->get("backend"));
  Lockstep lockstep;
  Result<Campaign> campaign = join_job(*args, specs, lockstep);
  Result<CheckOptions> options = campaign ? parse_options(*args, lockstep) : Result<CheckOptions>(campaign.error());
  if (options) options->share = campaign->share;
  Result<FaultChoice> faults = options ? parse_fault_choice(options->faults, options->seed) : options.error();
  const Status files = faults ? report_files_open(*args, lockstep) : Status(faults.error());
  auto backends =
      files ? backends_of(specs, *args, *faults) : Result<std::vector<std::unique_ptr<Backend>>>(files.error());
  if (!backends) {
    err << "collcheck check: " << backends.error().text() << '\n';
    return kUsageError;
  }
  if (Status some = some_collective_implemented(options->limits, backends.value()); !some) {
    err << "collcheck check: " << some.error().text() << '\n';
    return kUsageError;
  }
  const unsigned jobs_asked = std::max(options->jobs, 1U);
  const CaseLimits& limits = options->limits;
  const DrawnRanges ranges{limits.collectives, limits.dtypes, limits.max_ranks, limits.min_count, limits.max_count};
  if (Status fit = largest_cases_fit(*args, ranges, backends.value(), options->jobs, options->memory); !fit) {
    err << "collcheck check: " << fit.error().text() << '\n';
    return kUsageError;
  }
  // Cases draw the knobs a backend leaves free, on backends made as these were (in lockstep the
  // world runs the backends as given).
  if (!lockstep.world) {
    options->make_backend = [&args, &faults](const std::string& spec) -> Result<std::unique_ptr<Backend>> {
      auto made = backends_of({spec}, *args, *faults);
      if (!made) return made.error();
      if (made->size() != 1) return Error{"--backend", quoted_input(spec) + ": names more than one backend"};
      return std::move(made->front());
    };
  }
  // In lockstep every rank runs the loop; rank 0 alone speaks and writes files.
  std::ostream& speak = lockstep.quiet ? lockstep.discard : out;
  speak << "collcheck check: seed " << options->seed << ", " << backends->size() << " backend"
        << (backends->size() == 1 ? "" : "s") << ", budget " << options->time_budget << " s"
        << (lockstep.world ? ", in lockstep on " + std::to_string(lockstep.world->size()) + " ranks" : "")
        << jobs_text(options->jobs, jobs_asked) << describe(*campaign)
        << (faults->random || faults->plan.empty() ? "" : ", faults '" + to_string(faults->plan) + "'") << "\n"
        << (faults->random ? "faults: " + describe(*faults, options->seed) + "\n" : "") << std::flush;
  const bool terminal = isatty(STDERR_FILENO) != 0 && !lockstep.quiet;
  keep_freed_memory();
  const auto start = std::chrono::steady_clock::now();
  const CheckReport report = collcheck::run_check(*options, backends.value(), terminal ? &err : nullptr);
  return finish_check(*campaign, campaign_report(*campaign, report, *options, start), *args, lockstep, speak, err);
}

int run_replay(std::span<const std::string_view> raw, std::ostream& out, std::ostream& err) {
  std::vector<std::string_view> options;
  std::string_view case_text;
  if (!split_replay_arguments(raw, options, case_text, err)) return kUsageError;
  Result<Arguments> args = Arguments::parse(options, kReplayOptions);
  if (!args) {
    err << "collcheck replay: " << args.error().text() << '\n';
    return kUsageError;
  }
  if (case_text.empty()) {
    err << "collcheck replay: give the case to replay, e.g. 'allreduce/f32/sum/n=1000/ranks=7'\n";
    return kUsageError;
  }
  Result<Case> c = parse_case(case_text);
  Result<std::uint64_t> schedule_seed =
      parse_count("--schedule-seed", args->get("schedule-seed"), 0, ~std::uint64_t{0});
  Result<FaultChoice> faults = replay_faults(*args);
  auto backends = faults ? backends_of({args->get("backend")}, *args, *faults)
                         : Result<std::vector<std::unique_ptr<Backend>>>(faults.error());
  const std::string property_name = args->get("property");
  const Property* only = property_name.empty() ? nullptr : find_property(property_name);
  if (!c || !schedule_seed || !backends || (!property_name.empty() && !only)) {
    const std::string why = !c               ? c.error().text()
                            : !schedule_seed ? schedule_seed.error().text()
                            : !backends
                                ? backends.error().text()
                                : "--property " + quoted_input(property_name) + ": must be one of " + property_names();
    err << "collcheck replay: " << why << '\n';
    return kUsageError;
  }
  Backend& backend = *backends.value().front();
  if (const std::string why = backend.capabilities().unsupported(*c); !why.empty()) {
    err << "collcheck replay: " << backend.name() << " cannot run " << to_string(*c) << ": " << why << '\n';
    return kUnavailable;
  }
  const Result<MemoryBudget> budget = memory_budget(*args);
  if (Status fit = budget ? case_fits(*budget, backend, *c) : Status(budget.error()); !fit) {
    err << "collcheck replay: " << fit.error().text() << '\n';
    return kUsageError;
  }
  PropertyContext context{*schedule_seed};
  if (!faults->plan.empty()) {
    context.fault_plan = to_string(faults->plan);
    context.transient = transient(faults->plan);
  }
  context.message_memory = message_room(backend, *c, *budget);
  const RepeatedRun base = backend.run(*c, context.run_options(*schedule_seed));
  if (const std::string why = backend.cannot_run_here(); !why.empty()) {
    err << "collcheck replay: " << backend.name() << " cannot run here: " << why << '\n';
    return kUnavailable;
  }
  print_replayed_run(*c, backend, base, context, out);
  return print_property_checks(*c, backend, base, context, only, out) ? 0 : 1;
}

}  // namespace collcheck::cli
