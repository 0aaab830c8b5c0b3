// StagingPool (device.h): a participant's staged-message memory, handed out and kept for reuse.
#include <algorithm>
#include <bit>

#include "impls/cuda/device.h"

namespace collcheck::cuda {

StagedBytes StagingPool::take(std::size_t bytes) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto fits = [&](const DeviceBytes& kept) { return kept.size() >= bytes; };
    auto best = kept_.end();
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (fits(*it) && (best == kept_.end() || it->size() < best->size())) best = it;
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

void StagingPool::keep(DeviceBytes memory) {
  const std::lock_guard<std::mutex> lock(mutex_);
  kept_.push_back(std::move(memory));
}

}  // namespace collcheck::cuda
