// The host as the cuda engine's device (`cuda-host`): host memory, the kernels of reduce_kernels.h
// run on the calling thread, link/'s checksum; and the guarded buffer kept in a device's memory.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <vector>

#include "impls/cuda/device.h"
#include "impls/cuda/host_kernels.h"
#include "impls/link/hook.h"

namespace collcheck::cuda {
namespace {

constexpr std::size_t kAlignment = 256;

class HostDevice final : public Device {
 public:
  std::string name() const override { return "host"; }
  bool memory_is_host() const override { return true; }

  std::byte* allocate(std::size_t bytes) override {
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
    auto* memory = static_cast<std::byte*>(std::aligned_alloc(kAlignment, rounded));
    if (memory == nullptr) throw std::bad_alloc();
    std::memset(memory, 0, rounded);
    return memory;
  }
  void release(std::byte* memory) override { std::free(memory); }
  void write(std::byte* to, const std::byte* from_host, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(to, from_host, bytes);
  }
  void read(std::byte* to_host, const std::byte* from, std::size_t bytes) override {
    if (bytes > 0) std::memcpy(to_host, from, bytes);
  }
  void fill(std::byte* to, std::byte value, std::size_t bytes) override {
    if (bytes > 0) std::memset(to, static_cast<int>(value), bytes);
  }
  void copy(std::byte* to, const std::byte* from, std::size_t bytes) override {
    if (bytes > 0 && to != from) std::memcpy(to, from, bytes);
  }
  std::uint64_t checksum(const std::byte* data, std::size_t bytes) override {
    return collcheck::checksum(std::span<const std::byte>(data, bytes));
  }
  std::uint64_t copy_with_checksum(std::byte* to, const std::byte* from, std::size_t bytes) override {
    return collcheck::copy_with_checksum(to, std::span<const std::byte>(from, bytes));
  }
  void reduce(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
              std::size_t count) override {
    reduce_on_host(dtype, op, a, b, out, count);
  }
  void finish_average(DType dtype, std::byte* data, std::size_t count, int nranks) override {
    finish_average_on_host(dtype, data, count, nranks);
  }
};

}  // namespace

std::unique_ptr<Device> make_host_device(int) { return std::make_unique<HostDevice>(); }

DeviceGuardedBuffer::DeviceGuardedBuffer(Device& device, std::size_t count, std::size_t element_size,
                                         std::size_t offset, std::size_t guard)
    : layout_(GuardLayout::of(count, element_size, offset, guard)), storage_(device, layout_.total()) {
  device.fill(storage_.data(), kGuardPattern, layout_.front);
  device.fill(storage_.data() + layout_.front + layout_.bytes, kGuardPattern, layout_.back);
}

bool DeviceGuardedBuffer::intact(Device& device) const {
  if (storage_.size() == 0) return true;
  std::vector<std::byte> zones(layout_.front + layout_.back);
  device.read(zones.data(), storage_.data(), layout_.front);
  device.read(zones.data() + layout_.front, storage_.data() + layout_.front + layout_.bytes, layout_.back);
  return std::all_of(zones.begin(), zones.end(), [](std::byte b) { return b == kGuardPattern; });
}

}  // namespace collcheck::cuda
