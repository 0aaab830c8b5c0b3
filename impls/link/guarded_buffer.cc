// GuardedBuffer: one allocation laid out as guarded_buffer.h's rule says, and its guard check.
#include "impls/link/guarded_buffer.h"

#include <algorithm>
#include <cstdint>

namespace collcheck {

std::string_view name(GuardZone zone) {
  switch (zone) {
    case GuardZone::None: return "none";
    case GuardZone::Front: return "front (before the buffer)";
    case GuardZone::Back: return "back (after the buffer)";
  }
  return "?";
}

GuardLayout GuardLayout::of(std::size_t count, std::size_t element_size, std::size_t offset, std::size_t guard) {
  const std::size_t guard_bytes = guard * element_size;
  return GuardLayout{(guard_bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment + offset * element_size,
                     count * element_size, guard_bytes};
}

GuardedBuffer::GuardedBuffer(std::size_t count, std::size_t element_size, std::size_t offset, std::size_t guard,
                             Start start)
    : element_(element_size) {
  const GuardLayout layout = GuardLayout::of(count, element_size, offset, guard);
  front_ = layout.front;
  bytes_ = layout.bytes;
  back_ = layout.back;
  storage_size_ = kBufferAlignment + front_ + bytes_ + back_;
  storage_ = std::make_unique_for_overwrite<std::byte[]>(storage_size_);
  const auto address = reinterpret_cast<std::uintptr_t>(storage_.get());
  start_ = static_cast<std::size_t>((kBufferAlignment - address % kBufferAlignment) % kBufferAlignment);
  // The bytes before the first boundary and after the back zone belong to no one: zeroed too, so
  // that a copy of the whole allocation (allocation()) never reads memory nothing has written.
  std::fill_n(storage_.get(), start_, std::byte{0});
  std::fill_n(storage_.get() + start_, front_, kGuardPattern);
  if (start == Start::Zeroed) std::fill_n(storage_.get() + start_ + front_, bytes_, std::byte{0});
  std::fill_n(storage_.get() + start_ + front_ + bytes_, back_, kGuardPattern);
  const std::size_t used = start_ + front_ + bytes_ + back_;
  std::fill_n(storage_.get() + used, storage_size_ - used, std::byte{0});
}

GuardZone GuardedBuffer::damaged() const {
  if (storage_ == nullptr) return GuardZone::None;
  const auto is_pattern = [](std::byte b) { return b == kGuardPattern; };
  const std::byte* front = storage_.get() + start_;
  if (!std::all_of(front, front + front_, is_pattern)) return GuardZone::Front;
  const std::byte* back = front + front_ + bytes_;
  if (!std::all_of(back, back + back_, is_pattern)) return GuardZone::Back;
  return GuardZone::None;
}

}  // namespace collcheck
