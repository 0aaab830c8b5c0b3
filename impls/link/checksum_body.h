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

}  // namespace collcheck
