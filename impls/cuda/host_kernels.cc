// The kernel bodies of reduce_kernels.h instantiated for the host, each run as a grid of one thread.
#include "impls/cuda/host_kernels.h"

#include "impls/cuda/reduce_kernels.h"

namespace collcheck::cuda {

void reduce_on_host(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  visit_dtype_and_op(dtype, op,
                     [&]<DType kDType, RedOp kOp>() { reduce_span<kDType, kOp>(a, b, out, count, Lanes{}); });
}

void finish_average_on_host(DType dtype, std::byte* data, std::size_t count, int nranks) {
  visit_dtype<RedOp::Sum>(dtype,
                          [&]<DType kDType, RedOp>() { finish_average_span<kDType>(data, count, nranks, Lanes{}); });
}

}  // namespace collcheck::cuda
