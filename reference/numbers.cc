// The number grammar (integers with K/M/G, decimals, durations with units, probabilities), each
// checked against its range, with bad input quoted; and saturating clock conversions.
#include "reference/numbers.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

namespace collcheck {
namespace {

constexpr std::size_t kShownCharacters = 60;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Where the digits starting at `at` end.
std::size_t skip_digits(std::string_view text, std::size_t at) {
  while (at < text.size() && is_digit(text[at])) ++at;
  return at;
}

}  // namespace

bool is_decimal(std::string_view text) {
  const std::size_t whole = skip_digits(text, 0);
  std::size_t at = whole;
  std::size_t fraction = 0;
  if (at < text.size() && text[at] == '.') {
    const std::size_t end = skip_digits(text, at + 1);
    fraction = end - at - 1;
    at = end;
  }
  if (whole == 0 && fraction == 0) return false;
  if (at < text.size() && (text[at] == 'e' || text[at] == 'E')) {
    ++at;
    if (at < text.size() && text[at] == '-') ++at;
    const std::size_t end = skip_digits(text, at);
    if (end == at) return false;
    at = end;
  }
  return at == text.size();
}

namespace {

// `86400` seconds as `24h`, `90` as `90 s`.
std::string seconds_text(double seconds) {
  if (seconds >= 3600 && std::fmod(seconds, 3600) == 0) return number_text(seconds / 3600) + "h";
  return number_text(seconds) + " s";
}

// `text` escaped between `quote`s, cut once the escaped text passes kShownCharacters, then a
// note of how long the text was.
std::string shown(std::string_view text, std::string_view quote) {
  constexpr std::string_view kHex = "0123456789abcdef";
  std::string body;
  std::size_t used = 0;
  for (; used < text.size() && body.size() < kShownCharacters; ++used) {
    const char c = text[used];
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\'' || c == '\\') {
      body += '\\';
      body += c;
    } else if (c == '\n') {
      body += "\\n";
    } else if (c == '\t') {
      body += "\\t";
    } else if (c == '\r') {
      body += "\\r";
    } else if (byte < 0x20 || byte > 0x7e) {
      body += "\\x";
      body += kHex[byte >> 4];
      body += kHex[byte & 0xf];
    } else {
      body += c;
    }
  }
  std::string out = std::string(quote) + body + std::string(quote);
  if (used < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

Error error(std::string_view field, std::string_view text, const std::string& allowed) {
  return Error{std::string(field), quoted_input(text) + ": must be " + allowed};
}

}  // namespace

std::string quoted_input(std::string_view text) { return shown(text, "'"); }

std::string escaped_input(std::string_view text) { return shown(text, ""); }

std::string list_text(std::span<const std::uint64_t> increasing) {
  std::string text;
  for (std::size_t first = 0; first < increasing.size();) {
    std::size_t last = first;
    while (last + 1 < increasing.size() && increasing[last + 1] == increasing[last] + 1) ++last;
    if (!text.empty()) text += ",";
    text += std::to_string(increasing[first]);
    if (last > first) text += (last == first + 1 ? "," : "..") + std::to_string(increasing[last]);
    first = last + 1;
  }
  return text;
}

std::string ranks_text(std::span<const std::uint64_t> increasing) {
  return (increasing.size() > 1 ? "ranks " : "rank ") + list_text(increasing);
}

std::string range_text(std::uint64_t low, std::uint64_t high, std::string_view unit) {
  return std::to_string(low) + ".." + std::to_string(high) + (unit.empty() ? "" : " (" + std::string(unit) + ")");
}

std::string printf_text(const char* pattern, double value) {
  std::array<char, 64> text{};
  std::snprintf(text.data(), text.size(), pattern, value);
  return text.data();
}

std::string number_text(double value) {
  std::array<char, 64> text{};
  const auto [end, status] = std::to_chars(text.data(), text.data() + text.size(), value);
  if (status != std::errc{}) return "nan";
  std::string out(text.data(), end);
  if (const std::size_t plus = out.find("e+"); plus != std::string::npos) out.erase(plus + 1, 1);
  return out;
}

Result<std::uint64_t> parse_integer(std::string_view field, std::string_view text, const CountRange& range) {
  const std::size_t digits = skip_digits(text, 0);
  const std::string_view suffix = text.substr(digits);
  const int shift = suffix.empty()                   ? 0
                    : !range.suffixes                ? -1
                    : suffix == "K" || suffix == "k" ? 10
                    : suffix == "M"                  ? 20
                    : suffix == "G"                  ? 30
                                                     : -1;
  const std::string allowed = range_text(range.low, range.high, range.unit);
  if (digits == 0 || shift < 0) {
    return error(field, text, "an integer in " + allowed + (range.suffixes ? " (K, M, G suffixes allowed)" : ""));
  }
  std::uint64_t value = 0;
  const auto [end, status] = std::from_chars(text.data(), text.data() + digits, value);
  if (status != std::errc{} || value > (UINT64_MAX >> shift)) return error(field, text, allowed);
  value <<= shift;
  if (value < range.low || value > range.high) {
    return Error{std::string(field), std::to_string(value) + ": must be " + allowed};
  }
  return value;
}

Result<double> parse_decimal(std::string_view field, std::string_view text, double low, double high,
                             std::string_view allowed) {
  const std::string what =
      allowed.empty() ? "a number in " + number_text(low) + ".." + number_text(high) : std::string(allowed);
  double value = 0;
  if (!is_decimal(text)) return error(field, text, what);
  const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (status != std::errc{} || !(value >= low && value <= high)) return error(field, text, what);
  return value;
}

Result<double> parse_duration(std::string_view field, std::string_view text, const DurationRange& range) {
  const std::string limit = std::string(range.low_open ? "more than " : "at least ") + seconds_text(range.low) +
                            " and at most " + seconds_text(range.high);
  const std::string what = "a duration " + limit + ": a number with an optional unit ms, s, m or h (500ms, 30s, 2m; " +
                           "90 is seconds)" + (range.forever_allowed ? ", or infinity or none for no limit" : "");
  if (range.forever_allowed && (text == "infinity" || text == "none")) return INFINITY;
  struct Unit {
    std::string_view name;
    double seconds;
  };
  constexpr std::array<Unit, 4> kUnits{{{"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}}};
  std::string_view number = text;
  double scale = 1;
  for (const Unit& unit : kUnits) {
    if (text.ends_with(unit.name) && is_decimal(text.substr(0, text.size() - unit.name.size()))) {
      number = text.substr(0, text.size() - unit.name.size());
      scale = unit.seconds;
      break;
    }
  }
  double value = 0;
  const auto [end, status] = is_decimal(number) ? std::from_chars(number.data(), number.data() + number.size(), value)
                                                : std::from_chars_result{number.data(), std::errc::invalid_argument};
  if (status == std::errc::invalid_argument) return error(field, text, what);
  const double seconds = value * scale;
  const bool above_low = range.low_open ? seconds > range.low : seconds >= range.low;
  if (status != std::errc{} || !above_low || !(seconds <= range.high)) return error(field, text, limit);
  return seconds;
}

Result<double> parse_probability(std::string_view field, std::string_view text) {
  return parse_decimal(field, text, 0, 1, "a probability in 0..1");
}

std::chrono::steady_clock::duration clock_duration(double seconds) {
  using Duration = std::chrono::steady_clock::duration;
  if (!(seconds > 0)) return Duration::zero();
  const double most = std::chrono::duration<double>(Duration::max()).count();
  if (seconds >= most) return Duration::max();
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

std::chrono::steady_clock::time_point clock_after(std::chrono::steady_clock::time_point now, double seconds) {
  const std::chrono::steady_clock::duration wait = clock_duration(seconds);
  if (now.time_since_epoch() > std::chrono::steady_clock::duration::max() - wait) {
    return std::chrono::steady_clock::time_point::max();
  }
  return now + wait;
}

}  // namespace collcheck
