// `collcheck export`: one schedule of a built-in algorithm in the text form, to standard output
// or --output FILE. The shape is checked as `simulate` checks it; the text is in the largest
// chunk that divides the count and every range, so the file admits every multiple of it.
#include "harness/cli_export.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>

#include "harness/arguments.h"
#include "harness/knob_options.h"
#include "harness/memory_check.h"
#include "impls/algorithms/algorithms.h"
#include "impls/schedule/schedule_file.h"

namespace collcheck::cli {
namespace {

constexpr Option kOptions[] = {
    {"algorithm", "A", "", "the algorithm to write (collcheck list names them)"},
    {"collective", "C", "allreduce", "the collective (not the v-collectives: their counts are per rank)"},
    {"ranks", "N", "4", "rank count, up to 16384"},
    {"count", "N", "16",
     "elements (NCCL's count), at least 1; the file admits its multiples that keep every range whole"},
    {"root", "R", "0", "root of rooted collectives"},
    {"inplace", "", "", "the in-place schedule (the output buffer holds the input)"},
    kChunkOption,
    kChannelsOption,
    kFanInOption,
    {"output", "FILE", "", "write the text here instead of standard output"},
    kMemoryLimitOption,
};
constexpr int kUsageError = 2;
constexpr std::uint64_t kTextBytesPerStep = 64;  // a line of the text form, at most about this

Result<Case> export_shape(const Arguments& args) {
  Result<Collective> collective = parse_collective(args.get("collective"));
  if (!collective) return Error{"--collective", collective.error().text()};
  if (per_rank_counts(*collective)) {
    return Error{"--collective",
                 std::string(name(*collective)) +
                     ": the text form is for collectives of one count; the v-collectives' counts are per rank"};
  }
  Result<std::uint64_t> ranks = parse_count("--ranks", args.get("ranks"), 1, 16384);
  if (!ranks) return ranks.error();
  Result<std::uint64_t> count = parse_count("--count", args.get("count"), 1, kMaxBufferElements);
  if (!count) return count.error();
  Result<std::uint64_t> root = parse_count("--root", args.get("root"), 0, *ranks - 1);
  if (!root) return root.error();
  Case shape;
  shape.collective = *collective;
  shape.nranks = static_cast<int>(*ranks);
  shape.count = *count;
  shape.root = static_cast<int>(*root);
  shape.in_place = args.has("inplace");
  return shape;
}

// Refuses, before anything is built, a schedule whose steps and text memory could not hold.
Status export_fits(const Arguments& args, std::string_view algorithm, const Case& shape, const Knobs& knobs) {
  Result<ScheduleSize> size = estimate_schedule(algorithm, shape, knobs);
  if (!size) return size.error();
  Result<MemoryBudget> budget = memory_budget(args);
  if (!budget) return budget.error();
  MemoryEstimate estimate = schedule_memory(*size);
  estimate.add("text", saturating_product(size->steps, kTextBytesPerStep),
               std::to_string(size->steps) + " lines x " + std::to_string(kTextBytesPerStep) + " B");
  return fits(estimate, *budget, "the export", "lower --ranks or --count");
}

}  // namespace

const CommandHelp& export_help() {
  static constexpr CommandHelp help{
      "export",
      "write a built-in algorithm's schedule in collcheck's text form (docs/schedules.md)",
      kOptions,
      "",
      "The text is what prove --schedule FILE and --backend schedule:FILE@sim|proc read back.",
      "collcheck export --algorithm ring --collective allreduce --ranks 4 --count 16 --output ring4.txt"};
  return help;
}

int run_export(std::span<const std::string_view> raw, std::ostream& out, std::ostream& err) {
  Result<Arguments> args = Arguments::parse(raw, kOptions);
  if (!args) {
    err << "collcheck export: " << args.error().text() << '\n';
    return kUsageError;
  }
  const std::string algorithm = args->get("algorithm");
  const auto algorithms = all_algorithms();
  if (std::none_of(algorithms.begin(), algorithms.end(), [&](const Algorithm& a) { return a.name == algorithm; })) {
    err << "collcheck export: --algorithm " << (algorithm.empty() ? "(none given)" : algorithm) << ": one of "
        << algorithm_names() << '\n';
    return kUsageError;
  }
  Result<Case> shape = export_shape(*args);
  Result<Knobs> knobs = shape ? parse_knob_options(*args) : Result<Knobs>(shape.error());
  Status fit = knobs ? export_fits(*args, algorithm, *shape, *knobs) : Status(knobs.error());
  Result<Schedule> schedule = fit ? make_schedule(algorithm, *shape, *knobs) : Result<Schedule>(fit.error());
  Result<std::string> text =
      schedule ? schedule_text(std::move(schedule).value()) : Result<std::string>(schedule.error());
  if (!text) {
    err << "collcheck export: " << text.error().text() << '\n';
    return kUsageError;
  }
  if (!args->has("output")) {
    out << *text;
    return 0;
  }
  std::ofstream file(args->get("output"));
  if (!(file << *text) || !file.flush()) {
    err << "collcheck export: --output " << args->get("output") << ": cannot be written\n";
    return kUsageError;
  }
  return 0;
}

}  // namespace collcheck::cli
