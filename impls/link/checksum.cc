// The message checksum of impls/hook.h (checksum_body.h defines it): folded by carry-less
// multiplication where the CPU has AVX-512 and VPCLMULQDQ, by the crc32 instruction over the four
// streams at once where it has that, by checksum_body.h's loop otherwise (the same value every way,
// so processes on different CPUs, and devices, agree).
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "impls/link/checksum_body.h"
#include "impls/link/hook.h"
#include "impls/link/reduce_op.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace collcheck {
namespace {

#if defined(__x86_64__)
enum class Copy { None, Cached, AroundCache };

// Where each stream's words start in a message of n bytes (in bytes), how many words each takes,
// and how many whole 64-byte blocks every quarter has.
struct Quarters {
  explicit Quarters(std::size_t n) : common(n / 64 / 4) {
    for (int stream = 0; stream < 4; ++stream) {
      first[stream] = 8 * stream_first_word(n, stream);
      words[stream] = stream_words(n, stream);
    }
  }
  std::size_t first[4], words[4];
  std::size_t common;
};

// Each stream's words past its first `quarters.common` blocks, from `from`, into `streams`, word by
// word by the crc32 instruction (copied to `to` as kCopy says).
template <Copy kCopy>
__attribute__((target("sse4.2"))) inline void take_rest(const std::byte* from, std::size_t n, std::byte* to,
                                                        const Quarters& quarters, std::uint64_t streams[4]) {
  for (int stream = 0; stream < 4; ++stream) {
    for (std::size_t word = 8 * quarters.common; word < quarters.words[stream]; ++word) {
      const std::size_t at = quarters.first[stream] + 8 * word;
      const std::size_t bytes = at + 8 <= n ? 8 : n - at;
      std::uint64_t value = 0;
      std::memcpy(&value, from + at, bytes);
      if constexpr (kCopy != Copy::None) std::memcpy(to + at, &value, bytes);
      streams[stream] = _mm_crc32_u64(streams[stream], value);
    }
  }
  if constexpr (kCopy == Copy::AroundCache) _mm_sfence();
}

// The checksum of [from, from + n) as checksum_body.h defines it, streams (quarters) side by side
// so that the latency of each one's arithmetic overlaps: `Blocks` takes the first `blocks` 64-byte
// blocks of every quarter (as many quarters at once as it says) and returns their four CRCs; the
// rest, word by word by the crc32 instruction, here (take_rest). With a copy, the bytes also go to
// [to, to + n) in the same pass, from the registers the checksum reads (a sender's copy into a
// slot costs no second pass over it); around the cache (to 64-byte aligned), whole blocks with
// non-temporal stores, fenced at the end, the bytes after the last whole block by ordinary ones.
// (`to` is null without a copy.)
template <typename Blocks, Copy kCopy>
__attribute__((target("sse4.2"))) inline std::uint64_t hash(const std::byte* from, std::size_t n, std::byte* to) {
  std::uint64_t streams[4];
  const Quarters quarters(n);
  Blocks::template run<kCopy>(from, to, quarters.first, quarters.common, streams);
  take_rest<kCopy>(from, n, to, quarters, streams);
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
// The quarters go two at a time (a pair), not all four: a message's quarters lie a multiple of
// 4 KiB apart as often as not (a 128 KiB piece's do), so their blocks at the same offset fall
// into one set of the L1 cache; four quarters read and four written are eight lines of one
// set, as many as it has ways, and a copy ran at 15-25 GB/s where two pairs run at 35-45
// (docs/performance.md). Two folds in flight still hide the multiplication's latency.
constexpr std::uint64_t kFoldLow = 0x740eef02;
constexpr std::uint64_t kFoldHigh = 0x9e4addf8;
// The same 128 bytes on (x^(1024+31), x^(1024-33)): for two folds of one quarter side by side.
constexpr std::uint64_t kFoldTwiceLow = 0x6992cea2;
constexpr std::uint64_t kFoldTwiceHigh = 0x0d3b6092;

struct FoldBlocks {
  // `block`, also copied to `to + at` as `kCopy` says.
  template <Copy kCopy>
  __attribute__((target("avx512f"))) static inline __m512i store(__m512i block, std::byte* to, std::size_t at) {
    if constexpr (kCopy == Copy::Cached) _mm512_storeu_si512(to + at, block);
    if constexpr (kCopy == Copy::AroundCache) _mm512_stream_si512(reinterpret_cast<__m512i*>(to + at), block);
    return block;
  }

  // The block at `from + at`, also copied to `to + at` as `kCopy` says.
  template <Copy kCopy>
  __attribute__((target("avx512f"))) static inline __m512i load(const std::byte* from, std::byte* to, std::size_t at) {
    return store<kCopy>(_mm512_loadu_si512(from + at), to, at);
  }

  // The kept bytes moved 64 bytes on (128 with the twice constants), and `block` added.
  template <std::uint64_t kLow = kFoldLow, std::uint64_t kHigh = kFoldHigh>
  __attribute__((target("avx512f,vpclmulqdq"))) static inline __m512i fold_in(__m512i kept, __m512i block) {
    const auto low = static_cast<long long>(kLow), high = static_cast<long long>(kHigh);
    const __m512i fold = _mm512_set_epi64(high, low, high, low, high, low, high, low);
    const __m512i low_half = _mm512_clmulepi64_epi128(kept, fold, 0x00);
    const __m512i high_half = _mm512_clmulepi64_epi128(kept, fold, 0x11);
    return _mm512_ternarylogic_epi64(low_half, high_half, block, 0x96);  // a ^ b ^ c
  }

  // The CRC, from 0, of 64 kept bytes.
  __attribute__((target("avx512f,sse4.2"))) static inline std::uint64_t crc_of(__m512i kept) {
    alignas(64) std::uint64_t bytes[8];
    _mm512_store_si512(bytes, kept);
    std::uint64_t value = 0;
    for (std::uint64_t word : bytes) value = _mm_crc32_u64(value, word);
    return value;
  }

  // A quarter's first block with its start value xor-ed in.
  __attribute__((target("avx512f"))) static inline __m512i started(__m512i block, int stream) {
    return _mm512_xor_si512(block, _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, static_cast<long long>(stream_start(stream))));
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
    for (int pair = 0; pair < 4; pair += 2) {
      const std::size_t one = first[pair], other = first[pair + 1];
      __m512i kept_one = started(load<kCopy>(from, to, one), pair);
      __m512i kept_other = started(load<kCopy>(from, to, other), pair + 1);
      for (std::size_t at = 64; at < 64 * blocks; at += 64) {
        kept_one = fold_in(kept_one, load<kCopy>(from, to, one + at));
        kept_other = fold_in(kept_other, load<kCopy>(from, to, other + at));
      }
      crc[pair] = crc_of(kept_one);
      crc[pair + 1] = crc_of(kept_other);
    }
  }
};

// A reduction's results, a block at a time, for reduce_with_checksum: the block at `at` is a ⊕ b
// there, stored into `out` as it is made (`out` may be `a` or `b`: both are read first). Sums and
// products of float32 and float64, as reduce_elements_fast computes them: natively, and a block
// with a NaN result (rare) again by the contract, whose NaN payloads the hardware's need not be.
template <typename T, bool kProduct>
struct ReducedBlocks {
  DType dtype;
  RedOp op;
  const std::byte* a;
  const std::byte* b;
  std::byte* out;

  __attribute__((target("avx512f"))) __m512i operator()(std::size_t at) const {
    __m512i result;
    bool nan = false;
    if constexpr (std::is_same_v<T, float>) {
      const __m512 x = _mm512_loadu_ps(a + at), y = _mm512_loadu_ps(b + at);
      const __m512 made = kProduct ? _mm512_mul_ps(x, y) : _mm512_add_ps(x, y);
      nan = _mm512_cmp_ps_mask(made, made, _CMP_UNORD_Q) != 0;
      result = _mm512_castps_si512(made);
    } else {
      const __m512d x = _mm512_loadu_pd(a + at), y = _mm512_loadu_pd(b + at);
      const __m512d made = kProduct ? _mm512_mul_pd(x, y) : _mm512_add_pd(x, y);
      nan = _mm512_cmp_pd_mask(made, made, _CMP_UNORD_Q) != 0;
      result = _mm512_castpd_si512(made);
    }
    if (nan) {
      alignas(64) std::byte block[64];
      reduce_elements(dtype, op, a + at, b + at, block, 64 / sizeof(T));
      result = _mm512_load_si512(block);
    }
    _mm512_storeu_si512(out + at, result);
    return result;
  }

  // The block at `at`, also copied to `copy + at` as `kCopy` says.
  template <Copy kCopy>
  __attribute__((target("avx512f"))) __m512i made(std::size_t at, std::byte* copy) const {
    return FoldBlocks::store<kCopy>((*this)(at), copy, at);
  }
};

// reduce_with_checksum in one pass, as follows. The quarters' whole blocks are reduced, stored and
// folded as they are made, one quarter at a time (not two: a, b, out and the copy are four lines
// of an L1 set already; two quarters' eight were slower where the buffers lie at one offset modulo
// 4 KiB), a quarter's even and odd blocks in two folds side by side, each moved 128 bytes on per
// block (so that the multiplication's latency overlaps): the even fold holds the quarter's blocks
// 0, 2, 4, ... as the one fold would, less the odd ones, and the odd fold those, so the quarter's
// kept bytes are the fold that took the block before the last moved 64 bytes on, and the other
// added. Then the rest of each stream is reduced and taken from `out` as hash takes it.
template <typename T, bool kProduct, Copy kCopy>
__attribute__((target("avx512f,vpclmulqdq,sse4.2"))) inline std::uint64_t reduce_hash(
    DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t n, std::byte* copy) {
  std::uint64_t streams[4];
  const Quarters quarters(n);
  const ReducedBlocks<T, kProduct> reduced{dtype, op, a, b, out};
  for (int stream = 0; stream < 4; ++stream) {
    streams[stream] = stream_start(stream);
    if (quarters.common == 0) continue;
    const std::size_t first = quarters.first[stream], end = first + 64 * quarters.common;
    __m512i even = FoldBlocks::started(reduced.template made<kCopy>(first, copy), stream);
    if (quarters.common == 1) {
      streams[stream] = FoldBlocks::crc_of(even);
      continue;
    }
    __m512i odd = reduced.template made<kCopy>(first + 64, copy);
    std::size_t at = first + 128;
    for (; at + 64 < end; at += 128) {
      even = FoldBlocks::fold_in<kFoldTwiceLow, kFoldTwiceHigh>(even, reduced.template made<kCopy>(at, copy));
      odd = FoldBlocks::fold_in<kFoldTwiceLow, kFoldTwiceHigh>(odd, reduced.template made<kCopy>(at + 64, copy));
    }
    if (at < end) {  // an odd number of blocks: the last is even
      even = FoldBlocks::fold_in<kFoldTwiceLow, kFoldTwiceHigh>(even, reduced.template made<kCopy>(at, copy));
      streams[stream] = FoldBlocks::crc_of(FoldBlocks::fold_in(odd, even));
    } else {
      streams[stream] = FoldBlocks::crc_of(FoldBlocks::fold_in(even, odd));
    }
  }
  for (int stream = 0; stream < 4; ++stream) {
    const std::size_t rest = quarters.first[stream] + 64 * quarters.common;
    const std::size_t end = stream == 3 ? n : quarters.first[stream + 1];
    if (end > rest) reduce_elements_fast(dtype, op, a + rest, b + rest, out + rest, (end - rest) / sizeof(T));
  }
  take_rest<kCopy>(out, n, copy, quarters, streams);
  return fold_checksum(n, streams);
}

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

using ReduceEntry = std::uint64_t (*)(DType, RedOp, const std::byte*, const std::byte*, std::byte*, std::size_t,
                                      std::byte*);
#define COLLCHECK_REDUCE_ENTRY(name, type, product, copy)                                                            \
  __attribute__((target("avx512f,vpclmulqdq,sse4.2"), flatten)) std::uint64_t name(                                  \
      DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t n, std::byte* to) { \
    return reduce_hash<type, product, copy>(dtype, op, a, b, out, n, to);                                            \
  }
COLLCHECK_REDUCE_ENTRY(sum_floats_fold, float, false, Copy::Cached)
COLLCHECK_REDUCE_ENTRY(sum_floats_stream_fold, float, false, Copy::AroundCache)
COLLCHECK_REDUCE_ENTRY(multiply_floats_fold, float, true, Copy::Cached)
COLLCHECK_REDUCE_ENTRY(multiply_floats_stream_fold, float, true, Copy::AroundCache)
COLLCHECK_REDUCE_ENTRY(sum_doubles_fold, double, false, Copy::Cached)
COLLCHECK_REDUCE_ENTRY(sum_doubles_stream_fold, double, false, Copy::AroundCache)
COLLCHECK_REDUCE_ENTRY(multiply_doubles_fold, double, true, Copy::Cached)
COLLCHECK_REDUCE_ENTRY(multiply_doubles_stream_fold, double, true, Copy::AroundCache)
#undef COLLCHECK_REDUCE_ENTRY
// Indexed by [double][product][around the cache].
constexpr ReduceEntry kReduceEntries[2][2][2] = {
    {{sum_floats_fold, sum_floats_stream_fold}, {multiply_floats_fold, multiply_floats_stream_fold}},
    {{sum_doubles_fold, sum_doubles_stream_fold}, {multiply_doubles_fold, multiply_doubles_stream_fold}}};
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

std::uint64_t reduce_with_checksum(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
                                   std::byte* copy, std::size_t count, bool around_cache) {
  const std::size_t bytes = count * size_of(dtype);
#if defined(__x86_64__)
  if (native_sum_or_product(dtype, op) && fastest() == ChecksumWay::Folding) {
    const bool stream = around_cache && reinterpret_cast<std::uintptr_t>(copy) % 64 == 0;
    return kReduceEntries[dtype == DType::Float64][op == RedOp::Prod][stream](dtype, op, a, b, out, bytes, copy);
  }
#endif
  reduce_elements_fast(dtype, op, a, b, out, count);
  return copy_with_checksum(copy, {out, bytes}, around_cache);
}

}  // namespace collcheck
