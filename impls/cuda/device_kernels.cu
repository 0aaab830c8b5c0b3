// The kernels of reduce_kernels.h as __global__ functions, one instance per dtype x op, and the
// launchers that pick the instance at run time. Built for sm_80, sm_90 and sm_100.
#include <cuda_runtime.h>

#include "impls/cuda/device_kernels.h"
#include "impls/cuda/reduce_kernels.h"
#include "impls/link/checksum_body.h"

namespace collcheck::cuda {
namespace {

constexpr unsigned kThreadsPerBlock = 256;
constexpr unsigned kMaxBlocks = 1024;

__device__ Lanes grid_lanes() {
  return Lanes{static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x,
               static_cast<std::size_t>(gridDim.x) * blockDim.x};
}

template <DType kDType, RedOp kOp>
__global__ void reduce_kernel(const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  reduce_span<kDType, kOp>(a, b, out, count, grid_lanes());
}

template <DType kDType>
__global__ void finish_average_kernel(std::byte* data, std::size_t count, int nranks) {
  finish_average_span<kDType>(data, count, nranks, grid_lanes());
}

// The checksum in segments (checksum_body.h): thread t takes segment t / 4 of stream t % 4 (each
// stream a quarter of the message); four threads put the streams together, one folds.
constexpr int kMaxSegments = 256;
constexpr std::uint64_t kWordsPerSegmentAtLeast = 16;

__global__ void checksum_kernel(const std::byte* data, std::size_t bytes, int segments, std::uint64_t* result) {
  __shared__ std::uint32_t parts[4][kMaxSegments];
  __shared__ std::uint64_t streams[4];
  const int stream = static_cast<int>(threadIdx.x % 4);
  const int segment = static_cast<int>(threadIdx.x / 4);
  parts[stream][segment] = checksum_segment(data, bytes, stream, segment, segments);
  __syncthreads();
  if (threadIdx.x < 4) streams[stream] = combine_segments(parts[stream], segments, bytes, stream);
  __syncthreads();
  if (threadIdx.x == 0) *result = fold_checksum(bytes, streams);
}

// Enough blocks for one 16-byte vector per thread, at most kMaxBlocks (the body strides over the rest).
unsigned blocks_for(std::size_t bytes) {
  const std::size_t vectors = (bytes + 15) / 16;
  const std::size_t blocks = (vectors + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(blocks == 0 ? 1 : (blocks < kMaxBlocks ? blocks : kMaxBlocks));
}

}  // namespace

int launch_reduce(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count,
                  DeviceStream stream) {
  const unsigned blocks = blocks_for(count * size_of(dtype));
  visit_dtype_and_op(dtype, op, [&]<DType kDType, RedOp kOp>() {
    reduce_kernel<kDType, kOp><<<blocks, kThreadsPerBlock, 0, stream>>>(a, b, out, count);
  });
  return static_cast<int>(cudaGetLastError());
}

int launch_finish_average(DType dtype, std::byte* data, std::size_t count, int nranks, DeviceStream stream) {
  const unsigned blocks = blocks_for(count * size_of(dtype));
  visit_dtype<RedOp::Sum>(dtype, [&]<DType kDType, RedOp>() {
    finish_average_kernel<kDType><<<blocks, kThreadsPerBlock, 0, stream>>>(data, count, nranks);
  });
  return static_cast<int>(cudaGetLastError());
}

int launch_checksum(const std::byte* data, std::size_t bytes, std::uint64_t* result, DeviceStream stream) {
  const std::uint64_t segments = stream_words(bytes, 0) / kWordsPerSegmentAtLeast;
  const int used = segments < 1 ? 1 : (segments > kMaxSegments ? kMaxSegments : static_cast<int>(segments));
  checksum_kernel<<<1, 4 * static_cast<unsigned>(used), 0, stream>>>(data, bytes, used, result);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace collcheck::cuda
