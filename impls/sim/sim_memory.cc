// The simulator's memory: every participant's guarded buffers (impls/link), addressed after
// in-place aliasing, and the reduction it applies to them (the standard contract or an override).
#include "impls/link/reduce_op.h"
#include "impls/sim/simulation.h"

namespace collcheck::sim {

// A buffer of `count` elements between two guard zones (impls/link/guarded_buffer.h).
void Simulation::allocate(GuardedBuffer& buffer, std::size_t count, GuardedBuffer::Start start) {
  buffer = GuardedBuffer(count, element_, schedule_.shape.offset, options_.guard, start);
}

// The memory behind element `offset` of a buffer of p, after in-place aliasing.
std::byte* Simulation::at(int p, BufferKind buffer, std::size_t offset) {
  const auto q = static_cast<std::size_t>(p);
  if (buffer == BufferKind::Scratch) return scratch_[q].data() + offset * element_;
  if (schedule_.shape.in_place && !schedule_.participants[q].is_switch) {
    const Alias alias = in_place_alias(schedule_.shape, p);
    if (alias.inside == BufferKind::Input && buffer == BufferKind::Input) {
      return output_[q].data() + (alias.offset + offset) * element_;
    }
    if (alias.inside == BufferKind::Output && buffer == BufferKind::Output) {
      return input_[q].data() + (alias.offset + offset) * element_;
    }
  }
  return (buffer == BufferKind::Input ? input_[q] : output_[q]).data() + offset * element_;
}

void Simulation::reduce(const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  auto apply = options_.reduction.reduce ? options_.reduction.reduce : &reduce_elements_fast;
  apply(schedule_.shape.dtype, schedule_.shape.op, a, b, out, count);
}

}  // namespace collcheck::sim
