// nccl-tests' bandwidth figures for a case: the bytes algbw divides by, and the factor that
// turns algbw into busbw (comparable with the hardware's link bandwidth for any rank count).
#pragma once

#include <cstddef>

#include "reference/case.h"

namespace collcheck {

// nccl-tests' "size": the bytes of the larger of one rank's buffers (all-gather: the whole
// output; reduce-scatter and all-to-all: the whole input; the others: count elements).
std::size_t algorithm_bytes(const Case&);

// busbw = algbw * factor: all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all
// (n-1)/n; broadcast and reduce 1.
double bus_factor(Collective, int nranks);

}  // namespace collcheck
