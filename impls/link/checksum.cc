// The message checksum of impls/hook.h (checksum_body.h defines it): folded by carry-less
// multiplication where the CPU has AVX-512 and VPCLMULQDQ, by the crc32 instruction over the four
// streams at once where it has that, by checksum_body.h's loop otherwise (the same value every way,
// so processes on different CPUs, and devices, agree).
#include <cstdint>
#include <cstring>

#include "impls/link/checksum_body.h"
#include "impls/link/hook.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace collcheck {
namespace {

#if defined(__x86_64__)
enum class Copy { None, Cached, AroundCache };

// The checksum of [from, from + n) as checksum_body.h defines it, the four streams (quarters) side
// by side so that the latency of each one's arithmetic overlaps: `Blocks` takes the first `blocks`
// 64-byte blocks of every quarter at once and returns their four CRCs; the rest, word by word by
// the crc32 instruction, here. With a copy, the bytes also go to [to, to + n) in the same pass,
// from the registers the checksum reads (a sender's copy into a slot costs no second pass over
// it); around the cache (to 64-byte aligned), whole blocks with non-temporal stores, fenced at the
// end, the bytes after the last whole block by ordinary ones. (`to` is null without a copy.)
template <typename Blocks, Copy kCopy>
__attribute__((target("sse4.2"))) inline std::uint64_t hash(const std::byte* from, std::size_t n, std::byte* to) {
  std::uint64_t streams[4];
  std::size_t first[4], words[4];
  for (int stream = 0; stream < 4; ++stream) {
    first[stream] = 8 * stream_first_word(n, stream);
    words[stream] = stream_words(n, stream);
  }
  const std::size_t common = n / 64 / 4;  // whole blocks every quarter has
  Blocks::template run<kCopy>(from, to, first, common, streams);
  for (int stream = 0; stream < 4; ++stream) {
    for (std::size_t word = 8 * common; word < words[stream]; ++word) {
      const std::size_t at = first[stream] + 8 * word;
      const std::size_t bytes = at + 8 <= n ? 8 : n - at;
      std::uint64_t value = 0;
      std::memcpy(&value, from + at, bytes);
      if constexpr (kCopy != Copy::None) std::memcpy(to + at, &value, bytes);
      streams[stream] = _mm_crc32_u64(streams[stream], value);
    }
  }
  if constexpr (kCopy == Copy::AroundCache) _mm_sfence();
  return fold_checksum(n, streams);
}

// The first `blocks` blocks of every quarter by the crc32 instruction: a block of each quarter in
// turn, its words taken by the four streams' CRCs interleaved so that the instruction's latency
// overlaps, and copied 16 bytes of each quarter at a time (around the cache, a line of each).
struct WordBlocks {
  template <Copy kCopy>
  __attribute__((target("sse4.2"))) static inline void run(const std::byte* from, std::byte* to,
                                                           const std::size_t first[4], std::size_t blocks,
                                                           std::uint64_t crc[4]) {
    std::uint64_t c0 = stream_start(0), c1 = stream_start(1), c2 = stream_start(2), c3 = stream_start(3);
    const std::byte* q0 = from + first[0];
    const std::byte* q1 = from + first[1];
    const std::byte* q2 = from + first[2];
    const std::byte* q3 = from + first[3];
    auto word = [](const std::byte* at) {
      std::uint64_t value;
      std::memcpy(&value, at, 8);
      return value;
    };
    // Two words of each quarter at a time, read straight from the source (loads from a copy on
    // the stack would wait on store forwarding), stored from the registers they were read into.
    auto store = [&](int stream, std::size_t offset, std::uint64_t low, std::uint64_t high) {
      std::byte* target = to + first[stream] + offset;
      std::memcpy(target, &low, 8);
      std::memcpy(target + 8, &high, 8);
    };
    for (std::size_t offset = 0; offset < 64 * blocks; offset += 16) {
      const std::uint64_t a0 = word(q0 + offset), b0 = word(q0 + offset + 8);
      const std::uint64_t a1 = word(q1 + offset), b1 = word(q1 + offset + 8);
      const std::uint64_t a2 = word(q2 + offset), b2 = word(q2 + offset + 8);
      const std::uint64_t a3 = word(q3 + offset), b3 = word(q3 + offset + 8);
      c0 = _mm_crc32_u64(_mm_crc32_u64(c0, a0), b0);
      c1 = _mm_crc32_u64(_mm_crc32_u64(c1, a1), b1);
      c2 = _mm_crc32_u64(_mm_crc32_u64(c2, a2), b2);
      c3 = _mm_crc32_u64(_mm_crc32_u64(c3, a3), b3);
      if constexpr (kCopy == Copy::AroundCache) {
        // A whole line of each quarter at once: lines written in 16-byte parts across four
        // quarters leave the write-combining buffers half full.
        if (offset % 64 == 48) {
          for (int stream = 0; stream < 4; ++stream) {
            const std::byte* source = from + first[stream] + offset - 48;
            std::byte* target = to + first[stream] + offset - 48;
            for (std::size_t part = 0; part < 64; part += 16) {
              _mm_stream_si128(reinterpret_cast<__m128i*>(target + part),
                               _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + part)));
            }
          }
        }
      }
      if constexpr (kCopy == Copy::Cached) {
        store(0, offset, a0, b0);
        store(1, offset, a1, b1);
        store(2, offset, a2, b2);
        store(3, offset, a3, b3);
      }
    }
    crc[0] = c0;
    crc[1] = c1;
    crc[2] = c2;
    crc[3] = c3;
  }
};

// The first `blocks` blocks of every quarter by folding, as follows. CRC-32C without a final
// inversion is linear, and a start value c is the same as c xor-ed into the first 4 bytes from 0.
// Each quarter keeps 64 bytes, four 128-bit lanes, that have the CRC its blocks so far have: at
// first its first block with its start value xor-ed in; each next block is added after moving the
// kept bytes 64 bytes on, that is multiplying each lane by x^512 modulo the polynomial, which
// carry-less multiplication does for a lane's two 64-bit halves with two constants
// (kFoldLow: x^(512+31), kFoldHigh: x^(512-33), bit-reflected as the crc32 instruction's values
// are). The CRC of the 64 kept bytes, from 0, by the crc32 instruction, is then the quarter's.
constexpr std::uint64_t kFoldLow = 0x740eef02;
constexpr std::uint64_t kFoldHigh = 0x9e4addf8;

struct FoldBlocks {
  // One block from `from + at`, also copied to `to + at` as `kCopy` says.
  template <Copy kCopy>
  __attribute__((target("avx512f"))) static inline __m512i load(const std::byte* from, std::byte* to, std::size_t at) {
    const __m512i block = _mm512_loadu_si512(from + at);
    if constexpr (kCopy == Copy::Cached) _mm512_storeu_si512(to + at, block);
    if constexpr (kCopy == Copy::AroundCache) _mm512_stream_si512(reinterpret_cast<__m512i*>(to + at), block);
    return block;
  }

  template <Copy kCopy>
  __attribute__((target("avx512f,vpclmulqdq,sse4.2"))) static inline void run(const std::byte* from, std::byte* to,
                                                                              const std::size_t first[4],
                                                                              std::size_t blocks,
                                                                              std::uint64_t crc[4]) {
    if (blocks == 0) {
      for (int stream = 0; stream < 4; ++stream) crc[stream] = stream_start(stream);
      return;
    }
    const auto low = static_cast<long long>(kFoldLow), high = static_cast<long long>(kFoldHigh);
    const __m512i fold = _mm512_set_epi64(high, low, high, low, high, low, high, low);
    __m512i kept[4];
    for (int stream = 0; stream < 4; ++stream) {
      kept[stream] =
          _mm512_xor_si512(load<kCopy>(from, to, first[stream]),
                           _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, static_cast<long long>(stream_start(stream))));
    }
    for (std::size_t at = 64; at < 64 * blocks; at += 64) {
      for (int stream = 0; stream < 4; ++stream) {
        const __m512i low_half = _mm512_clmulepi64_epi128(kept[stream], fold, 0x00);
        const __m512i high_half = _mm512_clmulepi64_epi128(kept[stream], fold, 0x11);
        kept[stream] = _mm512_ternarylogic_epi64(low_half, high_half, load<kCopy>(from, to, first[stream] + at),
                                                 0x96);  // a ^ b ^ c
      }
    }
    for (int stream = 0; stream < 4; ++stream) {
      alignas(64) std::uint64_t bytes[8];
      _mm512_store_si512(bytes, kept[stream]);
      std::uint64_t value = 0;
      for (std::uint64_t word : bytes) value = _mm_crc32_u64(value, word);
      crc[stream] = value;
    }
  }
};

bool has_crc32() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
bool has_fold() {
  static const bool has = has_crc32() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq");
  return has;
}

// The entry points, one per way and copy (indexed by Copy): `flatten` inlines the loops, and the
// instructions into them, here where the targets are allowed.
using HashEntry = std::uint64_t (*)(const std::byte*, std::size_t, std::byte*);
#define COLLCHECK_HASH_ENTRY(name, target_list, blocks, copy)                                            \
  __attribute__((target(target_list), flatten)) std::uint64_t name(const std::byte* from, std::size_t n, \
                                                                   std::byte* to) {                      \
    return hash<blocks, copy>(from, n, to);                                                              \
  }
COLLCHECK_HASH_ENTRY(hash_words, "sse4.2", WordBlocks, Copy::None)
COLLCHECK_HASH_ENTRY(hash_copy_words, "sse4.2", WordBlocks, Copy::Cached)
COLLCHECK_HASH_ENTRY(hash_stream_words, "sse4.2", WordBlocks, Copy::AroundCache)
COLLCHECK_HASH_ENTRY(hash_fold, "avx512f,vpclmulqdq,sse4.2", FoldBlocks, Copy::None)
COLLCHECK_HASH_ENTRY(hash_copy_fold, "avx512f,vpclmulqdq,sse4.2", FoldBlocks, Copy::Cached)
COLLCHECK_HASH_ENTRY(hash_stream_fold, "avx512f,vpclmulqdq,sse4.2", FoldBlocks, Copy::AroundCache)
constexpr HashEntry kWordEntries[] = {hash_words, hash_copy_words, hash_stream_words};
constexpr HashEntry kFoldEntries[] = {hash_fold, hash_copy_fold, hash_stream_fold};
#undef COLLCHECK_HASH_ENTRY
#endif

// The streams one after another by checksum_body.h's loop, as a device thread runs each.
std::uint64_t without_hardware(const std::byte* from, std::size_t n) {
  std::uint64_t streams[4];
  for (int stream = 0; stream < 4; ++stream) streams[stream] = checksum_stream(from, n, stream);
  return fold_checksum(n, streams);
}

// The fastest way this CPU has, found once.
ChecksumWay fastest() {
  static const ChecksumWay way = [] {
#if defined(__x86_64__)
    if (has_fold()) return ChecksumWay::Folding;
    if (has_crc32()) return ChecksumWay::Crc32;
#endif
    return ChecksumWay::Portable;
  }();
  return way;
}

}  // namespace

std::uint64_t checksum(std::span<const std::byte> bytes) {
  // An empty message (every message of a timing-only simulation) has one checksum: taken once.
  static const std::uint64_t empty = copy_with_checksum_by(fastest(), nullptr, {}, false);
  return bytes.empty() ? empty : copy_with_checksum_by(fastest(), nullptr, bytes, false);
}

std::uint64_t copy_with_checksum(std::byte* to, std::span<const std::byte> from, bool around_cache) {
  return copy_with_checksum_by(fastest(), to, from, around_cache);
}

bool has_checksum_way(ChecksumWay way) {
#if defined(__x86_64__)
  if (way == ChecksumWay::Folding) return has_fold();
  if (way == ChecksumWay::Crc32) return has_crc32();
#endif
  return way == ChecksumWay::Portable;
}

std::uint64_t copy_with_checksum_by(ChecksumWay way, std::byte* to, std::span<const std::byte> from,
                                    bool around_cache) {
#if defined(__x86_64__)
  if (way != ChecksumWay::Portable) {
    const Copy copy = to == nullptr                                                    ? Copy::None
                      : around_cache && reinterpret_cast<std::uintptr_t>(to) % 64 == 0 ? Copy::AroundCache
                                                                                       : Copy::Cached;
    const HashEntry* entries = way == ChecksumWay::Folding ? kFoldEntries : kWordEntries;
    return entries[static_cast<std::size_t>(copy)](from.data(), from.size(), to);
  }
#endif
  if (to != nullptr && !from.empty()) std::memcpy(to, from.data(), from.size());
  return without_hardware(from.data(), from.size());
}

}  // namespace collcheck
