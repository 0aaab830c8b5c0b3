// The simulator's memory: every participant's buffers between two guard zones, addressed after
// in-place aliasing, and the reduction it applies to them (the standard contract or an override).
#include <algorithm>

#include "impls/link/reduce_op.h"
#include "impls/sim/simulation.h"

namespace collcheck::sim {
namespace {

constexpr std::byte kGuardPattern{0xa5};

}  // namespace

// A buffer of `count` elements between two guard zones.
void Simulation::allocate(std::vector<std::byte>& buffer, std::size_t count) {
  buffer.assign((count + 2 * options_.guard) * element_, std::byte{0});
  std::fill(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(options_.guard * element_), kGuardPattern);
  std::fill(buffer.end() - static_cast<std::ptrdiff_t>(options_.guard * element_), buffer.end(), kGuardPattern);
}

bool Simulation::guards_intact(const std::vector<std::byte>& buffer) const {
  if (buffer.empty()) return true;
  const std::size_t bytes = options_.guard * element_;
  auto is_pattern = [](std::byte b) { return b == kGuardPattern; };
  return std::all_of(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(bytes), is_pattern) &&
         std::all_of(buffer.end() - static_cast<std::ptrdiff_t>(bytes), buffer.end(), is_pattern);
}

std::byte* Simulation::base(std::vector<std::byte>& buffer) { return buffer.data() + options_.guard * element_; }

// The memory behind element `offset` of a buffer of p, after in-place aliasing.
std::byte* Simulation::at(int p, BufferKind buffer, std::size_t offset) {
  const auto q = static_cast<std::size_t>(p);
  if (buffer == BufferKind::Scratch) return base(scratch_[q]) + offset * element_;
  if (schedule_.shape.in_place && !schedule_.participants[q].is_switch) {
    const Alias alias = in_place_alias(schedule_.shape, p);
    if (alias.inside == BufferKind::Input && buffer == BufferKind::Input) {
      return base(output_[q]) + (alias.offset + offset) * element_;
    }
    if (alias.inside == BufferKind::Output && buffer == BufferKind::Output) {
      return base(input_[q]) + (alias.offset + offset) * element_;
    }
  }
  return base(buffer == BufferKind::Input ? input_[q] : output_[q]) + offset * element_;
}

void Simulation::reduce(const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  auto apply = options_.reduction.reduce ? options_.reduction.reduce : &reduce_elements_fast;
  apply(schedule_.shape.dtype, schedule_.shape.op, a, b, out, count);
}

}  // namespace collcheck::sim
