// `collcheck bench -b 8 -e 32M -f 2 --backend ring@sim --vs tree@sim`: nccl-tests' flags (short
// and long forms) turned into bench::Settings, the backends made, and the sweep run.
#include "harness/cli_bench.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/arguments.h"
#include "harness/bench.h"
#include "harness/memory_check.h"
#include "impls/registry.h"
#include "reference/numbers.h"

namespace collcheck::cli {
namespace {

constexpr int kUsageError = 2;
constexpr std::size_t kMemoryCopyBytes = std::size_t{256} << 20;
constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 36;
constexpr std::size_t kMaxSizes = 10000;

// nccl-tests' flags, in their order, with their short spellings and defaults.
constexpr Option kOptions[] = {
    {"minbytes", "BYTES", "8", "smallest message size", Use::Once, "-b"},
    {"maxbytes", "BYTES", "32M", "largest message size", Use::Once, "-e"},
    {"stepfactor", "FACTOR", "2", "multiply the size by this each step, 2..1024", Use::Once, "-f"},
    {"stepbytes", "BYTES", "0", "add this many bytes each step instead of -f (0: use -f)", Use::Once, "-i"},
    {"iters", "N", "20", "timed iterations per size", Use::Once, "-n"},
    {"warmup_iters", "N", "5", "untimed iterations before them", Use::Once, "-w --warmup-iters --warmup"},
    {"check", "0|1", "1", "check every result against the oracle", Use::Once, "-c"},
    {"datatype", "DTYPE|all", "float", "element type (nccl-tests' names or ours)", Use::Once, "-d --dtype"},
    {"op", "OP|all", "sum", "reduction op", Use::Once, "-o"},
    {"root", "ROOT|all", "0", "root of rooted collectives; -1 or all: every root", Use::Once, "-r"},
    {"backend", "B", "ring@sim", "the backend to time (check --help gives the grammar)"},
    {"vs", "B", "", "a second backend, timed on the same sizes and compared"},
    {"collective", "C", "allreduce", "the collective"},
    {"ranks", "N", "4", "rank count"},
    {"csv", "FILE", "", "write the table as CSV"},
    {"svg", "FILE", "", "plot busbw against size as SVG"},
    {"html", "FILE", "", "write the table and the plot as one self-contained HTML page"},
    {"output_file", "FILE", "", "write the report to FILE, its format from the suffix: .json or .csv (nccl-tests' -J)",
     Use::Once, "-J --output-file"},
    {"deadline", "T", "", "a run not done by then is a hang (30, 2.5, 90s, 2m; none); default: the backend's"},
    kProgressOption,
    kMemoryLimitOption,
};

// nccl-tests' short flags and the other spellings we accept, to the long names above.
const std::map<std::string_view, std::string_view>& spellings() {
  static const std::map<std::string_view, std::string_view> map = [] {
    std::map<std::string_view, std::string_view> all;
    for (const Option& option : kOptions) {
      for (std::string_view spelling : other_spellings(option)) all.emplace(spelling, option.name);
    }
    return all;
  }();
  return map;
}

// "-b, -e, -f, ...": the short spellings, in the table's order.
std::string short_options() {
  std::string names;
  for (const Option& option : kOptions) {
    for (std::string_view spelling : other_spellings(option)) {
      if (!spelling.starts_with("--")) names += (names.empty() ? "" : ", ") + std::string(spelling);
    }
  }
  return names;
}

// The arguments with every spelling made `--long`, and how the user spelled each flag, so
// errors name the flag as it was typed.
struct Spelled {
  std::vector<std::string> args;
  std::map<std::string, std::string> typed;  // long name -> as typed
  std::string field(std::string_view flag) const {
    auto found = typed.find(std::string(flag));
    return found == typed.end() ? "--" + std::string(flag) : found->second;
  }
};

Result<Spelled> respell(std::span<const std::string_view> raw) {
  Spelled spelled;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const std::string_view arg = raw[i];
    const std::string_view flag = arg.substr(0, arg.find('='));
    const auto found = spellings().find(flag);
    if (found == spellings().end() && arg.size() > 1 && arg[0] == '-' && arg[1] != '-') {
      return Error{escaped_input(arg), "is not an option: short options are " + short_options()};
    }
    if (found == spellings().end() && !arg.starts_with("--")) {
      spelled.args.emplace_back(arg);  // a stray word: Arguments::parse names it
      continue;
    }
    const std::string long_name = found != spellings().end() ? std::string(found->second) : std::string(flag.substr(2));
    spelled.typed[long_name] = std::string(flag);
    spelled.args.push_back("--" + long_name + std::string(arg.substr(flag.size())));
    // Every bench flag takes a value; the next word is it even when it looks like a flag (`-r -1`).
    if (flag.size() == arg.size() && i + 1 < raw.size()) spelled.args.emplace_back(raw[++i]);
  }
  return spelled;
}

Result<std::uint64_t> number(const Arguments& args, const Spelled& spelled, std::string_view flag, std::uint64_t low,
                             std::uint64_t high) {
  return parse_count(spelled.field(flag), args.get(flag), low, high);
}

Status parse_sizes(const Arguments& args, const Spelled& spelled, bench::Settings& s) {
  if (args.has("stepfactor") && args.has("stepbytes")) {
    return Error{spelled.field("stepbytes"),
                 "cannot be combined with " + spelled.field("stepfactor") + ": give a step factor or a step in bytes"};
  }
  Result<std::uint64_t> step_bytes = number(args, spelled, "stepbytes", args.has("stepbytes") ? 1 : 0, kMaxBytes);
  if (!step_bytes) return step_bytes.error();
  Result<std::uint64_t> factor = number(args, spelled, "stepfactor", 2, 1024);
  if (!factor) return factor.error();
  Result<std::uint64_t> min = number(args, spelled, "minbytes", 0, kMaxBytes);
  if (!min) return min.error();
  Result<std::uint64_t> max = number(args, spelled, "maxbytes", 0, kMaxBytes);
  if (!max) return max.error();
  if (*min > *max) {
    return Error{spelled.field("minbytes"), std::to_string(*min) + ": must be at most " + spelled.field("maxbytes") +
                                                " (" + std::to_string(*max) + ")"};
  }
  s.min_bytes = *min;
  s.max_bytes = *max;
  s.step_factor = *factor;
  s.step_bytes = *step_bytes;
  // A factor of 2 or more gives at most 37 sizes; a step in bytes may give billions.
  if (s.step_bytes > 0 && (s.max_bytes - s.min_bytes) / s.step_bytes >= kMaxSizes) {
    return Error{spelled.field("stepbytes"), std::to_string(s.step_bytes) + ": the sweep would have more than " +
                                                 std::to_string(kMaxSizes) + " sizes; take a larger step"};
  }
  return Ok{};
}

Status parse_loop(const Arguments& args, const Spelled& spelled, bench::Settings& s) {
  Result<std::uint64_t> iterations = number(args, spelled, "iters", 1, 1'000'000);
  if (!iterations) return iterations.error();
  Result<std::uint64_t> warmup = number(args, spelled, "warmup_iters", 0, 1'000'000);
  if (!warmup) return warmup.error();
  const std::string check = args.get("check");
  if (check != "0" && check != "1") return Error{spelled.field("check"), quoted_input(check) + ": must be 0 or 1"};
  s.iterations = static_cast<int>(*iterations);
  s.warmup = static_cast<int>(*warmup);
  s.check = check == "1";
  Result<double> progress = progress_option(args);
  if (!progress) return progress.error();
  s.progress_every = *progress;
  if (!args.has("deadline")) return Ok{};
  Result<double> deadline = parse_duration(spelled.field("deadline"), args.get("deadline"), kDeadlineRange);
  if (!deadline) return deadline.error();
  s.deadline = *deadline;
  return Ok{};
}

Status parse_case_fields(const Arguments& args, const Spelled& spelled, bench::Settings& s) {
  Result<Collective> collective = parse_collective(args.get("collective"));
  if (!collective) return Error{spelled.field("collective"), collective.error().message};
  if (per_rank_counts(*collective)) {
    return Error{spelled.field("collective"),
                 std::string(name(*collective)) +
                     ": bench times the collectives of one count (nccl-tests' sizes); the v-collectives take a "
                     "count per rank: check them with collcheck check"};
  }
  Result<std::uint64_t> ranks = number(args, spelled, "ranks", 1, kMaxRanks);
  if (!ranks) return ranks.error();
  s.collective = *collective;
  s.nranks = static_cast<int>(*ranks);
  const std::string dtype = args.get("datatype");
  if (dtype == "all") {
    s.dtypes.assign(all_dtypes().begin(), all_dtypes().end());
  } else {
    Result<DType> parsed = parse_dtype(dtype);
    if (!parsed) return Error{spelled.field("datatype"), parsed.error().message + ", or all"};
    s.dtypes = {*parsed};
  }
  const std::string op = args.get("op");
  if (op == "all") {
    s.ops.assign(all_ops().begin(), all_ops().end());
  } else {
    Result<RedOp> parsed = parse_op(op);
    if (!parsed) return Error{spelled.field("op"), parsed.error().message + ", or all"};
    s.ops = {*parsed};
  }
  const std::string root = args.get("root");
  s.roots.clear();
  if (root == "all" || root == "-1") {
    for (int r = 0; r < s.nranks; ++r) s.roots.push_back(r);
    return Ok{};
  }
  Result<std::uint64_t> parsed = parse_count(spelled.field("root"), root, 0, *ranks - 1);
  if (!parsed) return Error{parsed.error().field, parsed.error().message + ", or -1 or all for every root"};
  s.roots = {static_cast<int>(*parsed)};
  return Ok{};
}

// What bench exits with when a backend cannot run on this machine: a skip, as check and replay say.
constexpr int kCannotRunHere = 77;

// Exactly one backend that implements the collective.
Result<std::unique_ptr<Backend>> one_backend(std::string_view field, const std::string& spec,
                                             const bench::Settings& s) {
  BackendOptions options;
  options.deadline = s.deadline;
  Result<std::unique_ptr<Backend>> made = make_one_backend(spec, options);
  if (!made) return Error{std::string(field), made.error().message};
  const Capabilities capabilities = (*made)->capabilities();
  if (std::find(capabilities.collectives.begin(), capabilities.collectives.end(), s.collective) ==
      capabilities.collectives.end()) {
    std::string names;
    for (Collective c : capabilities.collectives) {
      if (!per_rank_counts(c)) names += (names.empty() ? "" : ", ") + std::string(name(c));  // bench refuses those
    }
    return Error{"--collective", std::string(name(s.collective)) + ": " + spec + " implements " + names};
  }
  return made;
}

// The report's files, opened before anything is timed: --csv, --svg, --html, and -J FILE
// (nccl-tests' --output_file), whose format is taken from the suffix as nccl-tests takes it (.json;
// and .csv, which --csv also writes). Null where not asked for.
struct ReportFiles {
  std::unique_ptr<std::ofstream> csv, svg, html, output;
  bool output_json = false;
  void write(const bench::Report& report, int status) const {
    if (csv) bench::write_csv(*csv, report);
    if (svg) bench::write_svg(*svg, report);
    if (html) bench::write_html(*html, report);
    if (output && output_json) bench::write_json(*output, report, status);
    if (output && !output_json) bench::write_csv(*output, report);
  }
};
Result<ReportFiles> open_report_files(const Arguments& args, const Spelled& spelled) {
  ReportFiles files;
  for (auto [flag, file] : {std::pair{"csv", &files.csv}, {"svg", &files.svg}, {"html", &files.html}}) {
    Result<std::unique_ptr<std::ofstream>> opened = open_output(args, flag);
    if (!opened) return opened.error();
    *file = std::move(opened).value();
  }
  if (!args.has("output_file")) return files;
  const std::string path = args.get("output_file");
  const std::string suffix = std::filesystem::path(path).extension().string();
  files.output_json = suffix == ".json" || suffix == ".JSON";
  if (!files.output_json && suffix != ".csv" && suffix != ".CSV") {
    return Error{spelled.field("output_file"),
                 quoted_input(path) + ": the format is taken from the suffix, which must be .json or .csv"};
  }
  Result<std::unique_ptr<std::ofstream>> opened = open_output(args, "output_file");
  if (!opened) return Error{spelled.field("output_file"), quoted_input(path) + ": cannot be opened for writing"};
  files.output = std::move(opened).value();
  return files;
}

// Refuses, before anything is timed, a sweep whose largest size no backend's run could hold: with
// -c 1 the checked case's estimate (its timed calls' outputs handed back, the oracle's), with -c 0
// the timed run's alone (nothing handed back; on @sim no data at all).
Status largest_size_fits(const Arguments& args, const bench::Settings& s,
                         const std::vector<std::unique_ptr<Backend>>& backends) {
  Result<MemoryBudget> budget = memory_budget(args);
  if (!budget) return budget.error();
  const std::vector<std::uint64_t> sizes = bench::sweep_sizes(s);
  if (sizes.empty()) return Ok{};
  for (const auto& backend : backends) {
    for (DType dtype : s.dtypes) {
      const Case c = bench::bench_case(s, dtype, s.ops.front(), s.roots.front(), sizes.back());
      const MemoryEstimate estimate =
          s.check ? checked_case_memory(*backend, c) : backend->estimate_memory(c, EstimateFor::TimedRun);
      Status fit =
          fits(estimate, *budget, "-e " + format_bytes(sizes.back()) + " on " + backend->name(), "lower -e or --ranks");
      if (!fit) return fit;
    }
  }
  return Ok{};
}

}  // namespace

const CommandHelp& bench_help() {
  static constexpr CommandHelp help{
      "bench",
      "time a backend with nccl-tests' flags and columns, optionally against another",
      kOptions,
      "",
      "Sizes are bytes and take K, M, G. Every size is timed, checked and printed as nccl-tests prints it;\n"
      "@sim backends report the time the simulated fabric predicts (docs/bench.md).",
      "collcheck bench -b 8 -e 128M -f 2 -n 20 --backend ring@proc --vs mpi --svg ring-vs-mpi.svg"};
  return help;
}

int run_bench(std::span<const std::string_view> raw, std::ostream& out, std::ostream& err) {
  auto usage_error = [&](const Error& error) {
    err << "collcheck bench: " << error.text() << '\n';
    return kUsageError;
  };
  Result<Spelled> spelled = respell(raw);
  if (!spelled) return usage_error(spelled.error());
  const std::vector<std::string_view> views(spelled->args.begin(), spelled->args.end());
  Result<Arguments> args = Arguments::parse(views, kOptions);
  if (!args) return usage_error(args.error());
  bench::Settings settings;
  settings.progress = [&err](const std::string& line) { err << "collcheck bench: " << line << std::endl; };
  for (const Status& status : {parse_sizes(*args, *spelled, settings), parse_loop(*args, *spelled, settings),
                               parse_case_fields(*args, *spelled, settings)}) {
    if (!status) return usage_error(status.error());
  }
  std::vector<std::unique_ptr<Backend>> backends;
  for (std::string_view flag : {"backend", "vs"}) {
    if (flag == "vs" && !args->has("vs")) continue;
    Result<std::unique_ptr<Backend>> backend = one_backend("--" + std::string(flag), args->get(flag), settings);
    if (!backend) return usage_error(backend.error());
    backends.push_back(std::move(backend).value());
  }
  if (Status fit = largest_size_fits(*args, settings, backends); !fit) return usage_error(fit.error());
  // Not a measurement: a backend this machine cannot run (no device, no launcher) is said, not timed.
  for (const auto& backend : backends) {
    if (const std::string why = backend->cannot_run_here(); !why.empty()) {
      err << "collcheck bench: " << backend->name() << " cannot run here: " << why << '\n';
      return kCannotRunHere;
    }
  }
  Result<ReportFiles> files = open_report_files(*args, *spelled);
  if (!files) return usage_error(files.error());

  std::vector<Backend*> pointers;
  pointers.reserve(backends.size());
  for (auto& backend : backends) pointers.push_back(backend.get());
  bench::Report report;
  const int status = bench::run(settings, pointers, bench::measure_memory_copy(kMemoryCopyBytes, 5), out, report);
  files->write(report, status);
  return status;
}

}  // namespace collcheck::cli
