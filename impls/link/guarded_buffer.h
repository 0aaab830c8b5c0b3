// A rank buffer between two guard zones, laid out by one rule for every executor and vendor
// adapter (sim, proc, mpi, gloo, ...), so a case tests the same misalignment on each of them.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace collcheck {

// The layout rule. The storage starts at a kBufferAlignment (64-byte) boundary, the front guard
// zone fills it up to the buffer, and the buffer starts at the first boundary at or past `guard`
// elements, plus the case's offset (Case::offset, in elements). So the buffer's address is
// offset * element size bytes past a 64-byte boundary on every backend: offset 0 is aligned as
// cudaMalloc or a cache line is, offset 1 of f32 is 4 bytes off. The back zone is the `guard`
// elements right after the buffer's last byte. Both zones hold kGuardPattern, the buffer starts
// zeroed (unless its maker overwrites it at once: Start), and damaged() names the first zone whose
// pattern changed.
inline constexpr std::size_t kBufferAlignment = 64;
inline constexpr std::size_t kGuardElements = 8;  // the guard every backend puts around a buffer
inline constexpr std::byte kGuardPattern{0xa5};

// Where the rule puts a buffer in storage that starts at a kBufferAlignment boundary: `front`
// bytes of zone (the guard rounded up to a boundary, plus the offset), the buffer's `bytes`, then
// `back` bytes of zone. A device allocation, aligned at least as well, uses it as it stands.
struct GuardLayout {
  std::size_t front = 0, bytes = 0, back = 0;
  std::size_t total() const { return front + bytes + back; }
  static GuardLayout of(std::size_t count, std::size_t element_size, std::size_t offset, std::size_t guard);
};

enum class GuardZone { None, Front, Back };
std::string_view name(GuardZone);  // none, front (before the buffer), back (after it)

class GuardedBuffer {
 public:
  GuardedBuffer() = default;  // no memory: data() is null, the guards intact
  // What the buffer holds at first: zeroes, or nothing in particular, for a caller that writes
  // every byte of it at once (an input filled from the generator): clearing it first would be a
  // pass over its memory for nothing. The guard zones are filled either way.
  enum class Start { Zeroed, Overwritten };
  GuardedBuffer(std::size_t count, std::size_t element_size, std::size_t offset, std::size_t guard = kGuardElements,
                Start start = Start::Zeroed);
  // Moves keep the storage (and its alignment), leaving none behind; a copy would move it, so
  // there is none.
  GuardedBuffer(GuardedBuffer&& other) noexcept { *this = std::move(other); }
  GuardedBuffer& operator=(GuardedBuffer&& other) noexcept {
    storage_ = std::move(other.storage_);
    storage_size_ = std::exchange(other.storage_size_, 0);
    start_ = other.start_;
    front_ = other.front_;
    bytes_ = std::exchange(other.bytes_, 0);
    back_ = other.back_;
    element_ = other.element_;
    return *this;
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  std::byte* data() { return storage_ == nullptr ? nullptr : storage_.get() + start_ + front_; }
  const std::byte* data() const { return storage_ == nullptr ? nullptr : storage_.get() + start_ + front_; }
  std::byte* at(std::size_t element) { return data() + element * element_; }
  std::size_t bytes() const { return bytes_; }
  // The whole allocation, guard zones included: what a mirror of the buffer elsewhere (a GPU's
  // memory) copies byte for byte, so that the zones are checked here after it comes back.
  std::span<std::byte> allocation() { return {storage_.get(), storage_size_}; }

  GuardZone damaged() const;
  bool intact() const { return damaged() == GuardZone::None; }

 private:
  std::unique_ptr<std::byte[]> storage_;  // storage_size_ bytes
  std::size_t storage_size_ = 0;
  std::size_t start_ = 0;    // the first 64-byte boundary in storage_
  std::size_t front_ = 0;    // bytes of front zone: the guard rounded up to a boundary, plus the offset
  std::size_t bytes_ = 0;    // the buffer's
  std::size_t back_ = 0;     // bytes of back zone
  std::size_t element_ = 1;  // bytes per element
};

}  // namespace collcheck
