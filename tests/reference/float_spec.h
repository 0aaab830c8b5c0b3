// The narrow float formats as IEEE 754 and the OCP FP8 specification define them, written out
// for the float-format tests (a decoder and a nearest-value search that do not use the library).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <vector>

#include "reference/dtype.h"
#include "reference/float_format.h"

namespace collcheck::testing {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A format as IEEE 754 and the OCP FP8 specification define it, written out here so the
// tests do not read their expectations from the library.
struct Spec {
  const char* name;
  DType dtype;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_infinity;
  double max_finite;
  double min_subnormal;
  std::uint32_t max_finite_bits;  // positive
  double (*to_double)(std::uint32_t);
  std::uint32_t (*from_double)(double, Saturation);

  int width() const { return 1 + exponent_bits + mantissa_bits; }
  std::uint32_t patterns() const { return std::uint32_t{1} << width(); }
  std::uint32_t sign_bit() const { return std::uint32_t{1} << (width() - 1); }
};

inline const Spec kFloat16{"float16",
                           DType::Float16,
                           5,
                           10,
                           15,
                           true,
                           65504.0,
                           0x1p-24,
                           0x7bff,
                           [](std::uint32_t b) { return float16_to_double(static_cast<std::uint16_t>(b)); },
                           [](double x, Saturation s) -> std::uint32_t { return float16_from_double(x, s); }};
inline const Spec kBFloat16{"bfloat16",
                            DType::BFloat16,
                            8,
                            7,
                            127,
                            true,
                            0x1.fep127,
                            0x1p-133,
                            0x7f7f,
                            [](std::uint32_t b) { return bfloat16_to_double(static_cast<std::uint16_t>(b)); },
                            [](double x, Saturation s) -> std::uint32_t { return bfloat16_from_double(x, s); }};
inline const Spec kFloat8E4M3{"float8_e4m3",
                              DType::Float8E4M3,
                              4,
                              3,
                              7,
                              false,
                              448.0,
                              0x1p-9,
                              0x7e,
                              [](std::uint32_t b) { return float8_e4m3_to_double(static_cast<std::uint8_t>(b)); },
                              [](double x, Saturation s) -> std::uint32_t { return float8_e4m3_from_double(x, s); }};
inline const Spec kFloat8E5M2{"float8_e5m2",
                              DType::Float8E5M2,
                              5,
                              2,
                              15,
                              true,
                              57344.0,
                              0x1p-16,
                              0x7b,
                              [](std::uint32_t b) { return float8_e5m2_to_double(static_cast<std::uint8_t>(b)); },
                              [](double x, Saturation s) -> std::uint32_t { return float8_e5m2_from_double(x, s); }};

// The value of a bit pattern, from its sign, exponent and fraction fields.
inline double reference_decode(const Spec& spec, std::uint32_t bits) {
  const std::uint32_t exponent_ones = (std::uint32_t{1} << spec.exponent_bits) - 1;
  const std::uint32_t fraction_ones = (std::uint32_t{1} << spec.mantissa_bits) - 1;
  const bool negative = (bits & spec.sign_bit()) != 0;
  const std::uint32_t exponent = (bits >> spec.mantissa_bits) & exponent_ones;
  const std::uint32_t fraction = bits & fraction_ones;
  double magnitude;
  if (exponent == exponent_ones && spec.has_infinity) {
    magnitude = fraction == 0 ? kInfinity : kNaN;
  } else if (exponent == exponent_ones && fraction == fraction_ones) {
    magnitude = kNaN;  // e4m3: only S.1111.111 is NaN; the rest of that binade is normal
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(fraction), 1 - spec.bias - spec.mantissa_bits);
  } else {
    magnitude = std::ldexp(static_cast<double>(fraction + fraction_ones + 1),
                           static_cast<int>(exponent) - spec.bias - spec.mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

inline bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Positive finite values in pattern order (0, smallest subnormal, ..., largest finite);
// for these formats the order of the patterns is the order of the values.
inline std::vector<double> positive_finite_values(const Spec& spec) {
  std::vector<double> values;
  for (std::uint32_t bits = 0; bits <= spec.max_finite_bits; ++bits) {
    values.push_back(reference_decode(spec, bits));
  }
  return values;
}

// The pattern of the value of `values` nearest to x in [0, max_finite], ties to the even
// pattern: a search over the table, not a rounding computation.
inline std::uint32_t nearest_pattern(const std::vector<double>& values, double x) {
  const auto above = std::lower_bound(values.begin(), values.end(), x);
  if (above == values.begin()) return 0;
  if (above == values.end()) return static_cast<std::uint32_t>(values.size() - 1);
  const auto upper = static_cast<std::uint32_t>(above - values.begin());
  const std::uint32_t lower = upper - 1;
  const double below_distance = x - values[lower];
  const double above_distance = values[upper] - x;
  if (below_distance < above_distance) return lower;
  if (above_distance < below_distance) return upper;
  return (lower % 2 == 0) ? lower : upper;
}

// gtest prints a failing test's parameter with this.
inline void PrintTo(const Spec& spec, std::ostream* os) { *os << spec.name; }

}  // namespace collcheck::testing
