// A rank's buffers (RankBuffers, impls/backend/rank_calls.h) mirrored on a CUDA device, for rank
// backends whose library works on device memory: nccl, and users' plugins whose capabilities say
// memory cuda. Each host allocation is mirrored whole, guard zones included: inputs go up after
// they are written (and have landed before the upload returns, whatever stream the library's
// calls run on), everything comes back before results are read (outside the timed region),
// so a write past a buffer's end on the GPU is a damaged zone on the host. Built where CUDA is
// (collcheck_cuda_device); every CUDA error throws std::runtime_error naming the call.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "impls/backend/rank_calls.h"
#include "impls/cuda/device_kernels.h"

namespace collcheck::cuda {

// Makes GPU `rank` mod the visible GPUs current for the calling thread and returns its ordinal.
int use_rank_device(int rank);

// A non-blocking stream on the calling thread's current device, destroyed with this.
class RankStream {
 public:
  RankStream();
  ~RankStream();
  RankStream(const RankStream&) = delete;
  RankStream& operator=(const RankStream&) = delete;
  DeviceStream get() const { return stream_; }

 private:
  DeviceStream stream_ = nullptr;
};

// Polls the stream until its work is done or `seconds` pass: "" when done, else why not.
std::string wait_for_stream(DeviceStream stream, double seconds);

// How the mirrors' device memory is taken and given back: cudaMalloc and cudaFree where unset; a
// library may need its own (NCCL's symmetric windows want memory from ncclMemAlloc). `allocate`
// returns "" or why it could not.
struct DeviceAllocator {
  std::function<std::string(void** at, std::size_t bytes)> allocate;
  std::function<void(void* at)> release;
};

class DeviceRankBuffers {
 public:
  explicit DeviceRankBuffers(RankBuffers& host, DeviceAllocator allocator = {});
  ~DeviceRankBuffers();
  DeviceRankBuffers(const DeviceRankBuffers&) = delete;
  DeviceRankBuffers& operator=(const DeviceRankBuffers&) = delete;

  // Where host.in and host.out lie in device memory (null where they are null).
  void* in() const { return in_; }
  void* out() const { return out_; }
  // The device allocations, (base, bytes) each, to register with a library.
  std::vector<std::pair<void*, std::size_t>> allocations() const;
  // upload: host to device after inputs are written; download: device to host before results.
  RankTransfers transfers();

 private:
  struct Mirror {
    std::span<std::byte> host;
    std::byte* device = nullptr;
  };
  void* map(const std::byte* host) const;
  void release();

  DeviceAllocator allocator_;
  Mirror input_, output_;
  void* in_ = nullptr;
  void* out_ = nullptr;
};

}  // namespace collcheck::cuda
