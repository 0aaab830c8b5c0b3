// StagingPool (device.h): a participant's staged-message memory, handed out and kept for reuse.
#include <algorithm>
#include <bit>

#include "impls/cuda/device.h"

namespace collcheck::cuda {

StagedBytes StagingPool::take(std::size_t bytes) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto best = kept_.end();  // the smallest that holds `bytes`
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->size() >= bytes && (best == kept_.end() || it->size() < best->size())) best = it;
    }
    if (best != kept_.end()) {
      DeviceBytes memory = std::move(*best);
      kept_.erase(best);
      return StagedBytes(*this, std::move(memory), bytes);
    }
    ++allocations_;
  }
  return StagedBytes(*this, DeviceBytes(device_, std::bit_ceil(std::max<std::size_t>(bytes, 256))), bytes);
}

std::size_t StagingPool::allocations() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return allocations_;
}

void StagingPool::keep(DeviceBytes memory) {
  const std::lock_guard<std::mutex> lock(mutex_);
  kept_.push_back(std::move(memory));
}

}  // namespace collcheck::cuda
