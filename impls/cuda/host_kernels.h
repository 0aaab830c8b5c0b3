// The kernels of reduce_kernels.h run on the host, at once, on the calling thread: what the
// `cuda-host` executor launches, and what tests set beside impls/link/reduce_op.h's contract.
#pragma once

#include <cstddef>

#include "reference/collective.h"
#include "reference/dtype.h"

namespace collcheck::cuda {

// out[i] = a[i] ⊕ b[i] for `count` packed elements; `out` may be `a` or `b`. Avg reduces as sum.
void reduce_on_host(DType, RedOp, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count);
// Avg's last step on a fully reduced buffer of `count` elements.
void finish_average_on_host(DType, std::byte* data, std::size_t count, int nranks);

}  // namespace collcheck::cuda
