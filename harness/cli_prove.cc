// `collcheck prove --algorithm ring --collective allreduce --ranks 1..1024`: builds every
// schedule of the sweep, proves it, and prints one table row per band of rank counts.
// `collcheck prove --schedule FILE` proves an MSCCL algorithm file (cli_prove_schedule.cc).
#include "harness/cli_prove.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/arguments.h"
#include "harness/knob_options.h"
#include "harness/memory_check.h"
#include "harness/text_table.h"
#include "impls/algorithms/algorithms.h"
#include "impls/prove/proof.h"
#include "impls/prove/symmetry.h"
#include "reference/counts.h"
#include "reference/numbers.h"
#include "reference/shared_indices.h"

namespace collcheck::cli {
namespace {

constexpr Option kOptions[] = {
    {"algorithm", "A|all", "", "the algorithm to prove (collcheck list names them), or all; or --schedule"},
    {"schedule", "FILE", "",
     "instead, a schedule file (the text form or MSCCL XML): every shape it admits (docs/schedules.md)"},
    {"collective", "C", "", "only its schedules for these collectives; default: every one it implements",
     Use::Repeatable},
    {"ranks", "LIST", "1..64", "rank counts, up to 16384"},
    {"counts", "LIST", "", "element counts; default: the awkward counts of each rank count (below)"},
    {"roots", "some|all", "some", "rooted collectives: every root up to 16 ranks, above that 0, 1, n/2, n-1; or all"},
    {"layout", "both|inplace|outofplace", "both", "buffer layouts to prove"},
    kChunkOption,
    kChannelsOption,
    kFanInOption,
    kMemoryLimitOption,
    {"jobs", "N", "",
     "schedules proven at once, 1..256; default: one per core, fewer where memory would not hold as many of the "
     "largest proof"},
};
constexpr int kUsageError = 2;

struct Sweep {
  std::vector<const Algorithm*> algorithms;
  std::vector<std::uint64_t> ranks;
  std::vector<std::uint64_t> counts;  // empty: the awkward counts for each rank count
  bool all_roots = false;
  std::vector<bool> layouts;  // in_place values
  Knobs knobs;
  MemoryBudget budget;
  unsigned jobs = 1;     // proofs at once: what --jobs asks, fewer where memory would not hold them
  unsigned threads = 1;  // what --jobs asks: a rotation check's threads hold no proof, so memory does not bound them
  // Lines cut before the proofs (shape_fits, to count a v-collective's pieces), kept for them.
  std::shared_ptr<CutLines> cut_lines = std::make_shared<CutLines>();
};

std::string line_key(const Algorithm& algorithm, const Case& shape) {
  return std::string(algorithm.name) + " " + to_string(shape);
}

// Counts where schedules go wrong: none, one, around nranks, a prime, around the chunk size.
std::vector<std::size_t> awkward_counts(std::size_t n, std::size_t chunk) {
  std::vector<std::size_t> counts{0, 1, n - 1, n, n + 1, 7, 3 * n + 2};
  if (chunk > 0) counts.insert(counts.end(), {chunk - 1, chunk + 1, n * chunk - 1, n * chunk + 1});
  if (n <= 64) counts.push_back(64 * n + 13);  // large: many chunks per rank
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

std::vector<int> roots_for(Collective collective, int n, bool all) {
  if (!rooted(collective)) return {0};
  if (all || n <= 16) {
    std::vector<int> roots(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) roots[static_cast<std::size_t>(r)] = r;
    return roots;
  }
  std::vector<int> roots{0, 1, n / 2, n - 1};
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

// The layouts of the sweep a collective runs: the v-collectives run out of place only.
std::vector<bool> layouts_for(Collective collective, std::vector<bool> layouts) {
  if (per_rank_counts(collective)) std::erase(layouts, true);
  return layouts;
}

// What a shape's proof is called in a refusal.
std::string shape_words(const Algorithm& algorithm, const Case& shape) {
  return std::string(algorithm.name) + " " + std::string(name(shape.collective)) + " on " +
         std::to_string(shape.nranks) + " ranks, count " + std::to_string(shape.count);
}

// Whether memory holds the proof of `shape`, in full or else on rank 0 alone (or, where the ranks'
// buffers differ, through a cover, in units or in pieces); `largest` the largest proof the sweep may
// run, by its estimate so far.
// A shape whose full proof does not fit is proven that way or refused when reached, never in full,
// so it counts by that way's estimate: it does not lower the proofs run at once.
Status shape_fits(const Algorithm& algorithm, const Case& shape, const Sweep& sweep, std::uint64_t& largest) {
  Result<MemoryEstimate> estimate = proved_shape_memory(algorithm.name, shape, sweep.knobs);
  if (!estimate) return Ok{};
  Status fit = fits(*estimate, sweep.budget, shape_words(algorithm, shape), "lower --ranks or --counts");
  if (fit) {
    largest = std::max(largest, estimate->total());
    return fit;
  }
  // Else on rank 0 alone (every rank's buffers alike, or a cover offered: cover.h); else in units (in_units) of
  // what the counts share; a v-collective whose counts share nothing in pieces, its line cut here to count them.
  Result<MemoryEstimate> rank0 = proved_shape_memory(algorithm.name, shape, sweep.knobs, true);
  const bool alike = provenance::rank_buffers_alike(shape);
  Status rank0_fit = rank0 ? fits(*rank0, sweep.budget, shape_words(algorithm, shape) + " through its cover",
                                  "lower --ranks or --counts")
                           : fit;
  if (rank0_fit) largest = std::max(largest, rank0->total());
  if (rank0_fit || alike) return alike && !rank0_fit ? fit : Ok{};
  const std::uint64_t unit = counts_unit(shape);
  if (unit <= 1) {
    // In pieces at best, its line cut here once and kept for the proof; not where it is too long.
    if (!on_a_line(shape)) return rank0_fit;
    std::optional<InPieces> pieces;
    std::uint64_t bytes = 0;
    const std::optional<Status> pieces_fit =
        in_pieces_fit(algorithm.name, shape, sweep.knobs, sweep.budget, shape_words(algorithm, shape), pieces, bytes);
    if (!pieces_fit) return fit;
    if (*pieces_fit) {
      largest = std::max(largest, bytes);
      // Kept where a proof as large as the largest so far still fits beside every line kept.
      const std::uint64_t kept = kept_line_bytes(shape, *pieces);
      const std::uint64_t room = sweep.budget.bytes == 0 ? std::numeric_limits<std::uint64_t>::max()
                                                         : sweep.budget.bytes - std::min(sweep.budget.bytes, largest);
      sweep.cut_lines->keep(line_key(algorithm, shape), std::move(*pieces), kept, room);
    }
    return *pieces_fit;
  }
  Result<MemoryEstimate> in_units = proved_shape_memory(algorithm.name, shape, sweep.knobs, false, unit);
  if (!in_units || !fits(*in_units, sweep.budget, "", "")) return fit;
  largest = std::max(largest, in_units->total());
  return Ok{};
}

// Refuses, before any proof, a sweep one of whose shapes memory could not hold. A shape whose
// full proof would not fit but whose proof on rank 0 alone (or in units) would passes here: it is
// refused when it is reached, before its full proof, if it turns out neither symmetric nor in
// units small enough to fit.
Status sweep_fits(const Arguments& args, Sweep& sweep) {
  Result<MemoryBudget> budget = memory_budget(args);
  if (!budget) return budget.error();
  sweep.budget = *budget;
  std::uint64_t largest = 0;  // the largest proof of the sweep, by its estimate
  for (const Algorithm* algorithm : sweep.algorithms) {
    for (std::uint64_t n : sweep.ranks) {
      const std::vector<std::size_t> counts = sweep.counts.empty()
                                                  ? awkward_counts(n, sweep.knobs.chunk)
                                                  : std::vector<std::size_t>(sweep.counts.begin(), sweep.counts.end());
      for (bool in_place : counts.empty() ? std::vector<bool>{} : layouts_for(algorithm->collective, sweep.layouts)) {
        const Case shape = spread_case(algorithm->collective, counts.back(), static_cast<int>(n), 0, in_place);
        if (Status fit = shape_fits(*algorithm, shape, sweep, largest); !fit) return fit;
      }
    }
  }
  // As many proofs at once as the budget holds of the largest (each is refused on its own as before).
  if (budget->bytes > 0 && largest > 0) {
    sweep.jobs = static_cast<unsigned>(std::clamp<std::uint64_t>(budget->bytes / largest, 1, sweep.jobs));
  }
  // The lines kept for proofs in pieces hold what those proofs at once leave, no more.
  if (budget->bytes > 0) {
    sweep.cut_lines->hold_at_most(budget->bytes - std::min(budget->bytes, largest * sweep.jobs));
  }
  return Ok{};
}

Result<Sweep> parse_sweep(const Arguments& args) {
  Sweep sweep;
  const std::string algorithm = args.get("algorithm");
  if (algorithm.empty()) {
    return Error{"--algorithm", "is required: one of " + algorithm_names() + ", or all (or --schedule FILE)"};
  }
  std::vector<Collective> collectives;
  for (const std::string& text : args.all("collective")) {
    Result<Collective> c = parse_collective(text);
    if (!c) return Error{"--collective", c.error().message};
    collectives.push_back(*c);
  }
  for (const Algorithm& a : all_algorithms()) {
    const bool named = algorithm == "all" || a.name == algorithm;
    const bool wanted =
        collectives.empty() || std::find(collectives.begin(), collectives.end(), a.collective) != collectives.end();
    if (named && wanted) sweep.algorithms.push_back(&a);
  }
  if (sweep.algorithms.empty()) {
    return Error{"--algorithm", quoted_input(algorithm) + " with the collectives given: none; algorithms are " +
                                    algorithm_names() + " (collcheck list shows which collectives each implements)"};
  }
  Result<std::vector<std::uint64_t>> ranks = parse_set("--ranks", args.get("ranks"), 1, kMaxRanks);
  if (!ranks) return ranks.error();
  sweep.ranks = *ranks;
  if (args.has("counts")) {
    Result<std::vector<std::uint64_t>> counts = parse_set("--counts", args.get("counts"), 0, 1 << 24);
    if (!counts) return counts.error();
    sweep.counts = *counts;
  }
  const std::string roots = args.get("roots");
  if (roots != "some" && roots != "all") return Error{"--roots", quoted_input(roots) + ": must be some or all"};
  sweep.all_roots = roots == "all";
  const std::string layout = args.get("layout");
  if (layout == "both") sweep.layouts = {false, true};
  else if (layout == "inplace") sweep.layouts = {true};
  else if (layout == "outofplace") sweep.layouts = {false};
  else return Error{"--layout", quoted_input(layout) + ": must be both, inplace or outofplace"};
  Result<Knobs> knobs = parse_knob_options(args);
  if (!knobs) return knobs.error();
  sweep.knobs = *knobs;
  Result<unsigned> jobs = jobs_option(args, cores());
  if (!jobs) return jobs.error();
  sweep.jobs = sweep.threads = *jobs;
  if (Status fit = sweep_fits(args, sweep); !fit) return fit.error();
  return sweep;
}

// Rank counts are reported in bands: each count alone up to 16, then powers of two.
std::string band_of(std::uint64_t n) {
  if (n <= 16) return std::to_string(n);
  std::uint64_t low = 17, high = 32;
  while (n > high) {
    low = high + 1;
    high *= 2;
  }
  return std::to_string(low) + ".." + std::to_string(high);
}

struct ShapeProof;

struct Band {
  std::string label;
  std::size_t cases = 0, failed = 0, steps = 0;
  std::size_t symmetric = 0;  // proven on rank 0 alone: every rank's program is rank 0's turned
  std::size_t in_units = 0;   // proven in units of several elements (impls/prove: in_units)
  std::size_t in_pieces = 0;  // proven in pieces of the collective's line (impls/prove: in_pieces)
  double seconds = 0;

  void add(const ShapeProof& proof);  // one more shape's proof
};

struct Failure {
  std::string what;
  std::string message;
};

// One shape's proof: what it adds to its band, the failure to report, or the refusal of a shape
// whose full proof is needed and memory could not hold.
struct ShapeProof {
  Status refused = Ok{};
  std::size_t steps = 0;
  bool symmetric = false;
  bool in_units = false;
  bool in_pieces = false;
  double seconds = 0;
  std::optional<Failure> failure;
};

// What a failed proof in units or pieces says an element stands for.
std::string units_words(std::uint64_t unit) {
  return " (proven in units of " + std::to_string(unit) + " elements: element u stands for elements u x " +
         std::to_string(unit) + " .. that + " + std::to_string(unit - 1) + ", input index i for i x " +
         std::to_string(unit) + " .. that + " + std::to_string(unit - 1) + ")";
}
std::string pieces_words(const Case& shape, std::uint64_t pieces) {
  return " (proven in pieces: the collective's " + std::to_string(shape.count) + " elements in block order cut into " +
         std::to_string(pieces) +
         " pieces where a block or any step's range starts or ends, each proven as one element; element and index "
         "numbers count pieces)";
}

// The proof of every rank of a schedule with no symmetry: in units where it never cuts one (fewer
// elements, the same steps), else in pieces where it keeps every element in its place, else element
// by element; nothing where memory could not hold it (`refused` then says so).
std::optional<Proof> prove_without_symmetry(const Algorithm& algorithm, const Case& shape, const Schedule& made,
                                            const Sweep& sweep, Status& refused) {
  const Knobs& knobs = sweep.knobs;
  std::optional<InUnits> units = in_units(made);
  std::optional<InPieces> pieces = units ? std::nullopt : sweep.cut_lines->take(line_key(algorithm, shape));
  if (!units && !pieces) pieces = in_pieces(made);
  Result<MemoryEstimate> estimate =
      pieces ? proved_in_pieces_memory(algorithm.name, shape, pieces->schedule.shape, knobs)
             : proved_shape_memory(algorithm.name, shape, knobs, false, units ? units->unit : 1);
  refused = estimate ? fits(*estimate, sweep.budget, shape_words(algorithm, shape),
                            "its schedule is not symmetric (by rotation or XOR), so every rank is proven: "
                            "lower --ranks or --counts")
                     : Status(Ok{});
  if (!refused) return std::nullopt;
  if (!units && !pieces) return prove_in_full(made);
  Proof proof = units ? prove_in_full(units->schedule) : prove_in_pieces(*pieces);
  if (units) proof.unit *= units->unit;
  if (proof.ok) return proof;
  // A failure is named in the schedule's own terms where its full proof fits, else in units or
  // pieces; a message that left its place is decided by the full proof alone.
  Result<MemoryEstimate> full = proved_shape_memory(algorithm.name, shape, knobs);
  if (full && fits(*full, sweep.budget, "", "")) return prove_in_full(made);
  if (proof.undecided && full) {
    refused = fits(*full, sweep.budget, shape_words(algorithm, shape),
                   "a message of its schedule is received elsewhere on the collective's line than it was sent from, "
                   "so the proof in pieces cannot decide and every element is proven: lower --ranks or --counts");
    return std::nullopt;
  }
  proof.message += units ? units_words(units->unit) : pieces_words(shape, pieces->pieces);
  return proof;
}

void Band::add(const ShapeProof& proof) {
  ++cases;
  steps += proof.steps;
  symmetric += proof.symmetric ? 1 : 0;
  in_units += proof.in_units ? 1 : 0;
  in_pieces += proof.in_pieces ? 1 : 0;
  seconds += proof.seconds;
  failed += proof.failure ? 1 : 0;
}

// `threads`: those its rotation check may use (the jobs the sweep has more than shapes).
ShapeProof prove_one(const Algorithm& algorithm, const Case& shape, const Sweep& sweep, unsigned threads) {
  const Knobs& knobs = sweep.knobs;
  ShapeProof result;
  const auto begin = std::chrono::steady_clock::now();
  // Made on demand where the algorithm can: a symmetric schedule is proven on rank 0,
  // any other in full as its steps are made; neither is stored.
  Result<Schedule> made = make_schedule(algorithm.name, shape, knobs, Form::OnDemand);
  std::optional<Proof> proof = made ? prove_by_symmetry(*made, threads) : Proof{false, made.error().message, 0, 0};
  if (!proof) proof = prove_without_symmetry(algorithm, shape, *made, sweep, result.refused);
  if (!proof) return result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  result.steps = proof->steps;
  result.symmetric = proof->by_symmetry;
  result.in_units = proof->unit > 1;
  result.in_pieces = proof->pieces > 0;
  if (proof->ok) return result;
  // A v-collective's sweep count is its first entry (spread_counts), its n their sum.
  const std::size_t count = per_rank_counts(shape.collective) ? shape.counts.front() : shape.count;
  std::string replay = "collcheck prove --algorithm " + std::string(algorithm.name) + " --collective " +
                       std::string(name(shape.collective)) + " --ranks " + std::to_string(shape.nranks) + " --counts " +
                       std::to_string(count) + " --layout " + (shape.in_place ? "inplace" : "outofplace") +
                       " --chunk " + std::to_string(knobs.chunk) + " --channels " + std::to_string(knobs.channels) +
                       " --fan-in " + std::to_string(knobs.fan_in);
  if (rooted(shape.collective)) replay += " --roots all  (root " + std::to_string(shape.root) + ")";
  result.failure = Failure{replay, proof->message};
  return result;
}

// A shape of the sweep, made as its proof starts: a sweep must not hold every all-to-all-v's n^2 counts.
struct ShapeToProve {
  std::size_t count;
  int nranks, root;
  bool in_place;
};

// Proves `shapes` on `jobs` threads, each taking the next shape not yet taken; the results in the
// shapes' order. A refusal stops every shape after it from starting.
std::vector<ShapeProof> prove_shapes(const Algorithm& algorithm, const std::vector<ShapeToProve>& shapes,
                                     const Sweep& sweep) {
  std::vector<ShapeProof> results(shapes.size());
  const std::size_t threads = std::min<std::size_t>(sweep.jobs, shapes.size());
  const auto per_proof = static_cast<unsigned>(threads == 0 ? 1 : std::max<std::size_t>(1, sweep.threads / threads));
  std::atomic<std::size_t> refused_at{shapes.size()};
  share_indices(shapes.size(), threads, [&](std::size_t k, std::size_t) {
    if (k >= refused_at.load()) return false;
    const auto& [count, nranks, root, in_place] = shapes[k];
    results[k] =
        prove_one(algorithm, spread_case(algorithm.collective, count, nranks, root, in_place), sweep, per_proof);
    give_back_freed_memory();  // what the proof let go, before the next one's blocks of other sizes
    if (!results[k].refused) {
      std::size_t earliest = refused_at.load();
      while (k < earliest && !refused_at.compare_exchange_weak(earliest, k)) {
      }
    }
    return true;
  });
  results.resize(std::min(results.size(), refused_at.load() + 1));
  return results;
}

std::string seconds_text(double seconds) { return printf_text("%.2f s", seconds); }

void print_bands(const Algorithm& algorithm, const std::vector<Band>& bands, std::ostream& out) {
  out << algorithm.name << " " << name(algorithm.collective) << ":\n";
  TextTable table;
  table.add_row({"  ranks", "cases", "proven", "failed", "steps", "time", "by symmetry", "in units", "in pieces"});
  for (const Band& band : bands) {
    table.add_row({"  " + band.label, std::to_string(band.cases), std::to_string(band.cases - band.failed),
                   std::to_string(band.failed), std::to_string(band.steps), seconds_text(band.seconds),
                   std::to_string(band.symmetric), std::to_string(band.in_units), std::to_string(band.in_pieces)});
  }
  table.print(out);
}

// Proves every shape of the sweep for one algorithm (sweep.jobs at once), band by band of rank counts; the
// failures are appended to `failures`, in the shapes' order. Stops at a refused shape (`refused` says why).
std::vector<Band> prove_algorithm(const Algorithm& algorithm, const Sweep& sweep, std::vector<Failure>& failures,
                                  Status& refused) {
  std::vector<Band> bands;
  std::vector<ShapeToProve> shapes;
  std::vector<std::size_t> band_of_shape;
  for (std::uint64_t n : sweep.ranks) {
    if (bands.empty() || bands.back().label != band_of(n)) bands.push_back(Band{band_of(n)});
    const std::vector<std::size_t> counts = sweep.counts.empty()
                                                ? awkward_counts(n, sweep.knobs.chunk)
                                                : std::vector<std::size_t>(sweep.counts.begin(), sweep.counts.end());
    for (std::size_t count : counts) {
      for (int root : roots_for(algorithm.collective, static_cast<int>(n), sweep.all_roots)) {
        for (bool in_place : layouts_for(algorithm.collective, sweep.layouts)) {
          shapes.push_back(ShapeToProve{count, static_cast<int>(n), root, in_place});
          band_of_shape.push_back(bands.size() - 1);
        }
      }
    }
  }
  const std::vector<ShapeProof> proofs = prove_shapes(algorithm, shapes, sweep);
  for (std::size_t k = 0; k < proofs.size(); ++k) {
    const ShapeProof& proof = proofs[k];
    refused = proof.refused;
    if (!refused) {  // what was proven before it is shown, as far as its band
      bands.resize(band_of_shape[k] + 1);
      return bands;
    }
    bands[band_of_shape[k]].add(proof);
    if (proof.failure) failures.push_back(*proof.failure);
  }
  return bands;
}

}  // namespace

const CommandHelp& prove_help() {
  static constexpr CommandHelp help{
      "prove",
      "prove reference algorithms symbolically over ranges of shapes",
      kOptions,
      "",
      "LIST: 1,2,8..16; counts take K, M, G (powers of 1024). Without --counts each rank count n gets\n"
      "{0, 1, n-1, n, n+1, 7, 3n+2, chunk+-1, n*chunk+-1, and 64n+13 up to 64 ranks} (docs/algorithms.md).",
      "collcheck prove --algorithm ring --collective allreduce --ranks 1..1024\n"
      "collcheck prove --schedule allreduce_ring.xml"};
  return help;
}

int run_prove(std::span<const std::string_view> raw, std::ostream& out, std::ostream& err) {
  Result<Arguments> args = Arguments::parse(raw, kOptions);
  if (!args) {
    err << "collcheck prove: " << args.error().text() << '\n';
    return kUsageError;
  }
  if (args->has("schedule")) return run_prove_schedule(*args, out, err);
  Result<Sweep> sweep = parse_sweep(*args);
  if (!sweep) {
    err << "collcheck prove: " << sweep.error().text() << '\n';
    return kUsageError;
  }
  std::vector<Failure> failures;
  std::size_t total = 0;
  for (const Algorithm* algorithm : sweep->algorithms) {
    Status refused = Ok{};
    const std::vector<Band> bands = prove_algorithm(*algorithm, *sweep, failures, refused);
    print_bands(*algorithm, bands, out);  // what was proven before a refusal is shown too
    if (!refused) {
      err << "collcheck prove: " << refused.error().text() << '\n';
      return kUsageError;
    }
    for (const Band& band : bands) total += band.cases;
  }
  out << total - failures.size() << " of " << total << " schedules proven";
  out << (failures.empty() ? "\n" : ", " + std::to_string(failures.size()) + " failed:\n");
  for (std::size_t i = 0; i < failures.size() && i < 10; ++i) {
    out << "  " << failures[i].message << "\n    replay: " << failures[i].what << "\n";
  }
  return failures.empty() ? 0 : 1;
}

}  // namespace collcheck::cli
