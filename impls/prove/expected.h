// What a collective requires of every output element, as one run of contributions (impls/prove
// only): the definition that the prover checks every output against.
#pragma once

#include <cstddef>
#include <vector>

#include "impls/prove/provenance.h"
#include "reference/case.h"

namespace collcheck::provenance {

// A v-collective's output on one rank: where the block from each source starts in it (n+1
// offsets), and where that block starts in the source's input. Made once per rank, so that
// each element's source is a binary search, not a walk over the ranks.
struct VectorBlocks {
  std::vector<std::size_t> starts;
  std::vector<std::size_t> sent_from;
  std::size_t own_start = 0;  // reducescatterv: where the rank's block starts in every input
  int rank = -1;              // whose blocks these are (-1: nobody's yet)
};

// `previous`: rank-1's, from which an all-to-all-v's sent_from and a reduce-scatter-v's own_start
// follow in one pass over the ranks (each alone sums counts up to the rank: n^3 for all of an
// all-to-all-v's ranks); anything else is worked out from the counts.
VectorBlocks vector_blocks(const Case&, int rank, const VectorBlocks* previous = nullptr);

// What output element i of `rank` must hold (`blocks`: vector_blocks(rank)).
Run wanted(const Case&, int rank, std::size_t i, const VectorBlocks& blocks);
// How many elements from output element i on (of `size`) require alike: for k below it,
// element i + k must hold what element i must, at the input index moved by k. At least 1.
std::size_t wanted_stretch(const Case&, std::size_t i, std::size_t size, const VectorBlocks& blocks);

}  // namespace collcheck::provenance
