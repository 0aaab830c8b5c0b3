// Judging one rank's output against the oracle: a fast bitwise path, and element by element
// with bounds and accepted outcomes; mismatches formatted for a person.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "reference/float_format.h"
#include "reference/oracle.h"

namespace collcheck {
namespace {

bool is_nan(DType dtype, std::uint64_t bits) { return is_float(dtype) && std::isnan(decode(dtype, bits)); }

double difference_in_ulps(DType dtype, double expected, double got) {
  if (!is_float(dtype)) return std::fabs(got - expected);
  if (std::isnan(expected) || std::isnan(got)) return std::numeric_limits<double>::infinity();
  if (expected == got) return 0;
  return std::fabs(got - expected) / ulp(dtype, expected);
}

// Whether an element outside its bound is still one of the outcomes the oracle accepts.
bool accepted(DType dtype, std::uint8_t accept, double alternative, double got) {
  if (accept & AcceptAnything) return true;
  if ((accept & AcceptNaN) && std::isnan(got)) return true;
  if ((accept & AcceptAlternative) && got == alternative) return true;
  const double largest = float_format(dtype).max_finite();
  if ((accept & AcceptPositiveOverflow) && got >= largest) return true;
  if ((accept & AcceptNegativeOverflow) && got <= -largest) return true;
  return false;
}

struct Recorder {
  Verdict& verdict;
  DType dtype;
  int rank;
  std::size_t max_reported;

  void record(std::size_t element, std::uint64_t expected_bits, std::uint64_t got_bits, double bound) {
    ++verdict.mismatched;
    verdict.ok = false;
    if (verdict.first.size() >= max_reported) return;
    Mismatch m;
    m.rank = rank;
    m.element = element;
    m.expected_bits = expected_bits;
    m.got_bits = got_bits;
    m.expected = decode(dtype, expected_bits);
    m.got = decode(dtype, got_bits);
    m.ulps = difference_in_ulps(dtype, m.expected, m.got);
    m.bound = bound;
    verdict.first.push_back(m);
  }
};

void compare_bitwise(const Expected& expected, std::span<const std::byte> got, Recorder& recorder) {
  if (got.empty() || std::memcmp(expected.data.data(), got.data(), got.size()) == 0) return;
  for (std::size_t i = 0; i < expected.count; ++i) {
    const std::uint64_t want = expected.bits(i);
    const std::uint64_t have = load_bits(expected.dtype, got, i);
    if (want == have || (is_nan(expected.dtype, want) && is_nan(expected.dtype, have))) continue;
    recorder.record(i, want, have, 0);
  }
}

void compare_bounded_elements(const Expected& expected, std::span<const std::byte> got, std::size_t first,
                              std::size_t last, Recorder& recorder) {
  Verdict& verdict = recorder.verdict;
  for (std::size_t i = first; i < last; ++i) {
    const std::uint64_t want_bits = expected.bits(i);
    const std::uint64_t have_bits = load_bits(expected.dtype, got, i);
    if (want_bits == have_bits) continue;
    const double want = decode(expected.dtype, want_bits);
    const double have = decode(expected.dtype, have_bits);
    const double difference = std::fabs(have - want);
    const bool same = want == have || (std::isnan(want) && std::isnan(have));
    const bool within = std::isfinite(difference) && difference <= expected.bound[i];
    if (same || within) {
      if (std::isfinite(difference)) {
        verdict.worst_ulps = std::max(verdict.worst_ulps, difference_in_ulps(expected.dtype, want, have));
      }
      continue;
    }
    const double alternative = expected.alternative.empty() ? 0 : expected.alternative[i];
    const std::uint8_t accept = expected.accept.empty() ? 0 : expected.accept[i];
    if (accepted(expected.dtype, accept, alternative, have)) continue;
    recorder.record(i, want_bits, have_bits, expected.bound[i]);
  }
}

// Most outputs of a correct backend match the expected bits over long runs: blocks that
// match byte for byte pass at memcmp speed, the others are judged element by element.
void compare_bounded(const Expected& expected, std::span<const std::byte> got, Recorder& recorder) {
  constexpr std::size_t kBlock = 1024;
  const std::size_t size = size_of(expected.dtype);
  for (std::size_t first = 0; first < expected.count; first += kBlock) {
    const std::size_t last = std::min(expected.count, first + kBlock);
    if (std::memcmp(expected.data.data() + first * size, got.data() + first * size, (last - first) * size) == 0) {
      continue;
    }
    compare_bounded_elements(expected, got, first, last, recorder);
  }
  recorder.verdict.unchecked = expected.unchecked;
}

std::string describe_number(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

}  // namespace

std::string format_element(DType dtype, std::uint64_t bits) {
  const double value = decode(dtype, bits);
  if (!is_float(dtype)) {
    char text[32];
    if (is_signed(dtype)) std::snprintf(text, sizeof text, "%" PRId64, static_cast<std::int64_t>(value));
    else std::snprintf(text, sizeof text, "%" PRIu64, bits);
    return text;
  }
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%0*" PRIx64, static_cast<int>(size_of(dtype) * 2), bits);
  return describe_number(value) + " (" + hex + ")";
}

Verdict compare(const Expected& expected, int rank, std::span<const std::byte> got, std::size_t max_reported) {
  Verdict verdict;
  const std::size_t want_bytes = expected.count * size_of(expected.dtype);
  if (got.size() != want_bytes) {
    verdict.ok = false;
    verdict.error = "rank " + std::to_string(rank) + ": output has " + std::to_string(got.size()) +
                    " bytes, expected " + std::to_string(want_bytes) + " (" + std::to_string(expected.count) + " " +
                    std::string(name(expected.dtype)) + ")";
    return verdict;
  }
  verdict.checked = expected.count;
  Recorder recorder{verdict, expected.dtype, rank, max_reported};
  if (expected.bitwise()) compare_bitwise(expected, got, recorder);
  else compare_bounded(expected, got, recorder);
  verdict.checked -= verdict.unchecked;
  return verdict;
}

Verdict compare(const Case& c, int rank, std::span<const std::byte> got) {
  return compare(expected(c, rank), rank, got);
}

std::string Verdict::describe(DType dtype) const {
  if (!error.empty()) return error + "\n";
  std::string out = std::to_string(mismatched) + " of " + std::to_string(checked + unchecked) + " elements wrong";
  if (unchecked > 0) out += " (" + std::to_string(unchecked) + " not checkable: products that leave the normal range)";
  out += "\n";
  for (const Mismatch& m : first) {
    out += "  rank " + std::to_string(m.rank) + " element " + std::to_string(m.element) + ": expected " +
           format_element(dtype, m.expected_bits) + ", got " + format_element(dtype, m.got_bits);
    if (is_float(dtype)) out += ", " + describe_number(m.ulps) + " ulp";
    else out += ", off by " + describe_number(m.ulps);
    if (m.bound > 0) out += ", bound " + describe_number(m.bound);
    out += "\n";
  }
  if (mismatched > first.size()) out += "  ... and " + std::to_string(mismatched - first.size()) + " more\n";
  return out;
}

}  // namespace collcheck
