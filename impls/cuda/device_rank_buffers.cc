// A rank's buffers mirrored on a CUDA device (see device_rank_buffers.h).
#include "impls/cuda/device_rank_buffers.h"

#include <chrono>
#include <stdexcept>
#include <thread>

#include <cuda_runtime.h>

namespace collcheck::cuda {
namespace {

constexpr double kUploadSeconds = 60;  // a copy of a rank's buffers to its GPU, at most

void check(const char* call, cudaError_t error) {
  if (error != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(error));
}

}  // namespace

int use_rank_device(int rank) {
  int devices = 0;
  check("cudaGetDeviceCount", cudaGetDeviceCount(&devices));
  if (devices == 0) throw std::runtime_error("no CUDA device");
  const int device = rank % devices;
  check("cudaSetDevice", cudaSetDevice(device));
  return device;
}

RankStream::RankStream() {
  cudaStream_t stream = nullptr;
  check("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_ = stream;
}

RankStream::~RankStream() { cudaStreamDestroy(stream_); }

std::string wait_for_stream(DeviceStream stream, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(seconds));
  for (;;) {
    const cudaError_t query = cudaStreamQuery(stream);
    if (query == cudaSuccess) return {};
    if (query != cudaErrorNotReady) return std::string("cudaStreamQuery: ") + cudaGetErrorString(query);
    if (std::chrono::steady_clock::now() >= end)
      return "the stream's work had not finished after " + std::to_string(seconds) + " s";
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

DeviceRankBuffers::DeviceRankBuffers(RankBuffers& host, DeviceAllocator allocator) : allocator_(std::move(allocator)) {
  if (!allocator_.allocate) {
    allocator_.allocate = [](void** at, std::size_t bytes) {
      const cudaError_t error = cudaMalloc(at, bytes);
      return error == cudaSuccess ? std::string() : std::string("cudaMalloc: ") + cudaGetErrorString(error);
    };
    allocator_.release = [](void* at) { cudaFree(at); };
  }
  for (auto [mirror, buffer] : {std::pair{&input_, &host.input}, std::pair{&output_, &host.output}}) {
    mirror->host = buffer->allocation();
    if (mirror->host.empty()) continue;
    void* device = nullptr;
    if (std::string why = allocator_.allocate(&device, mirror->host.size()); !why.empty()) {
      release();  // what the input's mirror took, when the output's fails
      throw std::runtime_error(why);
    }
    mirror->device = static_cast<std::byte*>(device);
  }
  in_ = map(host.in);
  out_ = map(host.out);
}

DeviceRankBuffers::~DeviceRankBuffers() { release(); }

void DeviceRankBuffers::release() {
  for (Mirror* mirror : {&input_, &output_}) {
    if (mirror->device != nullptr) allocator_.release(mirror->device);
    mirror->device = nullptr;
  }
}

void* DeviceRankBuffers::map(const std::byte* host) const {
  for (const Mirror* mirror : {&input_, &output_}) {
    if (host != nullptr && host >= mirror->host.data() && host < mirror->host.data() + mirror->host.size())
      return mirror->device + (host - mirror->host.data());
  }
  return nullptr;
}

std::vector<std::pair<void*, std::size_t>> DeviceRankBuffers::allocations() const {
  std::vector<std::pair<void*, std::size_t>> out;
  for (const Mirror* mirror : {&input_, &output_}) {
    if (mirror->device != nullptr) out.emplace_back(mirror->device, mirror->host.size());
  }
  return out;
}

RankTransfers DeviceRankBuffers::transfers() {
  RankTransfers moves;
  // From pageable memory cudaMemcpy returns once the bytes are staged, before their DMA to the
  // device has landed (CUDA's "API synchronization behavior"), and the library's calls run on
  // non-blocking streams, which do not wait for the legacy stream the DMA is queued on: without
  // the wait below a call may read an input whose tail has not arrived (on an H200 NCCL's one-rank
  // averages read zeros so, and were taken at first for NCCL's).
  moves.upload = [this] {
    for (const Mirror* mirror : {&input_, &output_}) {
      if (mirror->device != nullptr) {
        check("cudaMemcpy to the GPU",
              cudaMemcpy(mirror->device, mirror->host.data(), mirror->host.size(), cudaMemcpyHostToDevice));
      }
    }
    const std::string landed = wait_for_stream(cudaStreamLegacy, kUploadSeconds);
    if (!landed.empty()) throw std::runtime_error("the inputs' copy to the GPU: " + landed);
  };
  moves.download = [this] {
    for (const Mirror* mirror : {&input_, &output_}) {
      if (mirror->device != nullptr) {
        check("cudaMemcpy from the GPU",
              cudaMemcpy(mirror->host.data(), mirror->device, mirror->host.size(), cudaMemcpyDeviceToHost));
      }
    }
  };
  return moves;
}

}  // namespace collcheck::cuda
