// The table of vendor findings the suite steps around. Each entry is asserted where it belongs
// (tests/impls/gloo_findings_test.cc, mpi_backend_test.cc, the cli.check_*_finds_* tests): when a vendor
// fixes one, that test fails and its entry here goes.
#include "tests/conformance/findings.h"

#include <bit>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "reference/counts.h"

namespace collcheck::conformance {
namespace {

struct Finding {
  std::string_view family;  // `gloo:allgather` (with or without options), or `gloo` for all of them
  bool (*applies)(const Case&, const RunOptions&);
  std::string_view why;
};

bool more_than_one_call(const RunOptions& options) {
  return options.calls > 1 || (options.timed && options.warmup + options.iterations > 1);
}

bool min_max_on_specials(const Case& c) {
  return reduces(c.collective) && c.values == ValueKind::Special && (c.op == RedOp::Min || c.op == RedOp::Max);
}

// ReduceScatterHalvingDoubling with recvElems waits for ever where an empty block lies inside a
// reduced chunk (chunks of ceil(n / 2^floor(log2 ranks)) elements); a superset of where it does.
bool empty_block_inside_a_chunk(const Case& c) {
  if (c.collective != Collective::ReduceScatterV || c.count == 0) return false;
  const std::size_t chunk = (c.count + std::bit_floor(c.counts.size()) - 1) / std::bit_floor(c.counts.size());
  for (int rank = 0; rank < c.nranks; ++rank) {
    const std::size_t start = block_start(c, rank);
    if (c.counts[static_cast<std::size_t>(rank)] == 0 && start % chunk != 0 && start < c.count) return true;
  }
  return false;
}

const std::vector<Finding>& findings() {
  static const std::vector<Finding> table = {
      {"gloo:allgather", [](const Case& c, const RunOptions&) { return c.count == 0; },
       "Gloo finding 3: gloo::allgather of zero elements dies of SIGFPE "
       "(GlooFindingsDeathTest.AllgatherOfZeroElementsDividesByZero)"},
      {"gloo:reduce_scatter_halving_doubling", [](const Case& c, const RunOptions&) { return c.count == 0; },
       "Gloo finding 8: ReduceScatterHalvingDoubling binds a reference through a null pointer for count 0 "
       "(undefined behaviour that UndefinedBehaviorSanitizer stops on)"},
      {"gloo:reduce_scatter_halving_doubling",
       [](const Case& c, const RunOptions&) { return empty_block_inside_a_chunk(c); },
       "Gloo finding 14: ReduceScatterHalvingDoubling waits for ever on an empty block inside a chunk "
       "(GlooFindings.ReduceScatterHalvingDoublingWaitsForEverOnAnEmptyBlockInsideAChunk)"},
      {"gloo:allgather_ring", [](const Case& c, const RunOptions&) { return c.nranks == 1; },
       "Gloo finding 11: AllgatherRing on one rank throws 'pair missing' (GlooFindings.AllgatherRingNeedsTwoRanks)"},
      {"gloo:allgather_ring", [](const Case&, const RunOptions& options) { return more_than_one_call(options); },
       "Gloo finding 5: AllgatherRing's next call overwrites finished results "
       "(GlooFindings.AllgatherRingOutputIsOverwrittenByTheNextCall)"},
      {"gloo:reduce_scatter_halving_doubling",
       [](const Case& c, const RunOptions& options) {
         return more_than_one_call(options) && !std::has_single_bit(static_cast<unsigned>(c.nranks));
       },
       "Gloo finding 5: ReduceScatterHalvingDoubling corrupts back-to-back calls on rank counts that are not powers "
       "of two (GlooFindings.ReduceScatterHalvingDoublingCorruptsBackToBackCallsOnFiveRanks)"},
      {"gloo:allreduce_bcube",
       [](const Case& c, const RunOptions& options) { return more_than_one_call(options) && c.nranks > 2; },
       "Gloo finding 5: AllreduceBcube corrupts back-to-back calls on 4 ranks "
       "(GlooFindings.AllreduceBcubeCorruptsBackToBackCallsOnFourRanks)"},
      {"gloo", [](const Case& c, const RunOptions&) { return min_max_on_specials(c); },
       "Gloo finding 7: MIN and MAX drop NaNs depending on the order"},
      {"gloo",
       [](const Case& c, const RunOptions&) { return c.values == ValueKind::Special && c.dtype == DType::Float16; },
       "Gloo finding 6: float16 results far outside any rounding bound on special inputs"},
      {"mpi",
       [](const Case& c, const RunOptions&) {
         return reduces(c.collective) && c.op == RedOp::Sum && (c.dtype == DType::Int8 || c.dtype == DType::UInt8);
       },
       "Open MPI finding 1: op/avx saturates 8-bit integer sums (MpiFindings.ByteSumsWrapAround, "
       "cli.check_mpi_finds_saturating_byte_sums)"},
      {"mpi", [](const Case& c, const RunOptions&) { return min_max_on_specials(c); },
       "Open MPI finding 2: MPI_MIN and MPI_MAX drop NaNs depending on the order "
       "(cli.check_mpi_finds_nan_dropping_min_max)"},
  };
  return table;
}

}  // namespace

std::string_view known_finding(std::string_view spec, const Case& c, const RunOptions& options) {
  for (const Finding& finding : findings()) {
    if (names_family(spec, finding.family) && finding.applies(c, options)) return finding.why;
  }
  return {};
}

}  // namespace collcheck::conformance
