// libFuzzer target for the command line's grammar (harness/arguments.h): options checked against a
// table like `collcheck check`'s, and the number grammars (`64K`, `1..4,8`) with the bounds the
// commands use. Each line of the input is one argument. Values come back in their range, sets
// sorted without repeats, and errors say what is wrong.
#include <algorithm>
#include <string>
#include <vector>

#include "harness/arguments.h"
#include "reference/key_values.h"
#include "tests/fuzz/fuzz_checks.h"

using namespace collcheck;
using namespace collcheck::cli;

namespace {

constexpr Option kOptions[] = {
    {"backend", "SPEC", "", "backends", Use::Required},
    {"ranks", "SET", "2..8", "ranks"},
    {"count", "RANGE", "0..64K", "counts"},
    {"faults", "PLAN", "", "faults", Use::Repeatable, "-f"},
    {"verbose", "", "", "more output", Use::Once, "-v --chatty"},
};

void check_numbers(std::string_view text) {
  for (const auto& [low, high] : {std::pair<std::uint64_t, std::uint64_t>{1, 4096}, {0, 1ull << 28}}) {
    const Result<std::uint64_t> count = parse_count("--count", text, low, high);
    if (count) fuzz::require(*count >= low && *count <= high, "parse_count stays in its range", text);
    else fuzz::require_message(count.error(), "parse_count");
    const Result<std::vector<std::uint64_t>> set = parse_set("--ranks", text, low, high);
    if (!set) {
      fuzz::require_message(set.error(), "parse_set");
      continue;
    }
    fuzz::require(
        std::is_sorted(set->begin(), set->end()) && std::adjacent_find(set->begin(), set->end()) == set->end(),
        "parse_set is sorted without repeats", text);
    fuzz::require(set->empty() || (set->front() >= low && set->back() <= high), "parse_set stays in its range", text);
  }
}

// The last value of an option given, its table's default otherwise.
void check_values(const Arguments& parsed) {
  for (const Option& option : kOptions) {
    const std::vector<std::string> given = parsed.all(option.name);
    fuzz::require(parsed.has(option.name) == !given.empty(), "has() agrees with all()", option.name);
    const std::string expected = given.empty() ? std::string(option.fallback) : given.back();
    fuzz::require(parsed.get(option.name) == expected, "get() is the last value, else the default", option.name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  const std::vector<std::string_view> args = split_list(text, '\n');
  const Result<Arguments> parsed = Arguments::parse(args, kOptions);
  if (!parsed) fuzz::require_message(parsed.error(), "Arguments::parse");
  else check_values(*parsed);
  for (std::string_view arg : args) check_numbers(arg);
  return 0;
}
