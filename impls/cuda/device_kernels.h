// The kernels of reduce_kernels.h launched on a CUDA device (device_kernels.cu, built by nvcc where
// CUDA is found): each call enqueues one kernel on `stream` and returns CUDA's launch status.
#pragma once

#include <cstddef>
#include <cstdint>

#include "reference/collective.h"
#include "reference/dtype.h"

struct CUstream_st;  // cudaStream_t, without the CUDA headers in every includer

namespace collcheck::cuda {

using DeviceStream = CUstream_st*;

// out[i] = a[i] ⊕ b[i] for `count` packed elements in device memory; returns a cudaError_t.
int launch_reduce(DType, RedOp, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count,
                  DeviceStream stream);
// Avg's last step on `count` elements in device memory; returns a cudaError_t.
int launch_finish_average(DType, std::byte* data, std::size_t count, int nranks, DeviceStream stream);
// link/'s checksum of `bytes` bytes of device memory into *result (device memory): one block of up
// to 1024 threads, each stream of checksum_body.h cut into up to 256 segments (16 words each at
// least), put together and folded; returns a cudaError_t.
int launch_checksum(const std::byte* data, std::size_t bytes, std::uint64_t* result, DeviceStream stream);

}  // namespace collcheck::cuda
