// Checks the narrow float conversions of reference/float_format.h on every bit pattern,
// against a decoder and a nearest-value search written here from the formats' definitions
// (tests/reference/float_spec.h).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "reference/dtype.h"
#include "reference/float_format.h"
#include "reference/random.h"
#include "tests/reference/float_spec.h"
#include "tests/reference/mismatch_report.h"

namespace collcheck {
namespace {

using testing::describe;
using testing::hex;
using testing::kBFloat16;
using testing::kFloat16;
using testing::kFloat8E4M3;
using testing::kFloat8E5M2;
using testing::kInfinity;
using testing::kNaN;
using testing::Mismatches;
using testing::nearest_pattern;
using testing::positive_finite_values;
using testing::reference_decode;
using testing::same_value;
using testing::Spec;

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
    if (!same_value(by_format, expected) || !same_value(by_name, expected) || !same_value(by_dtype, expected)) {
      mismatches.add(hex(bits) + ": expected " + describe(expected) + ", decode(format) " + describe(by_format) + ", " +
                     spec.name + "_to_double " + describe(by_name) + ", decode(dtype) " + describe(by_dtype));
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
    const std::uint32_t saturated = std::isinf(value) ? (bits & spec.sign_bit()) | spec.max_finite_bits : bits;
    const std::uint64_t got[] = {encode(format, value),
                                 encode(format, value, Saturation::None),
                                 encode(spec.dtype, value),
                                 spec.from_double(value, Saturation::None),
                                 encode(format, value, Saturation::Finite),
                                 encode(spec.dtype, value, Saturation::Finite),
                                 spec.from_double(value, Saturation::Finite)};
    const std::uint64_t expected[] = {bits, bits, bits, bits, saturated, saturated, saturated};
    for (std::size_t i = 0; i < std::size(got); ++i) {
      if (got[i] != expected[i]) {
        mismatches.add(describe(value) + " (" + hex(bits) + "): call " + std::to_string(i) + " gave " + hex(got[i]) +
                       ", expected " + hex(expected[i]));
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
        mismatches.add("decode " + hex(bits) + " gave " + describe(got) + ", expected " + describe(expected));
      }
      if (!std::isnan(expected) && !std::isinf(expected) && encode(*format, expected) != bits) {
        mismatches.add("encode " + describe(expected) + " gave " + hex(encode(*format, expected)) + ", expected " +
                       hex(bits));
      }
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}

TEST_P(FloatFormatTest, NaNEncodesToNaN) {
  const Spec& spec = GetParam();
  const FloatFormat& format = float_format(spec.dtype);
  const double nans[] = {kNaN,
                         -kNaN,
                         std::numeric_limits<double>::signaling_NaN(),
                         std::bit_cast<double>(0x7ff0000000000001ull),
                         std::bit_cast<double>(0xfff8000000000123ull),
                         std::bit_cast<double>(0x7fffffffffffffffull)};
  for (double nan : nans) {
    for (Saturation saturation : {Saturation::None, Saturation::Finite}) {
      const std::uint32_t bits = encode(format, nan, saturation);
      EXPECT_LT(bits, spec.patterns()) << hex(bits);
      EXPECT_TRUE(std::isnan(reference_decode(spec, bits))) << describe(nan) << " encoded to " << hex(bits);
      EXPECT_TRUE(std::isnan(reference_decode(spec, spec.from_double(nan, saturation))));
      EXPECT_TRUE(std::isnan(reference_decode(spec, static_cast<std::uint32_t>(encode(spec.dtype, nan, saturation)))));
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
  const double fractions[] = {0x1p-60,       0.125,         0.25,  0.375, 0.5 - 0x1p-20, 0.5 - 0x1p-40, 0.5,
                              0.5 + 0x1p-40, 0.5 + 0x1p-20, 0.625, 0.75,  0.875,         1 - 0x1p-40};
  Mismatches mismatches;
  auto check = [&](double x, std::uint32_t expected) {
    for (Saturation saturation : {Saturation::None, Saturation::Finite}) {
      const std::uint32_t got = encode(format, x, saturation);
      const std::uint32_t got_negative = encode(format, -x, saturation);
      if (got != expected || got_negative != (expected | spec.sign_bit())) {
        mismatches.add(describe(x) + ": expected ±" + hex(expected) + ", got " + hex(got) + " and " +
                       hex(got_negative) + (saturation == Saturation::None ? " (None)" : " (Finite)"));
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
    const int exponent = lowest_exponent + static_cast<int>(below(random, highest_exponent - lowest_exponent + 1));
    double x = std::ldexp(1.0 + unit_interval(mix64(state++)), exponent);
    if (x > spec.max_finite) x = spec.max_finite * unit_interval(random);
    const std::uint32_t expected = nearest_pattern(values, x);
    const std::uint32_t got = encode(format, x);
    const std::uint32_t got_negative = encode(format, -x, Saturation::Finite);
    if (got != expected || got_negative != (expected | spec.sign_bit())) {
      mismatches.add(describe(x) + ": expected ±" + hex(expected) + ", got " + hex(got) + " and " + hex(got_negative));
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
  EXPECT_EQ(encode(format, 464.0), 0x7eu);  // the tie goes to the even 448
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
      mismatches.add("ulp(" + describe(values[i]) + ") = " + describe(got) + " and " + describe(got_negative) +
                     ", the gap is " + describe(gap));
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}

// encode_all and decode_all, which choose the dtype's format once for a batch, give encode's and
// decode's bits and values for every dtype: random doubles of every magnitude, the specials, and
// every dtype's own values (each element at its own place: a wrong width or format fails).
TEST(FloatFormat, BatchesEncodeAndDecodeAsOneAtATime) {
  std::vector<double> values = {0.0,     -0.0,  1.0,     -1.5,   0.5,   3.0,         65504.0,
                                65520.0, 1e300, -1e-300, 448.0,  464.0, kInfinity,   -kInfinity,
                                kNaN,    127.0, 128.0,   -129.0, 255.5, 4294967296.0};
  for (std::uint64_t k = 0; k < 4000; ++k) {
    const std::uint64_t random = mix64(k);
    const int exponent = static_cast<int>(random % 80) - 40;
    values.push_back(std::ldexp(static_cast<double>(random >> 11) / 9007199254740992.0, exponent) * ((k & 1) ? -1 : 1));
  }
  for (DType dtype : all_dtypes()) {
    SCOPED_TRACE(std::string(name(dtype)));
    const std::size_t size = size_of(dtype);
    std::vector<std::byte> packed(values.size() * size);
    encode_all(dtype, values, packed);
    std::vector<double> decoded(values.size());
    decode_all(dtype, packed, decoded);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::uint64_t bits = encode(dtype, values[i]);
      ASSERT_EQ(load_bits(dtype, packed, i), bits) << "value " << values[i];
      const double value = decode(dtype, bits);
      ASSERT_TRUE(std::bit_cast<std::uint64_t>(decoded[i]) == std::bit_cast<std::uint64_t>(value) ||
                  (std::isnan(value) && std::isnan(decoded[i])))
          << "value " << values[i];
    }
  }
}
}  // namespace
}  // namespace collcheck
