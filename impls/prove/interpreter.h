// The symbolic interpreter's entry for the proofs that choose how to run it (proof_paths.cc);
// private to impls/prove/.
#pragma once

#include <optional>
#include <span>

#include "impls/prove/proof.h"
#include "impls/prove/symmetry.h"
#include "impls/schedule/schedule.h"

namespace collcheck {

// The proof of a valid schedule: every participant run, or rank 0 alone with a symmetry (the
// schedule's other ranks being rank 0's turned); nothing where a schedule made on demand turned out
// to need storing (a participant with several streams), or where by XOR a message's two ends order
// its blocks differently (then every rank must run). With a `line`, the schedule is one in pieces
// (pieces.h), and every message must be received at the place on the line it was sent from.
std::optional<Proof> prove_valid(const Schedule&, const std::optional<provenance::Symmetry>&,
                                 const provenance::PieceLine* line = nullptr);

// Whether a participant's steps run on more than one stream (every rank's are rank 0's turned
// where the symmetry holds, streams included).
bool several_streams(std::span<const Step> steps);

}  // namespace collcheck
