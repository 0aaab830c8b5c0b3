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

enum class Copy { None, Cached, AroundCache };

// Copies one 8-byte word (or the last partial one) to byte `at` of `to` as `kCopy` says: the bytes
// after the last whole 64-byte block always by ordinary stores. (`to` is null without a copy.)
template <Copy kCopy>
inline void copy_word(std::byte* to, std::size_t at, const std::uint64_t& word, std::size_t bytes) {
  if constexpr (kCopy != Copy::None) std::memcpy(to + at, &word, bytes);
}

// The checksum of [from, from + n) as checksum_body.h defines it, the four streams (quarters) side
// by side so that the crc32 instruction's latency overlaps: `Blocks` takes the first `blocks`
// 64-byte blocks of every quarter at once and returns their four CRCs; the rest, word by word,
// here. With a copy, the bytes also go to [to, to + n) in the same pass, from the registers the
// checksum reads (a sender's copy into a slot costs no second pass over it); around the cache (to
// 64-byte aligned), with non-temporal stores, fenced at the end.
template <typename Crc, typename Blocks, Copy kCopy>
inline std::uint64_t hash(const std::byte* from, std::size_t n, std::byte* to) {
  std::uint64_t streams[4];
  std::size_t first[4], words[4];
  for (int stream = 0; stream < 4; ++stream) {
    first[stream] = 8 * stream_first_word(n, stream);
    words[stream] = stream_words(n, stream);
  }
  const std::size_t common = n / 64 / 4;  // whole blocks every quarter has
  Blocks::template run<kCopy>(from, to, first, common, streams);
  for (int stream = 0; stream < 4; ++stream) {
    std::uint64_t crc = streams[stream];
    for (std::size_t word = 8 * common; word < words[stream]; ++word) {
      const std::size_t at = first[stream] + 8 * word;
      const std::size_t bytes = at + 8 <= n ? 8 : n - at;
      std::uint64_t value = 0;
      std::memcpy(&value, from + at, bytes);
      copy_word<kCopy>(to, at, value, bytes);
      crc = Crc::word(crc, value);
    }
    streams[stream] = crc;
  }
#if defined(__x86_64__)
  if constexpr (kCopy == Copy::AroundCache) _mm_sfence();
#endif
  return fold_checksum(n, streams);
}

#if defined(__x86_64__)
struct HardwareCrc {
  __attribute__((target("sse4.2"))) static std::uint64_t word(std::uint64_t crc, std::uint64_t w) {
    return _mm_crc32_u64(crc, w);
  }
};

// The first `blocks` blocks of every quarter by the crc32 instruction: a block of each quarter in
// turn, copied whole (a whole cache line per non-temporal store run), its words taken by the four
// streams' CRCs interleaved so that the instruction's latency overlaps.
struct WordBlocks {
  template <Copy kCopy>
  __attribute__((target("sse4.2"))) static inline void run(const std::byte* from, std::byte* to,
                                                           const std::size_t first[4], std::size_t blocks,
                                                           std::uint64_t crc[4]) {
    std::uint64_t c0 = 1, c1 = 2, c2 = 3, c3 = 4;
    for (std::size_t at = 0; at < 64 * blocks; at += 64) {
      std::uint64_t words[4][8];
      for (int stream = 0; stream < 4; ++stream) {
        const std::byte* source = from + first[stream] + at;
        std::memcpy(words[stream], source, 64);
        if constexpr (kCopy == Copy::Cached) std::memcpy(to + first[stream] + at, words[stream], 64);
        if constexpr (kCopy == Copy::AroundCache) {
          for (std::size_t part = 0; part < 4; ++part) {
            _mm_stream_si128(reinterpret_cast<__m128i*>(to + first[stream] + at + 16 * part),
                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + 16 * part)));
          }
        }
      }
      for (int word = 0; word < 8; ++word) {
        c0 = _mm_crc32_u64(c0, words[0][word]);
        c1 = _mm_crc32_u64(c1, words[1][word]);
        c2 = _mm_crc32_u64(c2, words[2][word]);
        c3 = _mm_crc32_u64(c3, words[3][word]);
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
      for (int stream = 0; stream < 4; ++stream) crc[stream] = static_cast<std::uint64_t>(stream) + 1;
      return;
    }
    const auto low = static_cast<long long>(kFoldLow), high = static_cast<long long>(kFoldHigh);
    const __m512i fold = _mm512_set_epi64(high, low, high, low, high, low, high, low);
    __m512i kept[4];
    for (int stream = 0; stream < 4; ++stream) {
      kept[stream] =
          _mm512_xor_si512(load<kCopy>(from, to, first[stream]), _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, stream + 1));
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

// `flatten` inlines the loops, and the instructions into them, here where the targets are allowed.
#define COLLCHECK_HASH_ENTRY(name, target_list, blocks, copy)                                            \
  __attribute__((target(target_list), flatten)) std::uint64_t name(const std::byte* from, std::size_t n, \
                                                                   std::byte* to) {                      \
    return hash<HardwareCrc, blocks, copy>(from, n, to);                                                 \
  }
COLLCHECK_HASH_ENTRY(hash_words, "sse4.2", WordBlocks, Copy::None)
COLLCHECK_HASH_ENTRY(hash_copy_words, "sse4.2", WordBlocks, Copy::Cached)
COLLCHECK_HASH_ENTRY(hash_stream_words, "sse4.2", WordBlocks, Copy::AroundCache)
COLLCHECK_HASH_ENTRY(hash_fold, "avx512f,vpclmulqdq,sse4.2", FoldBlocks, Copy::None)
COLLCHECK_HASH_ENTRY(hash_copy_fold, "avx512f,vpclmulqdq,sse4.2", FoldBlocks, Copy::Cached)
COLLCHECK_HASH_ENTRY(hash_stream_fold, "avx512f,vpclmulqdq,sse4.2", FoldBlocks, Copy::AroundCache)
#undef COLLCHECK_HASH_ENTRY
#endif

// The streams one after another by checksum_body.h's loop, as a device thread runs each.
std::uint64_t without_hardware(const std::byte* from, std::size_t n) {
  std::uint64_t streams[4];
  for (int stream = 0; stream < 4; ++stream) streams[stream] = checksum_stream(from, n, stream);
  return fold_checksum(n, streams);
}

ChecksumWay fastest() {
#if defined(__x86_64__)
  if (has_fold()) return ChecksumWay::Folding;
  if (has_crc32()) return ChecksumWay::Crc32;
#endif
  return ChecksumWay::Portable;
}

}  // namespace

std::uint64_t checksum(std::span<const std::byte> bytes) {
  // An empty message (every message of a timing-only simulation) has one checksum: taken once.
  static const ChecksumWay way = fastest();
  static const std::uint64_t empty = copy_with_checksum_by(way, nullptr, {}, false);
  return bytes.empty() ? empty : copy_with_checksum_by(way, nullptr, bytes, false);
}

std::uint64_t copy_with_checksum(std::byte* to, std::span<const std::byte> from, bool around_cache) {
  static const ChecksumWay way = fastest();
  return copy_with_checksum_by(way, to, from, around_cache);
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
  const bool stream = around_cache && reinterpret_cast<std::uintptr_t>(to) % 64 == 0;
  if (way == ChecksumWay::Folding) {
    if (to == nullptr) return hash_fold(from.data(), from.size(), nullptr);
    return stream ? hash_stream_fold(from.data(), from.size(), to) : hash_copy_fold(from.data(), from.size(), to);
  }
  if (way == ChecksumWay::Crc32) {
    if (to == nullptr) return hash_words(from.data(), from.size(), nullptr);
    return stream ? hash_stream_words(from.data(), from.size(), to) : hash_copy_words(from.data(), from.size(), to);
  }
#endif
  if (to != nullptr && !from.empty()) std::memcpy(to, from.data(), from.size());
  return without_hardware(from.data(), from.size());
}

}  // namespace collcheck
