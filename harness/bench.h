// `collcheck bench` without its command line: the size sweep, timing one backend (or two, side
// by side) with nccl-tests' columns and bandwidth formulas, the memory-copy yardstick, CSV, SVG.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "impls/backend/backend.h"
#include "reference/case.h"

namespace collcheck::bench {

// What to time: nccl-tests' flags (-b -e -f -i -n -w -c -d -o -r) plus ours.
struct Settings {
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = std::uint64_t{32} << 20;
  std::uint64_t step_factor = 2;  // used when step_bytes is 0
  std::uint64_t step_bytes = 0;   // > 0: sizes grow by this many bytes instead
  int iterations = 20;
  int warmup = 5;
  bool check = true;
  Collective collective = Collective::AllReduce;
  std::vector<DType> dtypes{DType::Float32};
  std::vector<RedOp> ops{RedOp::Sum};
  std::vector<int> roots{0};
  int nranks = 4;
  double deadline = 0;  // seconds per run; 0: the backend's default; +infinity: none
  // News of a long measurement (a simulation at thousands of ranks): a line naming the backend,
  // the size and the layout, then the backend's words, every progress_every seconds of wall time
  // at most (RunOptions::progress); 0 or null: none.
  double progress_every = 0;
  std::function<void(const std::string& line)> progress;
};

// The sizes in bytes the sweep visits: min_bytes, then times step_factor (or plus step_bytes)
// while not above max_bytes. Empty when min_bytes > max_bytes.
std::vector<std::uint64_t> sweep_sizes(const Settings&);

// NCCL's count for a requested size, as nccl-tests computes it: `bytes` is the larger of one
// rank's buffers, so all-gather, reduce-scatter and all-to-all (whose larger buffer holds a
// block per rank) divide it by the rank count. The remainder is dropped.
std::size_t count_for_bytes(Collective, DType, int nranks, std::uint64_t bytes);

// The case of one row (out of place; the in-place one differs only in `in_place`).
Case bench_case(const Settings&, DType, RedOp, int root, std::uint64_t bytes);

// nccl-tests' figures: algbw = size / time, busbw = algbw * bus_factor (reference/bandwidth.h).
struct Bandwidth {
  double algbw = 0;  // GB/s (1e9 bytes)
  double busbw = 0;
};
Bandwidth bandwidth(const Case&, double seconds);

// One placement (out of place or in place) of one size on one backend.
struct Measurement {
  enum class State { Ok, Unsupported, Failed };
  State state = State::Ok;
  Outcome outcome = Outcome::Ok;  // Failed: how the run ended
  std::string error;              // Failed, or Unsupported as the run found: the backend's words
  double seconds = 0;             // mean per timed call
  Bandwidth bandwidth;
  bool checked = false;                // -c 1
  std::optional<std::size_t> wrong;    // checked: wrong elements; nullopt: the run returned no outputs
  bool checked_calls_missing = false;  // checked, but some run returned no outputs
};

// Wrong output elements of every returned call against the oracle's expected outputs of `c`
// (summed over calls and ranks; a missing rank or a wrongly sized output counts every element
// it should have held). nullopt when the run returned no calls.
std::optional<std::size_t> count_wrong(const Case& c, const RepeatedRun& run);

// Times `c` on `backend` (timed run: warmup, then iterations). With `check` an out-of-place
// run also returns every timed call, and each is checked (the calls split into several timed
// runs, each with its warmup, when their outputs would pass 256 MiB); an in-place run is
// checked by one more call with fresh inputs, as nccl-tests does (see docs/bench.md: timed
// in-place calls feed each call's output into the next, so their expected values are not the
// case's).
Measurement measure(Backend& backend, const Case& c, const Settings& settings);

struct Row {
  std::size_t backend = 0;  // index into Report::backends
  Case out_of_place;        // in place: the same with in_place = true
  Measurement out_of_place_result;
  Measurement in_place_result;
};

struct MemoryCopy {
  std::size_t bytes = 0;
  double seconds = 0;    // best of the repeats
  double bandwidth = 0;  // GB/s
};

// memcpy of `bytes` between two buffers touched beforehand, best of `repeats`.
MemoryCopy measure_memory_copy(std::size_t bytes, int repeats);

struct Report {
  Settings settings;
  std::vector<std::string> backends;  // [0] --backend, [1] --vs
  std::vector<Row> rows;
  MemoryCopy memory;
};

// Runs the sweep over every dtype, op and root of the settings on `backends` (one, or two to
// compare), printing nccl-tests' header, one row per size and backend, and the summary to
// `out` as it goes. Returns 0, or 1 when any run failed or any element was wrong.
int run(const Settings&, std::span<Backend* const> backends, const MemoryCopy&, std::ostream& out, Report& report);

// nccl-tests' closing lines for each backend (# Out of bounds values, # Avg bus bandwidth) and
// the ratio of the two; 1 when any run failed or any element was wrong, else 0.
int print_summary(std::ostream& out, const Report& report);

// The report's cells, as the CSV and the HTML page show them: a header, then a row per backend,
// size and placement, and one for the memory copy.
std::vector<std::vector<std::string>> report_cells(const Report&);
// The report as CSV, one line per backend, size and placement, and one for the memory copy.
void write_csv(std::ostream&, const Report&);
// The report as an SVG line plot: busbw against size (log2 axis), per backend a solid line out
// of place and a dashed one in place, and the memory-copy bandwidth as a horizontal line.
void write_svg(std::ostream&, const Report&);
// The report as one JSON object (nccl-tests' `-J FILE.json`): the sweep's settings, then `results`,
// an object per backend, size and placement with the CSV's columns as numbers (`wrong` null where
// nothing was checked, `state` and `error` where a run did not give a time), the memory copy, and
// the status bench exits with.
void write_json(std::ostream&, const Report&, int status);
// One self-contained page (bench_html.cc): the settings, the averages, the plot inline, and the
// table of report_cells.
void write_html(std::ostream&, const Report&);

// nccl-tests' name of a dtype in its `type` column (`float`, `half`, `bfloat16`, `int32`).
std::string_view nccl_tests_name(DType);

// Cells the table, the CSV (bench.cc) and the plot (bench_plot.cc) share: nccl-tests' redop and
// root cells ("none" and -1 where there is none); numbers go through printf_text (reference/numbers.h).
std::string op_text(const Case&);
int root_number(const Case&);  // -1 for collectives without a root
std::string root_text(const Case&);

}  // namespace collcheck::bench
