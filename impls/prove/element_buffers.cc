// ElementBuffers (element_buffers.h): the prover's buffers of provenance elements.
#include "impls/prove/element_buffers.h"

namespace collcheck::provenance {

ElementBuffers::ElementBuffers(const Schedule& schedule, int participants) : schedule_(schedule) {
  const auto n = static_cast<std::size_t>(participants);
  output_.resize(n);
  scratch_.resize(n);
  input_.resize(n);
  for (int p = 0; p < participants; ++p) {
    const auto q = static_cast<std::size_t>(p);
    output_[q].resize(schedule.buffer_size(p, BufferKind::Output));
    scratch_[q].resize(schedule.buffer_size(p, BufferKind::Scratch));
    if (schedule.participants[q].is_switch || !schedule.shape.in_place) continue;
    const std::size_t size = schedule.buffer_size(p, BufferKind::Input);
    const auto rank = static_cast<std::uint32_t>(p);
    const Alias alias = in_place_alias(schedule.shape, p);
    if (alias.inside == BufferKind::Output) {  // reduce-scatter: the output lies in the input
      input_[q].resize(size);
      for (std::size_t i = 0; i < size; ++i) input_[q][i] = Element(i, rank);
      continue;
    }
    for (std::size_t i = 0; i < size; ++i) output_[q].at(alias.offset + i) = Element(i, rank);
  }
}

Element* ElementBuffers::storage(int p, BufferKind buffer) {
  const auto q = static_cast<std::size_t>(p);
  if (buffer == BufferKind::Scratch) return scratch_[q].data();
  if (schedule_.shape.in_place && !schedule_.participants[q].is_switch) {
    const Alias alias = in_place_alias(schedule_.shape, p);
    if (alias.inside == BufferKind::Input && buffer == BufferKind::Input) return output_[q].data() + alias.offset;
    if (alias.inside == BufferKind::Output && buffer == BufferKind::Output) return input_[q].data() + alias.offset;
    if (buffer == BufferKind::Input) return input_[q].data();
  }
  return output_[q].data();
}

bool ElementBuffers::read(int p, const Range& range, Contents& values, std::size_t& undefined) {
  values.clear();
  values.reserve(range.count);
  const auto rank = static_cast<std::uint32_t>(p);
  if (range.buffer == BufferKind::Input && !schedule_.shape.in_place) {
    for (std::size_t i = 0; i < range.count; ++i) values.emplace_back(range.offset + i, rank);
    return true;
  }
  const Element* stored = storage(p, range.buffer) + range.offset;
  for (std::size_t i = 0; i < range.count; ++i) {
    if (!stored[i].defined()) {
      undefined = range.offset + i;
      return false;
    }
    values.push_back(stored[i]);
  }
  return true;
}

Element* ElementBuffers::write(int p, const Range& range, Contents& values) {
  Element* stored = storage(p, range.buffer) + range.offset;
  for (std::size_t i = 0; i < range.count; ++i) stored[i] = std::move(values[i]);
  return stored;
}

}  // namespace collcheck::provenance
