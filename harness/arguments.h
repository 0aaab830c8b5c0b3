// Command-line options of the form `--flag value` and `--switch`, checked against the flags a
// command knows, and the number grammars they use (`1..1024`, `0,1,7`, `64K`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "reference/result.h"

namespace collcheck::cli {

class Arguments {
 public:
  // `flags` take a value (`--ranks 8`, also `--ranks=8`), `switches` do not (`--verbose`).
  // Errors name the flag and list the ones the command knows.
  static Result<Arguments> parse(std::span<const std::string_view> args, std::span<const std::string_view> flags,
                                 std::span<const std::string_view> switches);

  bool has(std::string_view flag) const { return values_.contains(std::string(flag)); }
  // Every value given for a repeatable flag, in order; empty when absent.
  std::vector<std::string> all(std::string_view flag) const;
  // The last value given, or `fallback`.
  std::string get(std::string_view flag, std::string_view fallback = "") const;

 private:
  std::map<std::string, std::vector<std::string>> values_;
};

// An integer with an optional K/M/G suffix (powers of 1024) within [low, high].
Result<std::uint64_t> parse_count(std::string_view field, std::string_view text, std::uint64_t low, std::uint64_t high);

// A set of integers: comma-separated items, each `N` or `A..B` (inclusive), within [low, high],
// returned sorted without repeats: `1..4,8,16` -> {1, 2, 3, 4, 8, 16}.
Result<std::vector<std::uint64_t>> parse_set(std::string_view field, std::string_view text, std::uint64_t low,
                                             std::uint64_t high);

}  // namespace collcheck::cli
