// The message checksum of impls/hook.h: four independent multiply-xor lanes over 8-byte words
// (fast enough to run over every byte our executors move), folded with the length at the end.
#include <cstring>

#include "impls/hook.h"
#include "reference/random.h"

namespace collcheck {
namespace {

constexpr std::uint64_t kOdd = 0x9e3779b97f4a7c15ULL;  // odd: multiplying by it is a bijection

inline std::uint64_t lane(std::uint64_t h, std::uint64_t word) { return (h ^ word) * kOdd; }

inline std::uint64_t word_at(const std::byte* p) {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

}  // namespace

std::uint64_t checksum(std::span<const std::byte> bytes) {
  std::uint64_t h0 = 1, h1 = 2, h2 = 3, h3 = 4;
  const std::byte* p = bytes.data();
  std::size_t n = bytes.size();
  for (; n >= 32; p += 32, n -= 32) {
    h0 = lane(h0, word_at(p));
    h1 = lane(h1, word_at(p + 8));
    h2 = lane(h2, word_at(p + 16));
    h3 = lane(h3, word_at(p + 24));
  }
  for (; n >= 8; p += 8, n -= 8) h0 = lane(h0, word_at(p));
  if (n > 0) {
    std::uint64_t tail = 0;
    std::memcpy(&tail, p, n);
    h1 = lane(h1, tail);
  }
  return mix64(mix64(h0 ^ mix64(h1)) ^ mix64(h2 ^ mix64(h3 ^ bytes.size())));
}

}  // namespace collcheck
