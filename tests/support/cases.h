// Test helper: a Case from the five fields tests always give; the rest keep Case's defaults
// (out of place, root 0, exact values, seed 0) for the caller to change.
#pragma once

#include <cstddef>

#include "reference/case.h"

namespace collcheck::testing {

inline Case make_case(Collective collective, DType dtype, RedOp op, std::size_t count, int nranks) {
  Case c;
  c.collective = collective;
  c.dtype = dtype;
  c.op = op;
  c.count = count;
  c.nranks = nranks;
  return c;
}

}  // namespace collcheck::testing
