// The message checksum: the crc32 instruction and checksum_body.h's loop (what a device runs) give
// the same value (processes on different CPUs and devices must agree), and flipped bits and other
// lengths change it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "impls/link/checksum_body.h"
#include "impls/link/hook.h"
#include "reference/random.h"

namespace collcheck {
namespace {

std::vector<std::byte> bytes_of(std::size_t size, std::uint64_t seed) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>(mix64(seed ^ mix64(i)));
  return bytes;
}

TEST(Checksum, HardwareAndThePortableLoopAgree) {
  for (std::size_t size : {0, 1, 7, 8, 9, 31, 32, 33, 64, 100, 4096, 131072, 131075}) {
    const std::vector<std::byte> data = bytes_of(size, size);
    EXPECT_EQ(checksum(data), checksum_without_hardware(data)) << size;
  }
}

// The sender's one-pass copy gives checksum()'s value and a faithful copy, at every length.
TEST(Checksum, CopyWithChecksumCopiesAndAgrees) {
  for (std::size_t size : {0, 1, 7, 8, 9, 31, 32, 33, 64, 100, 4096, 131072, 131075}) {
    const std::vector<std::byte> data = bytes_of(size, size + 1);
    // Around the cache too (non-temporal stores where the destination is 16-byte aligned, at
    // offset 0 of an aligned block; the cached copy at offset 8): the same bytes, the same value.
    for (const auto& [around_cache, at] : {std::pair{false, 0}, std::pair{true, 0}, std::pair{true, 8}}) {
      std::vector<std::byte> copy(size + 64, std::byte{0x5a});
      auto* base = reinterpret_cast<std::byte*>((reinterpret_cast<std::uintptr_t>(copy.data()) + 15) / 16 * 16);
      std::byte* to = base + at;
      EXPECT_EQ(copy_with_checksum(to, data, around_cache), checksum(data)) << size;
      EXPECT_TRUE(std::equal(data.begin(), data.end(), to)) << size << (around_cache ? " around the cache" : "");
      EXPECT_EQ(to[size], std::byte{0x5a}) << size;  // nothing written past the end
    }
  }
}

// The checksum in segments (what a device's threads share) puts each stream together exactly as
// the one loop takes it, however many segments, more than the stream has words included.
TEST(Checksum, SegmentsPutTogetherGiveEveryStream) {
  for (std::size_t size : {0, 1, 7, 8, 9, 24, 31, 32, 33, 63, 100, 1000, 4096, 65536 + 13}) {
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
      EXPECT_EQ(fold_checksum(size, streams), checksum_without_hardware(data)) << size << " bytes";
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
