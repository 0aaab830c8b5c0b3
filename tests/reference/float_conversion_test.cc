// Checks the float conversions against independent oracles (the CPU's float, the compiler's
// _Float16), rounding once from double, and encode, decode and ulp of every dtype.
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
using testing::kFloat16;
using testing::kInfinity;
using testing::kNaN;
using testing::Mismatches;
using testing::reference_decode;
using testing::same_value;

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
    const double x = (i % 2 == 0) ? std::ldexp(unit_interval(random) * ((random & 1) ? -1 : 1),
                                               static_cast<int>(below(mix64(state++), 300)) - 160)
                                  : std::bit_cast<double>(random);
    const float expected = static_cast<float>(x);
    const std::uint32_t got = encode(format, x);
    const bool ok =
        std::isnan(expected) ? std::isnan(std::bit_cast<float>(got)) : got == std::bit_cast<std::uint32_t>(expected);
    if (!ok)
      mismatches.add(describe(x) + ": got " + hex(got) + ", the CPU gives " +
                     hex(std::bit_cast<std::uint32_t>(expected)));
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
      mismatches.add("decode " + hex(bits) + " gave " + describe(decode(format, bits)) + ", _Float16 gives " +
                     describe(expected));
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
      default: x = std::bit_cast<double>(random);
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
  for (DType integer : {DType::Int8, DType::UInt8, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64}) {
    EXPECT_EQ(ulp(integer, 0.0), 1.0) << name(integer);
    EXPECT_EQ(ulp(integer, 100.0), 1.0) << name(integer);
  }
}

}  // namespace
}  // namespace collcheck
