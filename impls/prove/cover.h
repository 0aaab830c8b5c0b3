// Proof by rotation of a schedule whose blocks differ in length (the ring all-reduce at a count
// the rank count does not divide, pairwise all-to-all-v), through its cover (Schedule::cover): cover.cc says why
// proving the cover's rank 0 proves the schedule.
#pragma once

#include <cstddef>
#include <optional>

#include "impls/prove/symmetry.h"
#include "impls/schedule/schedule.h"

namespace collcheck::provenance {

// What the proof of a schedule through its cover runs: the cover with rank 0's steps stored (the
// other ranks' are rank 0's turned), the rotation of its equal blocks, and the schedule's own
// steps and sends, counted over every rank.
struct CoveredRank0 {
  Schedule cover;
  Symmetry rotation;  // a rotation
  std::size_t steps = 0;
  std::size_t messages = 0;
};

// The cover's rank 0 where every rank r's program is the cover's rank 0 turned by r and cut to the
// schedule's own blocks (a step that keeps no element left out), every step and message of the
// cover keeps each element what it is (block and place in the block), and the schedule is an
// all-reduce, or an all-to-all-v out of place, of ranks only with no waits or scratch, at least
// half of whose blocks hold elements
// (else it is small, and proven in full faster); nothing otherwise. Ranks are compared on up to
// `threads` threads.
std::optional<CoveredRank0> cover_rank0(const Schedule&, unsigned threads = 1);

}  // namespace collcheck::provenance
