// RapidCheck generators for `Case`, weighted toward where collective bugs live, within what
// a backend supports and what the user asked for; cases shrink toward the simplest failing one.
#pragma once

#include <cstddef>
#include <vector>

#include <rapidcheck.h>

#include "impls/backend/backend.h"

namespace collcheck {

// What the user allows (empty lists: everything the backend supports).
struct CaseLimits {
  std::vector<Collective> collectives;
  std::vector<DType> dtypes;
  std::vector<RedOp> ops;
  std::vector<ValueKind> values;
  int min_ranks = 1, max_ranks = 64;
  std::size_t min_count = 0, max_count = 1 << 20;
};

// Every rank count in the range the backend admits, weighted toward 1, 2, 3, primes, powers of two
// and 2^k±1, products of small primes (6, 10, 12, 24 …) and the range's ends; counts 0, 1, below nranks, around
// multiples of nranks (not divisible), around multiples of the backend's chunk and of its byte edges (elements one off
// either side), and large; every dtype, op and root the
// backend takes; in place or not; buffer offsets 1..15; exact, real and special values. Shrinks toward fewer ranks
// (through every smaller count), fewer elements, root 0, out of place, offset 0, exact values and simpler dtypes.
// Returns cases the backend supports; `possible` is false when none exist.
rc::Gen<Case> case_generator(const Capabilities&, const CaseLimits&);
bool any_case_possible(const Capabilities&, const CaseLimits&);

}  // namespace collcheck
