// What the conformance suite asks of every run (each call's outputs against the oracle, guard
// zones, an untouched input out of place) and the fixed cases its behaviours run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "impls/backend/backend.h"
#include "reference/case.h"

namespace collcheck::conformance {

// "" when the run ended `ok` with `calls` calls, and on every rank call k matches the oracle of
// the case with seed + k * seed_step, its guard zones hold, and out of place its input is as the
// case generates it (checked on the last call, and on earlier ones where the backend returns
// it). Otherwise the first failure, naming the case, call and rank.
std::string check_run(const Case&, const RepeatedRun&, std::size_t calls, std::uint64_t seed_step = 1);

// The rank counts of `wanted` the capabilities allow; the nearest allowed one when none is.
std::vector<int> rank_counts(const Capabilities&, std::vector<int> wanted);

// Out of place on `nranks`: every dtype with the ops in turn, counts 0, 1, 7, 37 and 101, every
// root in turn, exact values; every op once; real and special values on the float dtypes.
std::vector<Case> oracle_cases(const Capabilities&, Collective, int nranks);
// Every dtype with every op of a reducing collective, exact values (in-process backends run it:
// a wrong pairing of dtype and op, say an 8-bit product, shows only there).
std::vector<Case> every_dtype_and_op_cases(const Capabilities&, Collective, int nranks);

// In place on `nranks`: a few dtypes and ops, counts 1, 7, 37 and 101, misaligned, roots in turn.
std::vector<Case> in_place_cases(const Capabilities&, Collective, int nranks);

// Buffers moved 1..3 elements off their alignment, dtypes of 1, 2, 4 and 8 bytes, counts that
// fill no whole vector, in and out of place.
std::vector<Case> misaligned_cases(const Capabilities&, Collective, int nranks);

// A small case the backend runs (out of place, exact values), for the behaviours that need one
// call of anything: the first collective and dtype it lists, on `nranks`.
Case plain_case(const Capabilities&, int nranks, std::size_t count);

// `c` made whole again after its collective or rank count changed: a v-collective gets counts
// spread around its count (its first entry, once it has counts; counts.h's spread_counts) and
// runs out of place; another collective loses its counts.
Case fitted(Case c);

// Cases the capabilities exclude (a collective, dtype or op not listed, too many or too few
// ranks): each must be refused, not run. Empty when the backend runs everything.
std::vector<Case> refused_cases(const Capabilities&);

}  // namespace collcheck::conformance
