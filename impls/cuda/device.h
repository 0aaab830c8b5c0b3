// Where the cuda engine's memory lives and how its kernels run, behind one interface: the host
// (`cuda-host`: host memory, the kernel bodies on the calling thread) or a CUDA device (`cuda`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "impls/link/guarded_buffer.h"
#include "reference/collective.h"
#include "reference/dtype.h"

namespace collcheck::cuda {

// One participant's view of its device: memory it allocates there, and the kernels, each finished
// when its call returns (a CUDA device waits for its stream). Pointers are the device's; `write`
// and `read` cross to and from host memory. A CUDA error throws std::runtime_error naming the call.
class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;  // "host", "cuda:0 (NVIDIA H200)"

  virtual std::byte* allocate(std::size_t bytes) = 0;  // zeroed, 256-byte aligned; bytes may be 0
  virtual void release(std::byte* memory) = 0;
  virtual void write(std::byte* to, const std::byte* from_host, std::size_t bytes) = 0;
  virtual void read(std::byte* to_host, const std::byte* from, std::size_t bytes) = 0;
  virtual void fill(std::byte* to, std::byte value, std::size_t bytes) = 0;

  // to = from; the two may be the same range, not otherwise overlap.
  virtual void copy(std::byte* to, const std::byte* from, std::size_t bytes) = 0;
  // link/'s checksum of the bytes (impls/link/hook.h), and the copy with it.
  virtual std::uint64_t checksum(const std::byte* data, std::size_t bytes) = 0;
  virtual std::uint64_t copy_with_checksum(std::byte* to, const std::byte* from, std::size_t bytes) = 0;
  // out = a ⊕ b for `count` elements (avg as sum), and avg's last step.
  virtual void reduce(DType, RedOp, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) = 0;
  virtual void finish_average(DType, std::byte* data, std::size_t count, int nranks) = 0;

  // Memory that a device in another process reaches (`mode=processes`): whether this device
  // names its memory by handles (a CUDA device: IPC handles); the handle of memory it allocated;
  // memory another process's device allocated, opened here by its handle, and closed again. A
  // device without handles (the host) shares memory through a segment instead (process_rings.h).
  virtual bool shares_by_handle() const { return false; }
  virtual std::vector<std::byte> share(std::byte* /*memory*/) { return {}; }
  virtual std::byte* open_shared(std::span<const std::byte> /*handle*/) {
    throw std::runtime_error(name() + " opens no memory of other processes");
  }
  virtual void close_shared(std::byte* /*memory*/) {}

  // RDMA into and out of this device's memory (ib_rings.h). Whether its memory is host memory, which
  // a NIC reaches as it is (the host). A dma-buf file descriptor for the `bytes` it allocated at
  // `memory`, with the offset of `memory` in the buffer, or -1 with `why` (the caller closes it).
  // Host memory this device's copies and kernels reach (pinned and mapped), for staging where no
  // dma-buf can be had, and its release. Makes writes a NIC made into its memory visible to its
  // next copy or kernel (cudaDeviceFlushGPUDirectRDMAWrites).
  virtual bool memory_is_host() const { return false; }
  virtual int dmabuf_of(std::byte* /*memory*/, std::size_t /*bytes*/, std::uint64_t& /*offset*/, std::string& why) {
    why = name() + " exports no dma-buf";
    return -1;
  }
  virtual std::byte* allocate_host(std::size_t bytes) { return allocate(bytes); }
  virtual void release_host(std::byte* memory) { release(memory); }
  virtual void flush_remote_writes() {}
};

// Makes participant p's device; where devices cannot be made, why.
using DeviceMaker = std::unique_ptr<Device> (*)(int participant);

std::unique_ptr<Device> make_host_device(int participant);

// Bytes in a device's memory, released with this.
class DeviceBytes {
 public:
  DeviceBytes() = default;
  DeviceBytes(Device& device, std::size_t bytes) : device_(&device), data_(device.allocate(bytes)), size_(bytes) {}
  DeviceBytes(DeviceBytes&& other) noexcept { *this = std::move(other); }
  DeviceBytes& operator=(DeviceBytes&& other) noexcept {
    std::swap(device_, other.device_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  ~DeviceBytes() {
    if (device_ != nullptr) device_->release(data_);
  }

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  Device* device_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

class StagingPool;

// Device memory from a StagingPool, `size` bytes of it used, going back to the pool when dropped.
class StagedBytes {
 public:
  StagedBytes() = default;
  StagedBytes(StagedBytes&&) noexcept = default;
  StagedBytes& operator=(StagedBytes&& other) noexcept;
  StagedBytes(const StagedBytes&) = delete;
  StagedBytes& operator=(const StagedBytes&) = delete;
  ~StagedBytes();

  std::byte* data() const { return memory_.data(); }
  std::size_t size() const { return size_; }
  StagingPool* pool() const { return pool_; }  // where it came from (null: nowhere)

 private:
  friend class StagingPool;
  StagedBytes(StagingPool& pool, DeviceBytes memory, std::size_t size)
      : pool_(&pool), memory_(std::move(memory)), size_(size) {}
  StagingPool* pool_ = nullptr;
  DeviceBytes memory_;
  std::size_t size_ = 0;
};

// One participant's device memory for staged messages, kept for reuse: a message's bytes come
// from here and go back when it is done with, so that a run does not allocate per message (on a
// GPU cudaMalloc and cudaFree cost tens of microseconds, and cudaFree waits for the device).
// A request takes the smallest kept allocation that holds it, else a new one of the next power
// of two. It must outlive every StagedBytes it hands out. Thread-safe.
class StagingPool {
 public:
  explicit StagingPool(Device& device) : device_(device) {}
  StagedBytes take(std::size_t bytes);
  std::size_t allocations();  // made so far, for tests

 private:
  friend class StagedBytes;
  void keep(DeviceBytes memory);

  Device& device_;
  std::mutex mutex_;
  std::vector<DeviceBytes> kept_;
  std::size_t allocations_ = 0;
};

inline StagedBytes& StagedBytes::operator=(StagedBytes&& other) noexcept {
  std::swap(pool_, other.pool_);
  std::swap(memory_, other.memory_);
  std::swap(size_, other.size_);
  return *this;
}

inline StagedBytes::~StagedBytes() {
  if (pool_ != nullptr && memory_.data() != nullptr) pool_->keep(std::move(memory_));
}

// A rank buffer between guard zones in a device's memory, laid out by guarded_buffer.h's rule
// (GuardLayout), the zones checked by reading them back.
class DeviceGuardedBuffer {
 public:
  DeviceGuardedBuffer() = default;
  DeviceGuardedBuffer(Device& device, std::size_t count, std::size_t element_size, std::size_t offset,
                      std::size_t guard);

  std::byte* data() const { return storage_.size() == 0 ? nullptr : storage_.data() + layout_.front; }
  std::size_t bytes() const { return layout_.bytes; }
  bool intact(Device& device) const;

 private:
  GuardLayout layout_;
  DeviceBytes storage_;
};

}  // namespace collcheck::cuda
