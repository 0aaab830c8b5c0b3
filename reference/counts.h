// The per-rank counts of the v-collectives (allgatherv, reducescatterv, alltoallv): how many a
// case takes, each rank's buffer sizes, where each rank's blocks lie, and their text form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "reference/case.h"

namespace collcheck {

// How many counts a case of `collective` on `nranks` ranks takes: one per rank (allgatherv,
// reducescatterv), one per ordered pair of ranks (alltoallv, row-major: sender, then
// receiver), none for the uniform collectives.
std::size_t counts_needed(Collective, int nranks);

// Their sum: a v-collective's `n` (Case::count).
std::size_t counts_total(std::span<const std::size_t> counts);

// Sets c.counts and c.count (their sum) together.
void set_counts(Case& c, std::vector<std::size_t> counts);
// The counts under which a v-collective does what its uniform form does with `count`: every
// entry `count` (as many as counts_needed()).
std::vector<std::size_t> uniform_counts(Collective, int nranks, std::size_t count);
// A v-collective's case as its uniform form (uniform_form) on `count`: every field but the counts,
// which are not copied (an all-to-all-v's are n^2 long); out of place.
Case uniform_case(const Case&, std::size_t count);
// Counts for a sweep over one `count` (collcheck prove and simulate): the entries cycle through
// count, 0, count+1 and count/2, so that one shape has zeros, uneven blocks and the count itself.
std::vector<std::size_t> spread_counts(Collective, int nranks, std::size_t count);
// The case a sweep proves or simulates for one `count`: `count` elements on `nranks` ranks with
// that root and layout (the rest Case's defaults), a v-collective's counts spread around it.
Case spread_case(Collective, std::size_t count, int nranks, int root = 0, bool in_place = false);

// Blocks are packed in rank order, without gaps (MPI's displacements are the prefix sums).
//   allgatherv:     input counts[r],  output total;   rank r's block starts at block_start(r)
//   reducescatterv: input total,      output counts[r], reduced from block_start(r) of every input
//   alltoallv:      input sum over d of pair_count(r, d), output sum over s of pair_count(s, r)
std::size_t block_start(const Case&, int rank);
// An allgatherv's or reducescatterv's every block_start at once, and one past the last: n+1 offsets.
std::vector<std::size_t> block_starts(const Case&);
std::size_t pair_count(const Case&, int source, int destination);
std::size_t send_start(const Case&, int source, int destination);     // in source's input
std::size_t receive_start(const Case&, int destination, int source);  // in destination's output
// Every rank's input and output lengths at once. For all-to-all-v one pass along the counts' rows:
// rank by rank each output is a column sum, striding through n² counts with a cache miss on each
// (11 s at 16,384 ranks).
struct RankElements {
  std::vector<std::size_t> inputs, outputs;  // per rank
};
RankElements rank_elements(const Case&);

// An all-to-all-v's counts in 32 bits, row by row as the case holds them (at s*n + d the count of
// pair (s, d)) and column by column (at d*n + s), so that a rank's column is read as one stretch, not
// a count n apart each (a cache miss each at thousands of ranks): both together half the case's
// 64-bit counts. Both empty where a count does not fit in 32 bits, or the case is no all-to-all-v.
struct NarrowCounts {
  std::vector<std::uint32_t> rows, columns;
};
NarrowCounts narrow_counts(const Case&);

// `3,0,5`: counts as the case text writes them (`counts=3,0,5`).
std::string format_counts(std::span<const std::size_t> counts);
// Parses that form; the error names the field `counts`.
Result<std::vector<std::size_t>> parse_counts(std::string_view text);

// validate()'s checks of the counts, `n` and in-place for v-collectives, and that the uniform
// collectives carry no counts.
Status validate_counts(const Case&);

}  // namespace collcheck
