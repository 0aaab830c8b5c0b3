// CudaDevice: the cuda engine's memory in cudaMalloc'd device memory and its kernels launched on a
// stream of the participant's own, each call waited for with a bound (device_kernels.h); peer
// access between devices enabled where the hardware allows it.
#include "impls/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

#include "impls/cuda/device_kernels.h"
#include "impls/cuda/ib_rings.h"

namespace collcheck::cuda {
namespace {

// A kernel or copy of the engine is bounded; one that has not finished by then is a stuck device.
constexpr double kStreamSeconds = 60;

// The driver's names (cuda.h) for what dmabuf_of asks, without including the driver's header:
// CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, CUDA_ERROR_NOT_SUPPORTED, and the driver version that
// brought cuMemGetHandleForAddressRange (11.7).
constexpr int kDmaBufFd = 1;
constexpr int kNotSupported = 801;
constexpr unsigned kDmaBufDriverVersion = 11070;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

// Whether device `from` can read device `to`'s memory directly (cudaDeviceCanAccessPeer).
bool reaches(int from, int to) {
  int can = 0;
  return cudaDeviceCanAccessPeer(&can, from, to) == cudaSuccess && can != 0;
}

// Peer access from device `ordinal` (the current one) to every device it can reach directly
// (NVLink or PCIe, as cudaDeviceCanAccessPeer says), enabled once per process and pair, so that
// the copies between participants on different devices (cudaMemcpyDefault) go peer to peer
// instead of staged through host memory.
void enable_peer_access(int ordinal) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> enabled;
  const std::lock_guard<std::mutex> lock(mutex);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return;
  for (int peer = 0; peer < count; ++peer) {
    if (peer == ordinal || !enabled.insert({ordinal, peer}).second) continue;
    if (!reaches(ordinal, peer)) continue;
    const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // not an error: another part of this process enabled it first
      continue;
    }
    check(status, "cudaDeviceEnablePeerAccess");
  }
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {
    check(cudaSetDevice(ordinal_), "cudaSetDevice");
    enable_peer_access(ordinal_);
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaMalloc(&result_, sizeof(std::uint64_t)), "cudaMalloc");
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, ordinal_) == cudaSuccess) model_ = properties.name;
  }
  ~CudaDevice() override {
    cudaFree(result_);
    cudaStreamDestroy(stream_);
  }
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  std::string name() const override { return "cuda:" + std::to_string(ordinal_) + " (" + model_ + ")"; }

  std::byte* allocate(std::size_t bytes) override {
    select();
    void* memory = nullptr;
    check(cudaMalloc(&memory, bytes == 0 ? 1 : bytes), "cudaMalloc");
    check(cudaMemsetAsync(memory, 0, bytes == 0 ? 1 : bytes, stream_), "cudaMemsetAsync");
    wait("cudaMemsetAsync");
    return static_cast<std::byte*>(memory);
  }
  void release(std::byte* memory) override { cudaFree(memory); }
  void write(std::byte* to, const std::byte* from_host, std::size_t bytes) override { copy_any(to, from_host, bytes); }
  void read(std::byte* to_host, const std::byte* from, std::size_t bytes) override { copy_any(to_host, from, bytes); }
  void fill(std::byte* to, std::byte value, std::size_t bytes) override {
    if (bytes == 0) return;
    select();
    check(cudaMemsetAsync(to, static_cast<int>(value), bytes, stream_), "cudaMemsetAsync");
    wait("cudaMemsetAsync");
  }
  void copy(std::byte* to, const std::byte* from, std::size_t bytes) override {
    if (to != from) copy_any(to, from, bytes);
  }
  std::uint64_t checksum(const std::byte* data, std::size_t bytes) override {
    select();
    return checksum_on_stream(data, bytes);
  }
  // The copy, the checksum kernel and its result's way back in order on the stream, one wait.
  std::uint64_t copy_with_checksum(std::byte* to, const std::byte* from, std::size_t bytes) override {
    select();
    if (to != from) enqueue_copy(to, from, bytes);
    return checksum_on_stream(to, bytes);
  }
  void reduce(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
              std::size_t count) override {
    select();
    check(static_cast<cudaError_t>(launch_reduce(dtype, op, a, b, out, count, stream_)), "launch_reduce");
    wait("reduce");
  }
  void finish_average(DType dtype, std::byte* data, std::size_t count, int nranks) override {
    select();
    check(static_cast<cudaError_t>(launch_finish_average(dtype, data, count, nranks, stream_)),
          "launch_finish_average");
    wait("finish_average");
  }

  // CUDA IPC: the handle names the whole allocation `memory` begins; opened in another process
  // (on the same GPU or one it reaches as a peer), it maps there at an address of its own.
  bool shares_by_handle() const override { return true; }
  std::vector<std::byte> share(std::byte* memory) override {
    select();
    cudaIpcMemHandle_t handle{};
    check(cudaIpcGetMemHandle(&handle, memory), "cudaIpcGetMemHandle");
    const auto* bytes = reinterpret_cast<const std::byte*>(&handle);
    return {bytes, bytes + sizeof handle};
  }
  std::byte* open_shared(std::span<const std::byte> handle) override {
    if (handle.size() != sizeof(cudaIpcMemHandle_t)) {
      throw std::runtime_error("cudaIpcOpenMemHandle: a handle of " + std::to_string(handle.size()) + " bytes, not " +
                               std::to_string(sizeof(cudaIpcMemHandle_t)));
    }
    select();
    cudaIpcMemHandle_t opened{};
    std::memcpy(&opened, handle.data(), sizeof opened);
    void* memory = nullptr;
    check(cudaIpcOpenMemHandle(&memory, opened, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
    return static_cast<std::byte*>(memory);
  }
  void close_shared(std::byte* memory) override {
    select();
    cudaIpcCloseMemHandle(memory);
  }

  // cuMemGetHandleForAddressRange through the runtime's entry point (no link to the driver
  // library), for the whole range at host-page alignment; -1 and why where the driver, the device
  // or the allocation's alignment does not allow it.
  int dmabuf_of(std::byte* memory, std::size_t bytes, std::uint64_t& offset, std::string& why) override {
    select();
    using GetHandle = int (*)(void*, unsigned long long, std::size_t, int, unsigned long long);
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", &entry, kDmaBufDriverVersion,
                                         cudaEnableDefault, &found) != cudaSuccess ||
        entry == nullptr) {
      cudaGetLastError();
      why = "the CUDA driver has no cuMemGetHandleForAddressRange";
      return -1;
    }
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto address = reinterpret_cast<std::uintptr_t>(memory);
    if (address % page != 0 || bytes % page != 0) {
      why = "the slots are not aligned to the host page size";
      return -1;
    }
    int fd = -1;
    const int status = reinterpret_cast<GetHandle>(entry)(&fd, address, bytes, kDmaBufFd, 0);
    if (status != 0 || fd < 0) {
      why = "cuMemGetHandleForAddressRange: CUDA driver error " + std::to_string(status) +
            (status == kNotSupported ? " (not supported: this GPU or driver exports no dma-buf)" : "");
      return -1;
    }
    offset = 0;
    return fd;
  }

  std::byte* allocate_host(std::size_t bytes) override {
    select();
    void* memory = nullptr;
    check(cudaHostAlloc(&memory, std::max<std::size_t>(bytes, 1), cudaHostAllocMapped | cudaHostAllocPortable),
          "cudaHostAlloc");
    std::memset(memory, 0, bytes);
    return static_cast<std::byte*>(memory);
  }
  void release_host(std::byte* memory) override { cudaFreeHost(memory); }

  void flush_remote_writes() override {
    select();
    check(cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice,
                                             cudaFlushGPUDirectRDMAWritesToOwner),
          "cudaDeviceFlushGPUDirectRDMAWrites");
  }

 private:
  void select() { check(cudaSetDevice(ordinal_), "cudaSetDevice"); }
  // The checksum kernel after what the stream holds, its result read back: one wait.
  std::uint64_t checksum_on_stream(const std::byte* data, std::size_t bytes) {
    check(static_cast<cudaError_t>(launch_checksum(data, bytes, result_, stream_)), "launch_checksum");
    std::uint64_t sum = 0;
    check(cudaMemcpyAsync(&sum, result_, sizeof sum, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
    wait("checksum");
    return sum;
  }
  // A copy in any direction (unified addressing tells host from device, and one device from
  // another), put on the stream.
  void enqueue_copy(void* to, const void* from, std::size_t bytes) {
    if (bytes != 0) check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream_), "cudaMemcpyAsync");
  }
  // The same, waited for.
  void copy_any(void* to, const void* from, std::size_t bytes) {
    if (bytes == 0) return;
    select();
    enqueue_copy(to, from, bytes);
    wait("cudaMemcpyAsync");
  }
  // Polls the stream instead of blocking in cudaStreamSynchronize, so a stuck device ends the run.
  void wait(const char* what) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(kStreamSeconds);
    for (;;) {
      const cudaError_t status = cudaStreamQuery(stream_);
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady) check(status, what);
      if (std::chrono::steady_clock::now() > give_up) {
        throw std::runtime_error(std::string(what) + " did not finish within " + std::to_string(kStreamSeconds) + " s");
      }
      std::this_thread::yield();
    }
  }

  int ordinal_;
  std::string model_ = "unknown";
  cudaStream_t stream_ = nullptr;
  std::uint64_t* result_ = nullptr;
};

int device_count(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    *why = std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(status);
    return 0;
  }
  if (count == 0) *why = "no CUDA device: cudaGetDeviceCount found none";
  return count;
}

}  // namespace

std::unique_ptr<Device> make_cuda_device(int participant) {
  std::string why;
  const int count = device_count(&why);
  if (count == 0) throw std::runtime_error(why);
  return std::make_unique<CudaDevice>(participant % count);
}

std::string cuda_cannot_run_here() {
  std::string why;
  device_count(&why);
  return why;
}

std::string peer_reads_cannot_run_here() {
  std::string why;
  const int count = device_count(&why);
  for (int from = 0; from < count && why.empty(); ++from) {
    for (int to = 0; to < count && why.empty(); ++to) {
      if (from != to && !reaches(from, to)) {
        why = "p2p=on has kernels read other GPUs' memory, and GPU " + std::to_string(from) + " cannot reach GPU " +
              std::to_string(to) + " (cudaDeviceCanAccessPeer; CUDA_VISIBLE_DEVICES can pick GPUs that can)";
      }
    }
  }
  return why;
}

std::string cuda_devices_text() {
  std::string why;
  const int count = device_count(&why);
  if (count == 0) return why;
  std::string text = std::to_string(count) + (count == 1 ? " device:" : " devices:");
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, ordinal) != cudaSuccess) continue;
    text += " " + std::to_string(ordinal) + " " + properties.name + " (sm_" + std::to_string(properties.major) +
            std::to_string(properties.minor) + ", " + std::to_string(properties.totalGlobalMem >> 30) + " GiB)";
    text += ordinal + 1 < count ? "," : "";
  }
  std::string peers;
  for (int from = 0; from < count; ++from) {
    for (int to = from + 1; to < count; ++to) {
      if (reaches(from, to)) {
        peers += (peers.empty() ? "" : ", ") + std::to_string(from) + "<->" + std::to_string(to);
      }
    }
  }
  if (count > 1) text += "; peer access: " + (peers.empty() ? std::string("none") : peers);
  return text;
}

std::string rdma_slots_on_gpus() {
  std::string why;
  const int count = device_count(&why);
  if (count == 0) return why;
  std::string text;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    std::string how;
    try {
      const std::unique_ptr<Device> device = make_cuda_device(ordinal);
      how = rdma_slots_text(*device, ib::VerbsChoice{});
    } catch (const std::exception& failure) {
      how = failure.what();
    }
    text += (ordinal > 0 ? "; GPU " : "GPU ") + std::to_string(ordinal) + ": " + how;
  }
  return text;
}

}  // namespace collcheck::cuda
