// The one number grammar of every parser (counts, sizes, durations, probabilities, knobs), the
// quoting of bad input in error messages, and duration conversions that cannot overflow.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "reference/result.h"

namespace collcheck {

// Bad input as an error message shows it: in single quotes, bytes outside printable ASCII (and
// the quote and backslash) escaped as \n, \t, \xHH, and cut once it shows 60 characters, with
// how long it was: 'abc\x01', 'aaaa'... (100000 bytes).
std::string quoted_input(std::string_view text);
// The same without the quotes, for input inside a form of its own (`KEY=VALUE: must be ...`).
std::string escaped_input(std::string_view text);

// The grammar. No sign, no spaces, no hex, no `nan` or `inf` anywhere; an error's field is
// `field` and its message `'TEXT': must be ...`, saying what is allowed.
//   integer:  decimal digits, `0..18446744073709551615`.
//   count:    an integer with an optional K, M or G suffix (k too: powers of 1024): `64K`.
//   decimal:  digits with an optional fraction and exponent: `2`, `2.5`, `.5`, `1e-3`, `1.5e2`.
//   duration: a decimal with an optional unit ms, s, m or h (none: seconds): `500ms`, `8s`, `1.5m`.
//             With `forever_allowed`, `infinity` and `none` mean no limit (+infinity).
//   probability: a decimal in 0..1.
// Whether `text` is a decimal of the grammar above (digits, fraction, exponent; nothing else).
bool is_decimal(std::string_view text);

struct CountRange {
  std::uint64_t low = 0;
  std::uint64_t high = UINT64_MAX;
  bool suffixes = false;  // whether K, M and G are allowed
  std::string_view unit;  // added to the message in parentheses: "0..4096 (bytes)"
};
Result<std::uint64_t> parse_integer(std::string_view field, std::string_view text, const CountRange& range);

// A decimal within [low, high] (the bounds finite); `allowed` is what the message calls it
// (`seconds, 0.001..86400`); empty: `a number in LOW..HIGH`.
Result<double> parse_decimal(std::string_view field, std::string_view text, double low, double high,
                             std::string_view allowed = {});

struct DurationRange {
  double low = 0;                // seconds; with low_open, the value must be above it
  bool low_open = false;         // `0` refused: the value must be more than low
  double high = 86400;           // seconds
  bool forever_allowed = false;  // `infinity` and `none` give +infinity
};
Result<double> parse_duration(std::string_view field, std::string_view text, const DurationRange& range);
// Every deadline and timeout of a run: more than 0 s, at most 24h, or infinity/none for none.
inline constexpr DurationRange kDeadlineRange{0, true, 86400, true};

Result<double> parse_probability(std::string_view field, std::string_view text);

// `low..high` as messages print it, with " (UNIT)" when a unit is given.
std::string range_text(std::uint64_t low, std::uint64_t high, std::string_view unit = {});
// Increasing numbers as a LIST of the command line reads them back, runs joined: 0..3,5,7..9.
std::string list_text(std::span<const std::uint64_t> increasing);
// Ranks in increasing order as a report names them: `rank 3`, `ranks 0..2,5`.
std::string ranks_text(std::span<const std::uint64_t> increasing);
// A double, shortest, as the grammar reads it back (no '+' in the exponent): 0.5, 1e10, 86400.
std::string number_text(double value);
// A double as a table or a report line prints it: through printf's `pattern`, one conversion of a
// double and whatever text around it (`%.2f`, `%5.2f`, `%g s`), at most 63 characters.
std::string printf_text(const char* pattern, double value);

// `seconds` as a clock duration, saturated: NaN and negatives are zero, anything beyond what
// the clock can hold (+infinity included) is its largest duration.
std::chrono::steady_clock::duration clock_duration(double seconds);
// `now + seconds`, saturated at the clock's largest time point.
std::chrono::steady_clock::time_point clock_after(std::chrono::steady_clock::time_point now, double seconds);

}  // namespace collcheck
