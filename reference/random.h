// The one pseudo-random function inputs are made from: splitmix64's finalizer, whose output
// is fixed across compilers and standard libraries (unlike std::*_distribution).
#pragma once

#include <cstdint>
#include <string_view>

namespace collcheck {

constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// 64 bits that stand for a text (a backend's name in a seed, a verdict to compare): mix64 over
// its bytes.
constexpr std::uint64_t hash_text(std::string_view text) {
  std::uint64_t hash = 0;
  for (char ch : text) hash = mix64(hash ^ static_cast<unsigned char>(ch));
  return hash;
}

// A uniformly distributed integer in [0, n) from 64 random bits (Lemire's multiply-shift).
constexpr std::uint64_t below(std::uint64_t random, std::uint64_t n) {
  __extension__ using Wide = unsigned __int128;
  return static_cast<std::uint64_t>((static_cast<Wide>(random) * n) >> 64);
}

// A double uniformly distributed in [0, 1) from the top 53 bits.
constexpr double unit_interval(std::uint64_t random) { return static_cast<double>(random >> 11) * 0x1.0p-53; }

}  // namespace collcheck
