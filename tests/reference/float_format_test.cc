// Checks the narrow float conversions of reference/float_format.h on every bit pattern,
// against a decoder and a nearest-value search written here from the formats' definitions.
#include "reference/float_format.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "reference/dtype.h"
#include "reference/random.h"
#include "tests/reference/mismatch_report.h"

namespace collcheck {
namespace {

using testing::describe;
using testing::hex;
using testing::Mismatches;

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

const Spec kFloat16{"float16", DType::Float16, 5, 10, 15, true, 65504.0, 0x1p-24, 0x7bff,
                    [](std::uint32_t b) { return float16_to_double(static_cast<std::uint16_t>(b)); },
                    [](double x, Saturation s) -> std::uint32_t { return float16_from_double(x, s); }};
const Spec kBFloat16{"bfloat16", DType::BFloat16, 8, 7, 127, true, 0x1.fep127, 0x1p-133, 0x7f7f,
                     [](std::uint32_t b) { return bfloat16_to_double(static_cast<std::uint16_t>(b)); },
                     [](double x, Saturation s) -> std::uint32_t { return bfloat16_from_double(x, s); }};
const Spec kFloat8E4M3{"float8_e4m3", DType::Float8E4M3, 4, 3, 7, false, 448.0, 0x1p-9, 0x7e,
                       [](std::uint32_t b) { return float8_e4m3_to_double(static_cast<std::uint8_t>(b)); },
                       [](double x, Saturation s) -> std::uint32_t { return float8_e4m3_from_double(x, s); }};
const Spec kFloat8E5M2{"float8_e5m2", DType::Float8E5M2, 5, 2, 15, true, 57344.0, 0x1p-16, 0x7b,
                       [](std::uint32_t b) { return float8_e5m2_to_double(static_cast<std::uint8_t>(b)); },
                       [](double x, Saturation s) -> std::uint32_t { return float8_e5m2_from_double(x, s); }};

// The value of a bit pattern, from its sign, exponent and fraction fields.
double reference_decode(const Spec& spec, std::uint32_t bits) {
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

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Positive finite values in pattern order (0, smallest subnormal, ..., largest finite);
// for these formats the order of the patterns is the order of the values.
std::vector<double> positive_finite_values(const Spec& spec) {
  std::vector<double> values;
  for (std::uint32_t bits = 0; bits <= spec.max_finite_bits; ++bits) {
    values.push_back(reference_decode(spec, bits));
  }
  return values;
}

// The pattern of the value of `values` nearest to x in [0, max_finite], ties to the even
// pattern: a search over the table, not a rounding computation.
std::uint32_t nearest_pattern(const std::vector<double>& values, double x) {
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
void PrintTo(const Spec& spec, std::ostream* os) { *os << spec.name; }

class FloatFormatTest : public ::testing::TestWithParam<Spec> {};

INSTANTIATE_TEST_SUITE_P(NarrowFormats, FloatFormatTest,
                         ::testing::Values(kFloat16, kBFloat16, kFloat8E4M3, kFloat8E5M2),
                         [](const ::testing::TestParamInfo<Spec>& instance) {
                           return std::string(instance.param.name);
                         });

// The reference decoder itself, against values quoted from the standards' tables.
TEST(ReferenceDecode, MatchesPublishedValues) {
  EXPECT_EQ(reference_decode(kFloat16, 0x3c00), 1.0);
  EXPECT_EQ(reference_decode(kFloat16, 0x3555), 0.333251953125);
  EXPECT_EQ(reference_decode(kFloat16, 0x7bff), 65504.0);
  EXPECT_EQ(reference_decode(kFloat16, 0x0400), 0x1p-14);
  EXPECT_EQ(reference_decode(kFloat16, 0x0001), 0x1p-24);
  EXPECT_EQ(reference_decode(kFloat16, 0xc000), -2.0);
  EXPECT_EQ(reference_decode(kFloat16, 0x7c00), kInfinity);
  EXPECT_TRUE(std::isnan(reference_decode(kFloat16, 0x7e00)));
  EXPECT_EQ(reference_decode(kBFloat16, 0x3f80), 1.0);
  EXPECT_EQ(reference_decode(kBFloat16, 0x7f7f), 3.3895313892515355e38);
  EXPECT_EQ(reference_decode(kBFloat16, 0x0001), 0x1p-133);
  EXPECT_EQ(reference_decode(kFloat8E4M3, 0x7e), 448.0);
  EXPECT_EQ(reference_decode(kFloat8E4M3, 0x78), 256.0);
  EXPECT_EQ(reference_decode(kFloat8E4M3, 0x38), 1.0);
  EXPECT_EQ(reference_decode(kFloat8E4M3, 0x08), 0x1p-6);
  EXPECT_EQ(reference_decode(kFloat8E4M3, 0x01), 0x1p-9);
  EXPECT_TRUE(std::isnan(reference_decode(kFloat8E4M3, 0x7f)));
  EXPECT_TRUE(std::isnan(reference_decode(kFloat8E4M3, 0xff)));
  EXPECT_EQ(reference_decode(kFloat8E5M2, 0x3c), 1.0);
  EXPECT_EQ(reference_decode(kFloat8E5M2, 0x7b), 57344.0);
  EXPECT_EQ(reference_decode(kFloat8E5M2, 0x01), 0x1p-16);
  EXPECT_EQ(reference_decode(kFloat8E5M2, 0xfc), -kInfinity);
  EXPECT_TRUE(std::isnan(reference_decode(kFloat8E5M2, 0x7d)));
  // bfloat16 is the top half of a float32.
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const double expected = std::bit_cast<float>(bits << 16);
    ASSERT_TRUE(same_value(reference_decode(kBFloat16, bits), expected)) << hex(bits);
  }
}

TEST_P(FloatFormatTest, FormatConstants) {
  const Spec& spec = GetParam();
  const FloatFormat& format = float_format(spec.dtype);
  EXPECT_EQ(format.exponent_bits, spec.exponent_bits);
  EXPECT_EQ(format.mantissa_bits, spec.mantissa_bits);
  EXPECT_EQ(format.bias, spec.bias);
  EXPECT_EQ(format.has_infinity, spec.has_infinity);
  EXPECT_EQ(format.precision(), spec.mantissa_bits + 1);
  EXPECT_EQ(format.max_finite(), spec.max_finite);
  EXPECT_EQ(format.min_normal(), std::ldexp(1.0, 1 - spec.bias));
  EXPECT_EQ(format.min_subnormal(), spec.min_subnormal);
  EXPECT_EQ(format.unit_roundoff(), std::ldexp(1.0, -(spec.mantissa_bits + 1)));
  EXPECT_EQ(reference_decode(spec, spec.max_finite_bits), spec.max_finite);
  const std::uint32_t nan = format.nan_bits();
  EXPECT_LT(nan, spec.patterns());
  EXPECT_TRUE(std::isnan(reference_decode(spec, nan))) << hex(nan);
  EXPECT_EQ(nan & spec.sign_bit(), 0u) << hex(nan);
  if (spec.has_infinity) {
    const std::uint32_t quiet_bit = std::uint32_t{1} << (spec.mantissa_bits - 1);
    EXPECT_NE(nan & quiet_bit, 0u) << "not a quiet NaN: " << hex(nan);
  }
}

TEST(FloatFormat, WideFormatConstants) {
  const FloatFormat& f32 = float_format(DType::Float32);
  EXPECT_EQ(f32.exponent_bits, 8);
  EXPECT_EQ(f32.mantissa_bits, 23);
  EXPECT_EQ(f32.bias, 127);
  EXPECT_TRUE(f32.has_infinity);
  EXPECT_EQ(f32.max_finite(), static_cast<double>(std::numeric_limits<float>::max()));
  EXPECT_EQ(f32.min_normal(), static_cast<double>(std::numeric_limits<float>::min()));
  EXPECT_EQ(f32.min_subnormal(), static_cast<double>(std::numeric_limits<float>::denorm_min()));
  EXPECT_EQ(f32.unit_roundoff(), 0x1p-24);
  EXPECT_TRUE(std::isnan(std::bit_cast<float>(static_cast<std::uint32_t>(f32.nan_bits()))));
  const FloatFormat& f64 = float_format(DType::Float64);
  EXPECT_EQ(f64.exponent_bits, 11);
  EXPECT_EQ(f64.mantissa_bits, 52);
  EXPECT_EQ(f64.bias, 1023);
  EXPECT_TRUE(f64.has_infinity);
  EXPECT_EQ(f64.max_finite(), std::numeric_limits<double>::max());
  EXPECT_EQ(f64.min_normal(), std::numeric_limits<double>::min());
  EXPECT_EQ(f64.min_subnormal(), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(f64.unit_roundoff(), 0x1p-53);
}

TEST_P(FloatFormatTest, DecodeEveryPattern) {
  const Spec& spec = GetParam();
  const FloatFormat& format = float_format(spec.dtype);
  Mismatches mismatches;
  for (std::uint32_t bits = 0; bits < spec.patterns(); ++bits) {
    const double expected = reference_decode(spec, bits);
    const double by_format = decode(format, bits);
    const double by_name = spec.to_double(bits);
    const double by_dtype = decode(spec.dtype, bits);
    if (!same_value(by_format, expected) || !same_value(by_name, expected) ||
        !same_value(by_dtype, expected)) {
      mismatches.add(hex(bits) + ": expected " + describe(expected) + ", decode(format) " +
                     describe(by_format) + ", " + spec.name + "_to_double " + describe(by_name) +
                     ", decode(dtype) " + describe(by_dtype));
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}

TEST_P(FloatFormatTest, EncodeInvertsDecodeOnEveryPattern) {
  const Spec& spec = GetParam();
  const FloatFormat& format = float_format(spec.dtype);
  Mismatches mismatches;
  for (std::uint32_t bits = 0; bits < spec.patterns(); ++bits) {
    const double value = reference_decode(spec, bits);
    if (std::isnan(value)) continue;
    // Finite saturation turns ±inf into ±max; every finite pattern comes back as itself.
    const std::uint32_t saturated =
        std::isinf(value) ? (bits & spec.sign_bit()) | spec.max_finite_bits : bits;
    const std::uint64_t got[] = {
        encode(format, value), encode(format, value, Saturation::None),
        encode(spec.dtype, value), spec.from_double(value, Saturation::None),
        encode(format, value, Saturation::Finite),
        encode(spec.dtype, value, Saturation::Finite),
        spec.from_double(value, Saturation::Finite)};
    const std::uint64_t expected[] = {bits, bits, bits, bits, saturated, saturated, saturated};
    for (std::size_t i = 0; i < std::size(got); ++i) {
      if (got[i] != expected[i]) {
        mismatches.add(describe(value) + " (" + hex(bits) + "): call " + std::to_string(i) +
                       " gave " + hex(got[i]) + ", expected " + hex(expected[i]));
      }
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}

// A FloatFormat is a plain value: a copy, or one built from the same fields, converts
// exactly like the instance float_format() returns.
TEST_P(FloatFormatTest, ACopyOfTheFormatConvertsTheSame) {
  const Spec& spec = GetParam();
  const FloatFormat copy = float_format(spec.dtype);
  const FloatFormat built{spec.exponent_bits, spec.mantissa_bits, spec.bias, spec.has_infinity};
  Mismatches mismatches;
  for (const FloatFormat* format : {&copy, &built}) {
    for (std::uint32_t bits = 0; bits < spec.patterns(); ++bits) {
      const double expected = reference_decode(spec, bits);
      const double got = decode(*format, bits);
      if (!same_value(got, expected)) {
        mismatches.add("decode " + hex(bits) + " gave " + describe(got) + ", expected " +
                       describe(expected));
      }
      if (!std::isnan(expected) && !std::isinf(expected) && encode(*format, expected) != bits) {
        mismatches.add("encode " + describe(expected) + " gave " + hex(encode(*format, expected)) +
                       ", expected " + hex(bits));
      }
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}

TEST_P(FloatFormatTest, NaNEncodesToNaN) {
  const Spec& spec = GetParam();
  const FloatFormat& format = float_format(spec.dtype);
  const double nans[] = {kNaN, -kNaN, std::numeric_limits<double>::signaling_NaN(),
                         std::bit_cast<double>(0x7ff0000000000001ull),
                         std::bit_cast<double>(0xfff8000000000123ull),
                         std::bit_cast<double>(0x7fffffffffffffffull)};
  for (double nan : nans) {
    for (Saturation saturation : {Saturation::None, Saturation::Finite}) {
      const std::uint32_t bits = encode(format, nan, saturation);
      EXPECT_LT(bits, spec.patterns()) << hex(bits);
      EXPECT_TRUE(std::isnan(reference_decode(spec, bits)))
          << describe(nan) << " encoded to " << hex(bits);
      EXPECT_TRUE(std::isnan(reference_decode(spec, spec.from_double(nan, saturation))));
      EXPECT_TRUE(std::isnan(reference_decode(
          spec, static_cast<std::uint32_t>(encode(spec.dtype, nan, saturation)))));
    }
  }
}

// Between every two neighbouring values a < b: the midpoint goes to the even pattern, and
// points near it or between go to the nearer; negative values mirror positive ones.
TEST_P(FloatFormatTest, RoundsEveryGapToNearestEven) {
  const Spec& spec = GetParam();
  const FloatFormat& format = float_format(spec.dtype);
  const std::vector<double> values = positive_finite_values(spec);
  ASSERT_TRUE(std::is_sorted(values.begin(), values.end()));
  ASSERT_TRUE(std::adjacent_find(values.begin(), values.end()) == values.end());
  const double fractions[] = {0x1p-60, 0.125, 0.25, 0.375, 0.5 - 0x1p-20, 0.5 - 0x1p-40,
                              0.5,     0.5 + 0x1p-40, 0.5 + 0x1p-20, 0.625, 0.75, 0.875,
                              1 - 0x1p-40};
  Mismatches mismatches;
  auto check = [&](double x, std::uint32_t expected) {
    for (Saturation saturation : {Saturation::None, Saturation::Finite}) {
      const std::uint32_t got = encode(format, x, saturation);
      const std::uint32_t got_negative = encode(format, -x, saturation);
      if (got != expected || got_negative != (expected | spec.sign_bit())) {
        mismatches.add(describe(x) + ": expected ±" + hex(expected) + ", got " + hex(got) +
                       " and " + hex(got_negative) +
                       (saturation == Saturation::None ? " (None)" : " (Finite)"));
      }
    }
  };
  for (std::uint32_t lower = 0; lower + 1 < values.size(); ++lower) {
    const double a = values[lower];
    const double b = values[lower + 1];
    const double gap = b - a;
    const double midpoint = a + gap / 2;
    // The tie goes to the even pattern, whatever the search says.
    check(midpoint, lower % 2 == 0 ? lower : lower + 1);
    check(std::nextafter(midpoint, 0.0), lower);
    check(std::nextafter(midpoint, kInfinity), lower + 1);
    for (double fraction : fractions) {
      const double x = a + gap * fraction;
      check(x, nearest_pattern(values, x));
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}

TEST_P(FloatFormatTest, RoundsRandomDoublesToNearest) {
  const Spec& spec = GetParam();
  const FloatFormat& format = float_format(spec.dtype);
  const std::vector<double> values = positive_finite_values(spec);
  const int lowest_exponent = std::ilogb(spec.min_subnormal) - 2;
  const int highest_exponent = std::ilogb(spec.max_finite);
  Mismatches mismatches;
  std::uint64_t state = 0x5eed;
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t random = mix64(state++);
    const int exponent =
        lowest_exponent + static_cast<int>(below(random, highest_exponent - lowest_exponent + 1));
    double x = std::ldexp(1.0 + unit_interval(mix64(state++)), exponent);
    if (x > spec.max_finite) x = spec.max_finite * unit_interval(random);
    const std::uint32_t expected = nearest_pattern(values, x);
    const std::uint32_t got = encode(format, x);
    const std::uint32_t got_negative = encode(format, -x, Saturation::Finite);
    if (got != expected || got_negative != (expected | spec.sign_bit())) {
      mismatches.add(describe(x) + ": expected ±" + hex(expected) + ", got " + hex(got) + " and " +
                     hex(got_negative));
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}

TEST_P(FloatFormatTest, OverflowFollowsSaturation) {
  const Spec& spec = GetParam();
  const FloatFormat& format = float_format(spec.dtype);
  const double top_gap = spec.max_finite - reference_decode(spec, spec.max_finite_bits - 1);
  // Past max + half a gap a value rounds away from max: to infinity in the IEEE formats
  // (max has an odd mantissa, so the tie goes up too), to NaN in e4m3 (max's mantissa is even,
  // so the tie 464 stays at 448 and only larger values overflow).
  const double threshold = spec.max_finite + top_gap / 2;
  const std::uint32_t max = spec.max_finite_bits;
  const std::uint32_t infinity = max + 1;  // the IEEE formats: exponent all ones, fraction 0
  struct Expectation {
    double value;
    bool overflows;  // under Saturation::None
  };
  std::vector<Expectation> cases = {
      {spec.max_finite, false},
      {spec.max_finite + top_gap / 4, false},
      {std::nextafter(threshold, 0.0), false},
      {threshold, spec.has_infinity},
      {std::nextafter(threshold, kInfinity), true},
      {threshold + top_gap / 4, true},
      {spec.max_finite + top_gap, true},
      {2 * spec.max_finite, true},
      {1e300, true},
      {std::numeric_limits<double>::max(), true},
      {kInfinity, true},
  };
  for (const Expectation& c : cases) {
    for (double sign : {1.0, -1.0}) {
      const double x = sign * c.value;
      const std::uint32_t sign_bit = sign < 0 ? spec.sign_bit() : 0;
      const std::uint32_t none = encode(format, x, Saturation::None);
      if (!c.overflows) {
        EXPECT_EQ(none, sign_bit | max) << describe(x);
      } else if (spec.has_infinity) {
        EXPECT_EQ(none, sign_bit | infinity) << describe(x);
      } else {
        EXPECT_TRUE(std::isnan(reference_decode(spec, none))) << describe(x) << " gave " << hex(none);
      }
      EXPECT_EQ(encode(format, x, Saturation::Finite), sign_bit | max) << describe(x);
      EXPECT_EQ(spec.from_double(x, Saturation::Finite), sign_bit | max) << describe(x);
      EXPECT_EQ(encode(spec.dtype, x, Saturation::Finite), sign_bit | max) << describe(x);
    }
  }
}

TEST(FloatFormat, Float8E4M3OverflowEdges) {
  const FloatFormat& format = float_format(DType::Float8E4M3);
  EXPECT_EQ(encode(format, 448.0), 0x7eu);
  EXPECT_EQ(encode(format, 456.0), 0x7eu);
  EXPECT_EQ(encode(format, 464.0), 0x7eu);   // the tie goes to the even 448
  EXPECT_EQ(encode(format, -464.0), 0xfeu);
  EXPECT_TRUE(std::isnan(float8_e4m3_to_double(float8_e4m3_from_double(464.0000001))));
  EXPECT_TRUE(std::isnan(float8_e4m3_to_double(float8_e4m3_from_double(480.0))));
  EXPECT_TRUE(std::isnan(float8_e4m3_to_double(float8_e4m3_from_double(-kInfinity))));
  EXPECT_EQ(float8_e4m3_from_double(480.0, Saturation::Finite), 0x7eu);
  EXPECT_EQ(float8_e4m3_from_double(-kInfinity, Saturation::Finite), 0xfeu);
  EXPECT_EQ(encode(float_format(DType::Float8E5M2), 61440.0), 0x7cu);  // tie to even: inf
  EXPECT_EQ(encode(float_format(DType::Float8E5M2), 61439.0), 0x7bu);
  EXPECT_EQ(encode(float_format(DType::Float16), 65520.0), 0x7c00u);
  EXPECT_EQ(encode(float_format(DType::Float16), 65519.99), 0x7bffu);
}

TEST_P(FloatFormatTest, UnderflowGoesToSignedZero) {
  const Spec& spec = GetParam();
  const FloatFormat& format = float_format(spec.dtype);
  const double half = spec.min_subnormal / 2;
  const std::uint32_t minus = spec.sign_bit();
  for (Saturation saturation : {Saturation::None, Saturation::Finite}) {
    EXPECT_EQ(encode(format, 0.0, saturation), 0u);
    EXPECT_EQ(encode(format, -0.0, saturation), minus);
    EXPECT_EQ(encode(format, half, saturation), 0u) << "a tie goes to the even zero";
    EXPECT_EQ(encode(format, -half, saturation), minus);
    EXPECT_EQ(encode(format, std::nextafter(half, 0.0), saturation), 0u);
    EXPECT_EQ(encode(format, -std::nextafter(half, 0.0), saturation), minus);
    EXPECT_EQ(encode(format, std::nextafter(half, 1.0), saturation), 1u);
    EXPECT_EQ(encode(format, -std::nextafter(half, 1.0), saturation), minus | 1u);
    EXPECT_EQ(encode(format, half / 2, saturation), 0u);
    EXPECT_EQ(encode(format, 1e-300, saturation), 0u);
    EXPECT_EQ(encode(format, std::numeric_limits<double>::denorm_min(), saturation), 0u);
    EXPECT_EQ(encode(format, -std::numeric_limits<double>::denorm_min(), saturation), minus);
    EXPECT_EQ(encode(format, spec.min_subnormal, saturation), 1u);
    EXPECT_EQ(encode(format, 3 * half, saturation), 2u) << "a tie goes to the even 2*min";
    EXPECT_EQ(encode(format, 5 * half, saturation), 2u) << "a tie goes to the even 2*min";
  }
}

// A double just past a midpoint of the narrow format can round to that midpoint if it is
// first converted to float; encoding from double must round once.
TEST(FloatFormat, EncodeFromDoubleRoundsOnce) {
  const FloatFormat& f16 = float_format(DType::Float16);
  const FloatFormat& bf16 = float_format(DType::BFloat16);
  const FloatFormat& e4m3 = float_format(DType::Float8E4M3);
  const FloatFormat& e5m2 = float_format(DType::Float8E5M2);
  // 1 + 2^-11 is the midpoint of 1 (0x3c00) and 1 + 2^-10 (0x3c01).
  EXPECT_EQ(encode(f16, 1 + 0x1p-11 + 0x1p-40), 0x3c01u);
  EXPECT_EQ(encode(f16, 1 + 0x1p-11 - 0x1p-40), 0x3c00u);
  // 1 + 3*2^-11 is the midpoint of 0x3c01 and 0x3c02; the even one is above.
  EXPECT_EQ(encode(f16, 1 + 3 * 0x1p-11 - 0x1p-40), 0x3c01u);
  EXPECT_EQ(encode(f16, -(1 + 0x1p-11 + 0x1p-40)), 0xbc01u);
  // Subnormal: 2^-25 is half the smallest subnormal.
  EXPECT_EQ(encode(f16, 0x1p-25 + 0x1p-60), 0x0001u);
  EXPECT_EQ(encode(f16, 0x1p-25 * 3 - 0x1p-60), 0x0001u);
  EXPECT_EQ(encode(bf16, 1 + 0x1p-8 + 0x1p-40), 0x3f81u);
  EXPECT_EQ(encode(bf16, 1 + 3 * 0x1p-8 - 0x1p-40), 0x3f81u);
  EXPECT_EQ(encode(bf16, 0x1p-134 + 0x1p-170), 0x0001u);
  EXPECT_EQ(encode(e4m3, 1 + 0x1p-4 + 0x1p-40), 0x39u);
  EXPECT_EQ(encode(e4m3, 1 + 3 * 0x1p-4 - 0x1p-40), 0x39u);
  EXPECT_EQ(encode(e5m2, 1 + 0x1p-3 + 0x1p-40), 0x3du);
  EXPECT_EQ(encode(e5m2, 1 + 3 * 0x1p-3 - 0x1p-40), 0x3du);
}

// Float32 is one of the formats too: the CPU's double-to-float conversion rounds once,
// to nearest even, so it is an independent oracle.
TEST(FloatFormat, Float32AgreesWithTheCpu) {
  const FloatFormat& format = float_format(DType::Float32);
  Mismatches mismatches;
  std::uint64_t state = 32;
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t random = mix64(state++);
    // Half the draws span float32's range and beyond, half are arbitrary double bits.
    const double x = (i % 2 == 0)
                         ? std::ldexp(unit_interval(random) * ((random & 1) ? -1 : 1),
                                      static_cast<int>(below(mix64(state++), 300)) - 160)
                         : std::bit_cast<double>(random);
    const float expected = static_cast<float>(x);
    const std::uint32_t got = encode(format, x);
    const bool ok = std::isnan(expected) ? std::isnan(std::bit_cast<float>(got))
                                         : got == std::bit_cast<std::uint32_t>(expected);
    if (!ok) mismatches.add(describe(x) + ": got " + hex(got) + ", the CPU gives " + hex(std::bit_cast<std::uint32_t>(expected)));
    const auto bits = static_cast<std::uint32_t>(random >> 32);
    if (!same_value(decode(format, bits), std::bit_cast<float>(bits))) {
      mismatches.add("decode " + hex(bits) + " gave " + describe(decode(format, bits)));
    }
    if (!same_value(decode(DType::Float32, bits), std::bit_cast<float>(bits))) {
      mismatches.add("decode(Float32) " + hex(bits) + " gave " + describe(decode(DType::Float32, bits)));
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}

#ifdef __FLT16_MAX__
// The compiler's _Float16 conversions (libgcc's soft-float, one rounding) as a second oracle.
TEST(FloatFormat, Float16AgreesWithTheCompiler) {
  const FloatFormat& format = float_format(DType::Float16);
  Mismatches mismatches;
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const double expected = static_cast<double>(std::bit_cast<_Float16>(static_cast<std::uint16_t>(bits)));
    if (!same_value(decode(format, bits), expected)) {
      mismatches.add("decode " + hex(bits) + " gave " + describe(decode(format, bits)) +
                     ", _Float16 gives " + describe(expected));
    }
  }
  std::uint64_t state = 16;
  for (int i = 0; i < 1000000; ++i) {
    const std::uint64_t random = mix64(state++);
    double x;
    switch (i % 4) {
      case 0:  // the whole float16 range, subnormals and overflow included
        x = std::ldexp(unit_interval(random), static_cast<int>(below(mix64(state++), 46)) - 28);
        break;
      case 1:  // near a float16 value: a random pattern's value plus a small random offset
        x = static_cast<double>(std::bit_cast<_Float16>(static_cast<std::uint16_t>(random))) *
            (1 + (unit_interval(mix64(state++)) - 0.5) * 0x1p-9);
        break;
      case 2:  // exactly on a midpoint, then nudged by one double ulp either way
      {
        const auto bits = static_cast<std::uint16_t>(random & 0x7bfe);
        const double a = static_cast<double>(std::bit_cast<_Float16>(bits));
        const double b = static_cast<double>(std::bit_cast<_Float16>(static_cast<std::uint16_t>(bits + 1)));
        const double midpoint = (a + b) / 2;
        const int nudge = static_cast<int>(below(mix64(state++), 3));
        x = nudge == 0 ? midpoint : std::nextafter(midpoint, nudge == 1 ? 0.0 : kInfinity);
        if (random >> 63) x = -x;
        break;
      }
      default:
        x = std::bit_cast<double>(random);
    }
    if ((random & 0x8000) != 0 && i % 4 != 2) x = -x;
    const auto expected = std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
    const std::uint32_t got = encode(format, x);
    const bool ok = std::isnan(x) ? std::isnan(reference_decode(kFloat16, got)) : got == expected;
    if (!ok) {
      mismatches.add(describe(x) + ": got " + hex(got) + ", _Float16 gives " + hex(expected));
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}
#endif

TEST(DTypeConversion, IntegersConvertExactly) {
  EXPECT_EQ(encode(DType::Int8, -1.0), 0xffu);
  EXPECT_EQ(encode(DType::Int8, -128.0), 0x80u);
  EXPECT_EQ(encode(DType::Int8, 127.0), 0x7fu);
  EXPECT_EQ(encode(DType::Int8, 0.0), 0u);
  EXPECT_EQ(decode(DType::Int8, 0xff), -1.0);
  EXPECT_EQ(decode(DType::Int8, 0x80), -128.0);
  EXPECT_EQ(decode(DType::Int8, 0x7f), 127.0);
  EXPECT_EQ(encode(DType::UInt8, 255.0), 0xffu);
  EXPECT_EQ(decode(DType::UInt8, 0xff), 255.0);
  EXPECT_EQ(decode(DType::UInt8, 0x80), 128.0);
  EXPECT_EQ(encode(DType::Int32, -1.0), 0xffffffffu);
  EXPECT_EQ(encode(DType::Int32, -2147483648.0), 0x80000000u);
  EXPECT_EQ(encode(DType::Int32, 123456789.0), 123456789u);
  EXPECT_EQ(decode(DType::Int32, 0xffffffff), -1.0);
  EXPECT_EQ(decode(DType::Int32, 0x80000000), -2147483648.0);
  EXPECT_EQ(encode(DType::UInt32, 4294967295.0), 0xffffffffu);
  EXPECT_EQ(decode(DType::UInt32, 0xffffffff), 4294967295.0);
  EXPECT_EQ(encode(DType::Int64, -1.0), ~std::uint64_t{0});
  EXPECT_EQ(encode(DType::Int64, -0x1p62), 0xc000000000000000ull);
  EXPECT_EQ(encode(DType::Int64, 0x1p53), std::uint64_t{1} << 53);
  EXPECT_EQ(decode(DType::Int64, ~std::uint64_t{0}), -1.0);
  EXPECT_EQ(decode(DType::Int64, 0x8000000000000000ull), -0x1p63);
  EXPECT_EQ(decode(DType::Int64, (std::uint64_t{1} << 53) + 1), 0x1p53);  // rounds, tie to even
  EXPECT_EQ(decode(DType::Int64, (std::uint64_t{1} << 53) + 3), 0x1p53 + 4);
  EXPECT_EQ(encode(DType::UInt64, 0x1p63), std::uint64_t{1} << 63);
  EXPECT_EQ(decode(DType::UInt64, ~std::uint64_t{0}), 0x1p64);
  EXPECT_EQ(decode(DType::UInt64, 12345), 12345.0);
  // Encoding sets only the element's own bytes.
  for (double v : {-128.0, -77.0, -1.0, 0.0, 1.0, 100.0, 127.0}) {
    EXPECT_EQ(decode(DType::Int8, encode(DType::Int8, v)), v);
    EXPECT_LE(encode(DType::Int8, v), 0xffu);
  }
  for (double v : {-2147483648.0, -1.0, 2147483647.0}) {
    EXPECT_EQ(decode(DType::Int32, encode(DType::Int32, v)), v);
    EXPECT_LE(encode(DType::Int32, v), 0xffffffffu);
  }
}

TEST(DTypeConversion, FloatDTypes) {
  EXPECT_EQ(encode(DType::Float16, 1.0), 0x3c00u);
  EXPECT_EQ(encode(DType::BFloat16, -2.0), 0xc000u);
  EXPECT_EQ(encode(DType::Float8E4M3, 1.0), 0x38u);
  EXPECT_EQ(encode(DType::Float8E5M2, 1.0), 0x3cu);
  EXPECT_EQ(encode(DType::Float32, 1.0), 0x3f800000u);
  EXPECT_EQ(encode(DType::Float32, 0.1), std::bit_cast<std::uint32_t>(0.1f));
  EXPECT_EQ(decode(DType::Float32, 0xbf800000), -1.0);
  for (double v : {0.1, -1e300, 5e-324, -0.0}) {
    EXPECT_EQ(encode(DType::Float64, v), std::bit_cast<std::uint64_t>(v));
    EXPECT_TRUE(same_value(decode(DType::Float64, std::bit_cast<std::uint64_t>(v)), v));
  }
  EXPECT_TRUE(std::isnan(decode(DType::Float64, encode(DType::Float64, kNaN))));
}

TEST(Ulp, Basics) {
  EXPECT_EQ(ulp(DType::Float32, 1.0), 0x1p-23);
  EXPECT_EQ(ulp(DType::Float32, -1.0), 0x1p-23);
  EXPECT_EQ(ulp(DType::Float32, 0.0), 0x1p-149);
  EXPECT_EQ(ulp(DType::Float64, 1.0), 0x1p-52);
  EXPECT_EQ(ulp(DType::Float64, 0.0), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(ulp(DType::Float16, 1.0), 0x1p-10);
  EXPECT_EQ(ulp(DType::Float16, 2.0), 0x1p-9);
  EXPECT_EQ(ulp(DType::Float16, 0.75), 0x1p-11);
  EXPECT_EQ(ulp(DType::Float16, 0.0), 0x1p-24);
  EXPECT_EQ(ulp(DType::Float16, 0x1p-20), 0x1p-24);  // subnormal: the smallest subnormal
  EXPECT_EQ(ulp(DType::BFloat16, 1.0), 0x1p-7);
  EXPECT_EQ(ulp(DType::Float8E4M3, 1.0), 0x1p-3);
  EXPECT_EQ(ulp(DType::Float8E5M2, 1.0), 0x1p-2);
  for (DType integer : {DType::Int8, DType::UInt8, DType::Int32, DType::UInt32, DType::Int64,
                        DType::UInt64}) {
    EXPECT_EQ(ulp(integer, 0.0), 1.0) << name(integer);
    EXPECT_EQ(ulp(integer, 100.0), 1.0) << name(integer);
  }
}

// ulp(v) is the distance from v to the next pattern's value, for every finite v but the largest.
TEST_P(FloatFormatTest, UlpIsTheGapAboveEveryValue) {
  const Spec& spec = GetParam();
  const std::vector<double> values = positive_finite_values(spec);
  Mismatches mismatches;
  for (std::size_t i = 0; i + 1 < values.size(); ++i) {
    const double gap = values[i + 1] - values[i];
    const double got = ulp(spec.dtype, values[i]);
    const double got_negative = ulp(spec.dtype, -values[i]);
    if (got != gap || got_negative != gap) {
      mismatches.add("ulp(" + describe(values[i]) + ") = " + describe(got) + " and " +
                     describe(got_negative) + ", the gap is " + describe(gap));
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}

}  // namespace
}  // namespace collcheck
