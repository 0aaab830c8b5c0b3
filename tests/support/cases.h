// Test helper: a Case from the five fields tests always give; the rest keep Case's defaults
// (out of place, root 0, exact values, seed 0) for the caller to change. A v-collective gets
// uniform counts (every entry `count`), so that it does what its uniform form does.
#pragma once

#include <cstddef>

#include "reference/case.h"
#include "reference/counts.h"

namespace collcheck::testing {

inline Case make_case(Collective collective, DType dtype, RedOp op, std::size_t count, int nranks) {
  Case c;
  c.collective = collective;
  c.dtype = dtype;
  c.op = op;
  c.count = count;
  c.nranks = nranks;
  if (per_rank_counts(collective)) set_counts(c, uniform_counts(collective, nranks, count));
  return c;
}

}  // namespace collcheck::testing
