// The message checksum of hook.h written once for host and device: CRC-32C over four streams of
// 8-byte words, each stream a loop one thread can run, and the fold of the four with the length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "impls/link/host_device.h"
#include "reference/random.h"

namespace collcheck {

// The checksum works as follows. The bytes are taken in groups of 32: word k of every group (its
// 8 bytes in memory order) goes to stream k. Past the last whole group, the remaining whole words
// go to stream 0 and the last partial word, zero-padded, to stream 1. Stream k starts from k + 1
// and takes each word by CRC-32C (Castagnoli, reflected polynomial 0x82f63b78, as the crc32
// instruction computes it); the length and the four streams are then folded by mix64.

// One word into a stream, bit by bit (no table that a device would have to hold).
COLLCHECK_HOST_DEVICE inline std::uint64_t crc32c_word(std::uint64_t crc, std::uint64_t word) {
  auto c = static_cast<std::uint32_t>(crc);
  for (int byte = 0; byte < 8; ++byte) {
    c ^= static_cast<std::uint32_t>(word >> (8 * byte)) & 0xffu;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) != 0 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
  }
  return c;
}

// Stream `stream` (0..3) of the checksum of `bytes` bytes at `data`.
COLLCHECK_HOST_DEVICE inline std::uint64_t checksum_stream(const std::byte* data, std::size_t bytes, int stream) {
  std::uint64_t crc = static_cast<std::uint64_t>(stream) + 1;
  const std::size_t groups = bytes / 32;
  for (std::size_t group = 0; group < groups; ++group) {
    std::uint64_t word;
    std::memcpy(&word, data + group * 32 + static_cast<std::size_t>(stream) * 8, 8);
    crc = crc32c_word(crc, word);
  }
  std::size_t at = groups * 32;
  const std::size_t words_end = at + (bytes - at) / 8 * 8;
  if (stream == 0) {
    for (; at < words_end; at += 8) {
      std::uint64_t word;
      std::memcpy(&word, data + at, 8);
      crc = crc32c_word(crc, word);
    }
  } else if (stream == 1 && words_end < bytes) {
    std::uint64_t tail = 0;
    std::memcpy(&tail, data + words_end, bytes - words_end);
    crc = crc32c_word(crc, tail);
  }
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

// How many words stream `stream` of a message of `bytes` bytes takes, and its word `index`.
COLLCHECK_HOST_DEVICE inline std::uint64_t stream_words(std::size_t bytes, int stream) {
  const std::uint64_t groups = bytes / 32;
  if (stream == 0) return groups + (bytes % 32) / 8;
  if (stream == 1) return groups + (bytes % 8 != 0 ? 1 : 0);
  return groups;
}
COLLCHECK_HOST_DEVICE inline std::uint64_t stream_word(const std::byte* data, std::size_t bytes, int stream,
                                                       std::uint64_t index) {
  const std::uint64_t groups = bytes / 32;
  std::uint64_t word = 0;
  if (index < groups) {
    std::memcpy(&word, data + index * 32 + static_cast<std::size_t>(stream) * 8, 8);
  } else if (stream == 0) {
    std::memcpy(&word, data + groups * 32 + (index - groups) * 8, 8);
  } else {  // stream 1's last word: the partial one, zero-padded
    const std::size_t whole = bytes / 8 * 8;
    std::memcpy(&word, data + whole, bytes - whole);
  }
  return word;
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
  std::uint32_t value = crc32c_multiply(static_cast<std::uint32_t>(stream) + 1, crc32c_after_zeros(8 * words));
  std::uint32_t joined = 0;
  for (int segment = 0; segment < segments; ++segment) {
    const std::uint64_t length = segment_start(words, segment + 1, segments) - segment_start(words, segment, segments);
    joined = crc32c_multiply(joined, length == shorter ? after_shorter : after_longer) ^ parts[segment];
  }
  value ^= joined;
  return value;
}

}  // namespace collcheck
