// The message checksum of hook.h written once for host and device: CRC-32C over four streams of
// 8-byte words, each stream a loop one thread can run, and the fold of the four with the length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "impls/link/host_device.h"
#include "reference/random.h"

namespace collcheck {

// The checksum works as follows. The message's whole 64-byte blocks are cut into four quarters of
// consecutive blocks (quarter k: blocks [B*k/4, B*(k+1)/4) of the B), and stream k takes the
// 8-byte words of quarter k in order (each word's 8 bytes in memory order); stream 3 then also
// takes what follows the last whole block: its whole words, and the last partial word,
// zero-padded. Each stream is thus one run of the message's bytes. Stream k starts from k + 1
// and takes each word by CRC-32C (Castagnoli, reflected polynomial 0x82f63b78, as the crc32
// instruction computes it); the length and the four streams are then folded by mix64. (Four
// streams of consecutive bytes let a CPU fold each by carry-less multiplication, 64 bytes at a
// time, checksum.cc, and a device cut each into segments, below.)

// One word into a stream, bit by bit (no table that a device would have to hold).
COLLCHECK_HOST_DEVICE inline std::uint64_t crc32c_word(std::uint64_t crc, std::uint64_t word) {
  auto c = static_cast<std::uint32_t>(crc);
  for (int byte = 0; byte < 8; ++byte) {
    c ^= static_cast<std::uint32_t>(word >> (8 * byte)) & 0xffu;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) != 0 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  }
  return c;
}

// The value stream `stream` (0..3) starts from.
COLLCHECK_HOST_DEVICE inline std::uint64_t stream_start(int stream) { return static_cast<std::uint64_t>(stream) + 1; }

// The first word of stream `stream` (0..3), counted in words from the message's start, and how
// many words it takes (the last partial word, zero-padded, counted in stream 3).
COLLCHECK_HOST_DEVICE inline std::uint64_t stream_first_word(std::size_t bytes, int stream) {
  const std::uint64_t blocks = bytes / 64;
  return 8 * (blocks * static_cast<std::uint64_t>(stream) / 4);
}
COLLCHECK_HOST_DEVICE inline std::uint64_t stream_words(std::size_t bytes, int stream) {
  const std::uint64_t end = stream == 3 ? (bytes + 7) / 8 : stream_first_word(bytes, stream + 1);
  return end - stream_first_word(bytes, stream);
}
// Word `index` of stream `stream`.
COLLCHECK_HOST_DEVICE inline std::uint64_t stream_word(const std::byte* data, std::size_t bytes, int stream,
                                                       std::uint64_t index) {
  const std::size_t at = 8 * (stream_first_word(bytes, stream) + index);
  std::uint64_t word = 0;
  std::memcpy(&word, data + at, at + 8 <= bytes ? 8 : bytes - at);
  return word;
}

// Stream `stream` (0..3) of the checksum of `bytes` bytes at `data`.
COLLCHECK_HOST_DEVICE inline std::uint64_t checksum_stream(const std::byte* data, std::size_t bytes, int stream) {
  std::uint64_t crc = stream_start(stream);
  const std::uint64_t words = stream_words(bytes, stream);
  for (std::uint64_t index = 0; index < words; ++index) crc = crc32c_word(crc, stream_word(data, bytes, stream, index));
  return crc;
}

// The checksum of `bytes` bytes from its four streams.
COLLCHECK_HOST_DEVICE inline std::uint64_t fold_checksum(std::size_t bytes, const std::uint64_t streams[4]) {
  std::uint64_t folded = mix64(bytes);
  for (int stream = 0; stream < 4; ++stream) folded = mix64(streams[stream] ^ mix64(folded));
  return folded;
}

// The checksum in segments works as follows, so that many device threads share it. CRC-32C
// without a final inversion is linear: from a start value c, a message M leaves
// crc(c, M) = crc(0, M) ^ shifted(c, |M|), where shifted(c, k) is c after k zero bytes, that is
// c times x^(8k) modulo the polynomial; and crc(0, A B) = shifted(crc(0, A), |B|) ^ crc(0, B).
// So each stream's words (checksum_stream's, in its order) are cut into `segments` runs of equal
// length (give or take a word), each taken from 0 by a thread of its own (checksum_segment), and
// the stream's value is put together from them in order (combine_segments), the same value as
// checksum_stream's.

// a times b modulo CRC-32C's polynomial, bit-reflected (bit 31 is x^0).
COLLCHECK_HOST_DEVICE inline std::uint32_t crc32c_multiply(std::uint32_t a, std::uint32_t b) {
  std::uint32_t product = 0;
  for (int bit = 31; bit >= 0; --bit) {
    if ((a >> bit) & 1u) product ^= b;
    b = (b & 1u) != 0 ? (b >> 1) ^ 0x82f63b78u : b >> 1;
  }
  return product;
}

// x^(8 * bytes) modulo the polynomial: what a value is multiplied by to stand `bytes` zero bytes later.
COLLCHECK_HOST_DEVICE inline std::uint32_t crc32c_after_zeros(std::uint64_t bytes) {
  std::uint32_t power = 0x80000000u;   // x^0
  std::uint32_t square = 0x00800000u;  // x^8
  for (; bytes != 0; bytes >>= 1) {
    if ((bytes & 1u) != 0) power = crc32c_multiply(power, square);
    square = crc32c_multiply(square, square);
  }
  return power;
}

// Words [first, end) of segment `segment` of `segments` of a stream of `words` words.
COLLCHECK_HOST_DEVICE inline std::uint64_t segment_start(std::uint64_t words, int segment, int segments) {
  return words * static_cast<std::uint64_t>(segment) / static_cast<std::uint64_t>(segments);
}

// crc(0, segment `segment` of stream `stream`'s words).
COLLCHECK_HOST_DEVICE inline std::uint32_t checksum_segment(const std::byte* data, std::size_t bytes, int stream,
                                                            int segment, int segments) {
  const std::uint64_t words = stream_words(bytes, stream);
  std::uint64_t crc = 0;
  const std::uint64_t end = segment_start(words, segment + 1, segments);
  for (std::uint64_t index = segment_start(words, segment, segments); index < end; ++index) {
    crc = crc32c_word(crc, stream_word(data, bytes, stream, index));
  }
  return static_cast<std::uint32_t>(crc);
}

// Stream `stream`'s value (checksum_stream's) from its segments' crc(0, ...), `parts` in order.
COLLCHECK_HOST_DEVICE inline std::uint64_t combine_segments(const std::uint32_t* parts, int segments, std::size_t bytes,
                                                            int stream) {
  const std::uint64_t words = stream_words(bytes, stream);
  // Segments are `shorter` or `shorter` + 1 words long: two multipliers serve every step.
  const std::uint64_t shorter = words / static_cast<std::uint64_t>(segments);
  const std::uint32_t after_shorter = crc32c_after_zeros(8 * shorter);
  const std::uint32_t after_longer = crc32c_after_zeros(8 * (shorter + 1));
  std::uint32_t value =
      crc32c_multiply(static_cast<std::uint32_t>(stream_start(stream)), crc32c_after_zeros(8 * words));
  std::uint32_t joined = 0;
  for (int segment = 0; segment < segments; ++segment) {
    const std::uint64_t length = segment_start(words, segment + 1, segments) - segment_start(words, segment, segments);
    joined = crc32c_multiply(joined, length == shorter ? after_shorter : after_longer) ^ parts[segment];
  }
  value ^= joined;
  return value;
}

}  // namespace collcheck
