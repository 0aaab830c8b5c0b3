// The message checksum: the folding by carry-less multiplication, the crc32 instruction and
// checksum_body.h's loop (what a device runs) give the same value (processes on different CPUs and
// devices must agree), and flipped bits and other lengths change it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "impls/link/checksum_body.h"
#include "impls/link/hook.h"
#include "impls/link/reduce_op.h"
#include "reference/random.h"

namespace collcheck {
namespace {

std::vector<std::byte> bytes_of(std::size_t size, std::uint64_t seed) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(mix64(seed ^ mix64(i)));
  return bytes;
}

// Sizes around what each way takes differently: words, the 64-byte blocks, quarters of unequal
// length (B mod 4 blocks left over), one block and several per quarter, and tails after them.
constexpr std::size_t kSizes[] = {0,   1,   7,   8,   9,   31,  32,  33,  63,   64,   100,  255,    256,
                                  257, 320, 383, 384, 448, 511, 512, 575, 1000, 4096, 4160, 131072, 131075};

constexpr ChecksumWay kWays[] = {ChecksumWay::Portable, ChecksumWay::Crc32, ChecksumWay::Folding};

const char* name(ChecksumWay way) {
  return way == ChecksumWay::Folding ? "folding" : way == ChecksumWay::Crc32 ? "crc32 instruction" : "portable loop";
}

// Every way this CPU has gives the portable loop's value, the one checksum() gives.
TEST(Checksum, EveryWayAgrees) {
  int ways = 0;
  for (ChecksumWay way : kWays) {
    if (!has_checksum_way(way)) continue;
    ++ways;
    for (std::size_t size : kSizes) {
      const std::vector<std::byte> data = bytes_of(size, size);
      EXPECT_EQ(copy_with_checksum_by(way, nullptr, data, false), checksum(data)) << size << " bytes, " << name(way);
      EXPECT_EQ(copy_with_checksum_by(way, nullptr, data, false),
                copy_with_checksum_by(ChecksumWay::Portable, nullptr, data, false))
          << size << " bytes, " << name(way);
    }
  }
  if (ways < 3)
    GTEST_SKIP() << "this CPU has " << ways << " of the checksum's 3 ways (crc32: SSE 4.2; folding: "
                 << "AVX-512 with VPCLMULQDQ); the others were not compared";
}

// The sender's one-pass copy gives checksum()'s value and a faithful copy, every way, at every length.
TEST(Checksum, CopyWithChecksumCopiesAndAgrees) {
  for (ChecksumWay way : kWays) {
    if (!has_checksum_way(way)) continue;
    for (std::size_t size : kSizes) {
      const std::vector<std::byte> data = bytes_of(size, size + 1);
      // Around the cache too (non-temporal stores where the destination is 64-byte aligned, at
      // offset 0 of an aligned block; the cached copy at offset 8): the same bytes, the same value.
      for (const auto& [around_cache, at] : {std::pair{false, 0}, std::pair{true, 0}, std::pair{true, 8}}) {
        std::vector<std::byte> copy(size + 128, std::byte{0x5a});
        std::byte* base = copy.data() + (64 - reinterpret_cast<std::uintptr_t>(copy.data()) % 64) % 64;
        std::byte* to = base + at;
        EXPECT_EQ(copy_with_checksum_by(way, to, data, around_cache), checksum(data)) << size << ", " << name(way);
        EXPECT_TRUE(std::equal(data.begin(), data.end(), to))
            << size << (around_cache ? " around the cache, " : ", ") << name(way);
        EXPECT_EQ(to[size], std::byte{0x5a}) << size << ", " << name(way);  // nothing written past the end
      }
    }
  }
  const std::vector<std::byte> data = bytes_of(4160, 9);
  std::vector<std::byte> copy(data.size());
  EXPECT_EQ(copy_with_checksum(copy.data(), data), checksum(data));
  EXPECT_EQ(copy, data);
}

// Two operands of `count` elements, with (where there are enough) a NaN in each at the same
// element, each with its own payload (which one the result keeps is the contract's, not the
// hardware's operand order), and an infinity in another block.
std::pair<std::vector<std::byte>, std::vector<std::byte>> operands(DType dtype, std::size_t count, std::uint64_t seed) {
  const std::size_t size = size_of(dtype);
  std::vector<std::byte> a = bytes_of(count * size, seed), b = bytes_of(count * size, seed + 1);
  if (count > 40) {
    const bool wide = dtype == DType::Float64;
    const std::uint64_t nan_a = wide ? 0x7ff4000000000456ULL : 0x7fc00456ULL;
    const std::uint64_t nan_b = wide ? 0x7ff4000000000123ULL : 0x7fc00123ULL;
    const std::uint64_t infinity = wide ? 0x7ff0000000000000ULL : 0x7f800000ULL;
    std::memcpy(a.data() + 3 * size, &nan_a, size);
    std::memcpy(b.data() + 3 * size, &nan_b, size);
    std::memcpy(a.data() + (count - 2) * size, &infinity, size);
  }
  return {std::move(a), std::move(b)};
}

// reduce_with_checksum of `count` elements, in place or not, around the cache or not, against the
// reduction and the copy apart.
void expect_reduce_with_checksum(DType dtype, RedOp op, std::size_t count, bool in_place, bool around_cache) {
  auto [a, b] = operands(dtype, count, count + 3);
  std::vector<std::byte> expected(a.size());
  reduce_elements_fast(dtype, op, a.data(), b.data(), expected.data(), count);
  std::vector<std::byte> out = in_place ? a : std::vector<std::byte>(a.size());
  const std::byte* first = in_place ? out.data() : a.data();
  std::vector<std::byte> slot(a.size() + 128);
  std::byte* copy = slot.data() + (64 - reinterpret_cast<std::uintptr_t>(slot.data()) % 64) % 64;
  const std::uint64_t sum = reduce_with_checksum(dtype, op, first, b.data(), out.data(), copy, count, around_cache);
  const std::string where = std::string(name(dtype)) + " " + std::string(name(op)) + ", " + std::to_string(count) +
                            " elements" + (in_place ? ", in place" : "") + (around_cache ? ", around the cache" : "");
  EXPECT_TRUE(out == expected) << where;
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), copy)) << where;
  EXPECT_EQ(sum, checksum(expected)) << where;
}

// A received piece reduced into place and stored into the next slot in one pass gives what the
// reduction and the copy give apart: the same results in place and in the copy, bit for bit (NaN
// payloads included), and the results' checksum; at every length, in place and not, around
// the cache and not, for every op of float32 and float64 (the one-pass kinds and the others) and of two types that take
// two passes.
TEST(Checksum, ReduceWithChecksumIsTheReductionAndTheCopy) {
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16, DType::Int32}) {
    for (RedOp op : {RedOp::Sum, RedOp::Prod, RedOp::Avg, RedOp::Max}) {
      for (std::size_t bytes : kSizes) {
        for (const bool in_place : {false, true}) {
          expect_reduce_with_checksum(dtype, op, bytes / size_of(dtype), in_place, false);
          expect_reduce_with_checksum(dtype, op, bytes / size_of(dtype), in_place, true);
        }
      }
    }
  }
}

// The checksum in segments (what a device's threads share) puts each stream together exactly as
// the one loop takes it, however many segments, more than the stream has words included.
TEST(Checksum, SegmentsPutTogetherGiveEveryStream) {
  for (std::size_t size : {0, 1, 7, 8, 9, 24, 31, 32, 33, 63, 100, 320, 1000, 4096, 65536 + 13}) {
    const std::vector<std::byte> data = bytes_of(size, size + 5);
    for (int segments : {1, 2, 3, 5, 16, 64, 256}) {
      std::uint64_t streams[4];
      for (int stream = 0; stream < 4; ++stream) {
        std::vector<std::uint32_t> parts(static_cast<std::size_t>(segments));
        for (int segment = 0; segment < segments; ++segment)
          parts[static_cast<std::size_t>(segment)] = checksum_segment(data.data(), size, stream, segment, segments);
        streams[stream] = combine_segments(parts.data(), segments, size, stream);
        ASSERT_EQ(streams[stream], checksum_stream(data.data(), size, stream))
            << size << " bytes, stream " << stream << ", " << segments << " segments";
      }
      EXPECT_EQ(fold_checksum(size, streams), checksum(data)) << size << " bytes";
    }
  }
}

// Catches a checksum that skips bytes (the tail, a stream) or ignores the length.
TEST(Checksum, EveryFlippedBitAndEveryLengthChangesIt) {
  const std::vector<std::byte> data = bytes_of(1000, 3);
  const std::uint64_t sum = checksum(data);
  for (std::size_t bit = 0; bit < data.size() * 8; ++bit) {
    std::vector<std::byte> flipped = data;
    flipped[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
    ASSERT_NE(checksum(flipped), sum) << "bit " << bit;
  }
  for (std::uint64_t pair = 0; pair < 2000; ++pair) {
    std::vector<std::byte> flipped = data;
    const std::uint64_t a = below(mix64(pair), 8000), b = below(mix64(pair ^ 77), 8000);
    if (a == b) continue;
    flipped[a / 8] ^= static_cast<std::byte>(1u << (a % 8));
    flipped[b / 8] ^= static_cast<std::byte>(1u << (b % 8));
    ASSERT_NE(checksum(flipped), sum) << "bits " << a << " and " << b;
  }
  const std::vector<std::byte> zeros(16), longer(17);
  EXPECT_NE(checksum(zeros), checksum(longer));
  EXPECT_NE(checksum(std::span(zeros).first(8)), checksum(zeros));
}

}  // namespace
}  // namespace collcheck
