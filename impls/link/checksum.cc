// The message checksum of impls/hook.h (checksum_body.h defines it): the CPU's crc32 instruction
// over the four streams at once where it has one, checksum_body.h's loop otherwise (the same value
// either way, so processes on different CPUs, and devices, agree).
#include <cstdint>
#include <cstring>

#include "impls/link/checksum_body.h"
#include "impls/link/hook.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace collcheck {
namespace {

enum class Copy { None, Cached, AroundCache };

// The checksum of [from, from + n): four streams, so that the crc32 instruction's latency
// overlaps. With a copy, the bytes also go to [to, to + n) in the same pass, from the registers
// that the checksum reads (a sender's copy into a slot costs no second pass over it); around the
// cache (to 16-byte aligned), with non-temporal stores, fenced at the end.
template <typename Crc, Copy kCopy>
inline std::uint64_t hash(const std::byte* from, std::size_t n, std::byte* to) {
  std::uint64_t c0 = 1, c1 = 2, c2 = 3, c3 = 4;
  const std::size_t size = n;
  for (; n >= 32; from += 32, n -= 32) {
    std::uint64_t w0, w1, w2, w3;
    std::memcpy(&w0, from, 8);
    std::memcpy(&w1, from + 8, 8);
    std::memcpy(&w2, from + 16, 8);
    std::memcpy(&w3, from + 24, 8);
    if constexpr (kCopy == Copy::Cached) {
      std::memcpy(to, &w0, 8);
      std::memcpy(to + 8, &w1, 8);
      std::memcpy(to + 16, &w2, 8);
      std::memcpy(to + 24, &w3, 8);
      to += 32;
    }
#if defined(__x86_64__)
    if constexpr (kCopy == Copy::AroundCache) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(to),
                       _mm_set_epi64x(static_cast<long long>(w1), static_cast<long long>(w0)));
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + 16),
                       _mm_set_epi64x(static_cast<long long>(w3), static_cast<long long>(w2)));
      to += 32;
    }
#endif
    c0 = Crc::word(c0, w0);
    c1 = Crc::word(c1, w1);
    c2 = Crc::word(c2, w2);
    c3 = Crc::word(c3, w3);
  }
  for (; n >= 8; from += 8, n -= 8) {
    std::uint64_t w;
    std::memcpy(&w, from, 8);
    if constexpr (kCopy != Copy::None) {
      std::memcpy(to, &w, 8);
      to += 8;
    }
    c0 = Crc::word(c0, w);
  }
  if (n > 0) {
    std::uint64_t tail = 0;
    std::memcpy(&tail, from, n);
    if constexpr (kCopy != Copy::None) std::memcpy(to, from, n);
    c1 = Crc::word(c1, tail);
  }
#if defined(__x86_64__)
  if constexpr (kCopy == Copy::AroundCache) _mm_sfence();
#endif
  const std::uint64_t streams[4] = {c0, c1, c2, c3};
  return fold_checksum(size, streams);
}

#if defined(__x86_64__)
struct HardwareCrc {
  __attribute__((target("sse4.2"))) static std::uint64_t word(std::uint64_t crc, std::uint64_t w) {
    return _mm_crc32_u64(crc, w);
  }
};

// `flatten` inlines the loop, and the instruction into it, here where sse4.2 is allowed.
__attribute__((target("sse4.2"), flatten)) std::uint64_t hash_hardware(const std::byte* from, std::size_t n) {
  return hash<HardwareCrc, Copy::None>(from, n, nullptr);
}
__attribute__((target("sse4.2"), flatten)) std::uint64_t hash_copy_hardware(const std::byte* from, std::size_t n,
                                                                            std::byte* to) {
  return hash<HardwareCrc, Copy::Cached>(from, n, to);
}
__attribute__((target("sse4.2"), flatten)) std::uint64_t hash_stream_hardware(const std::byte* from, std::size_t n,
                                                                              std::byte* to) {
  return hash<HardwareCrc, Copy::AroundCache>(from, n, to);
}

bool has_crc32() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

// The streams one after another by checksum_body.h's loop, as a device thread runs each.
std::uint64_t without_hardware(const std::byte* from, std::size_t n) {
  std::uint64_t streams[4];
  for (int stream = 0; stream < 4; ++stream) streams[stream] = checksum_stream(from, n, stream);
  return fold_checksum(n, streams);
}

std::uint64_t dispatch(const std::byte* from, std::size_t n) {
#if defined(__x86_64__)
  if (has_crc32()) return hash_hardware(from, n);
#endif
  return without_hardware(from, n);
}

}  // namespace

std::uint64_t checksum(std::span<const std::byte> bytes) {
  // An empty message (every message of a timing-only simulation) has one checksum: taken once.
  static const std::uint64_t empty = dispatch(nullptr, 0);
  return bytes.empty() ? empty : dispatch(bytes.data(), bytes.size());
}

std::uint64_t checksum_without_hardware(std::span<const std::byte> bytes) {
  return without_hardware(bytes.data(), bytes.size());
}

std::uint64_t copy_with_checksum(std::byte* to, std::span<const std::byte> from, bool around_cache) {
#if defined(__x86_64__)
  if (has_crc32() && around_cache && reinterpret_cast<std::uintptr_t>(to) % 16 == 0)
    return hash_stream_hardware(from.data(), from.size(), to);
  if (has_crc32()) return hash_copy_hardware(from.data(), from.size(), to);
#endif
  if (!from.empty()) std::memcpy(to, from.data(), from.size());
  return without_hardware(from.data(), from.size());
}

}  // namespace collcheck
