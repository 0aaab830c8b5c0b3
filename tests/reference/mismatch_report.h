// Test helper for loops over many inputs: formats doubles and bits, and collects the first few
// mismatches with a count, rather than one gtest failure per input.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace collcheck::testing {

inline std::string describe(double x) {
  char text[80];
  std::snprintf(text, sizeof text, "%.17g (%a)", x, x);
  return text;
}

inline std::string hex(std::uint64_t bits) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(bits));
  return text;
}

class Mismatches {
 public:
  void add(const std::string& what) {
    if (count_++ < kShown) shown_ += "  " + what + "\n";
  }
  std::size_t count() const { return count_; }
  std::string report() const { return std::to_string(count_) + " mismatches, the first:\n" + shown_; }

 private:
  static constexpr std::size_t kShown = 12;
  std::size_t count_ = 0;
  std::string shown_;
};

}  // namespace collcheck::testing
