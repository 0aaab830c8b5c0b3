// Checks that our narrow float conversions agree bit for bit with CUDA's own (the host
// versions in cuda_fp16.h, cuda_bf16.h and cuda_fp8.h), on every pattern and many doubles.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/dtype.h"
#include "reference/float_format.h"
#include "reference/random.h"
#include "tests/reference/mismatch_report.h"

#ifdef COLLCHECK_HAVE_CUDA_HEADERS
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif

namespace collcheck {
namespace {

using testing::describe;
using testing::hex;
using testing::Mismatches;

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

#ifdef COLLCHECK_HAVE_CUDA_HEADERS
#define REQUIRE_CUDA_HEADERS() static_cast<void>(0)

double cuda_decode(DType dtype, std::uint32_t bits) {
  switch (dtype) {
    case DType::Float16: {
      __half_raw raw;
      raw.x = static_cast<unsigned short>(bits);
      return __half2float(__half(raw));
    }
    case DType::BFloat16: {
      __nv_bfloat16_raw raw;
      raw.x = static_cast<unsigned short>(bits);
      return __bfloat162float(__nv_bfloat16(raw));
    }
    case DType::Float8E4M3:
      return __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(bits), __NV_E4M3)));
    default: return __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(bits), __NV_E5M2)));
  }
}

// CUDA converts to float16 and bfloat16 with round-to-nearest-even and no saturation;
// Saturation::Finite is that result with infinity clamped to the largest finite value.
std::uint32_t cuda_encode(DType dtype, double x, Saturation saturation) {
  const __nv_saturation_t cuda_saturation = saturation == Saturation::Finite ? __NV_SATFINITE : __NV_NOSAT;
  switch (dtype) {
    case DType::Float16: {
      std::uint32_t bits = __half_as_ushort(__double2half(x));
      if (saturation == Saturation::Finite && (bits & 0x7fff) == 0x7c00) bits = (bits & 0x8000) | 0x7bff;
      return bits;
    }
    case DType::BFloat16: {
      std::uint32_t bits = __bfloat16_as_ushort(__double2bfloat16(x));
      if (saturation == Saturation::Finite && (bits & 0x7fff) == 0x7f80) bits = (bits & 0x8000) | 0x7f7f;
      return bits;
    }
    case DType::Float8E4M3: return __nv_cvt_double_to_fp8(x, cuda_saturation, __NV_E4M3);
    default: return __nv_cvt_double_to_fp8(x, cuda_saturation, __NV_E5M2);
  }
}

// The __nv_fp8_* constructors from float, which saturate to the largest finite value.
std::uint32_t cuda_fp8_from_float(DType dtype, float x) {
  if (dtype == DType::Float8E4M3) return __nv_fp8_e4m3(x).__x;
  return __nv_fp8_e5m2(x).__x;
}

std::uint32_t cuda_narrow_from_float(DType dtype, float x) {
  if (dtype == DType::Float16) return __half_as_ushort(__float2half(x));
  return __bfloat16_as_ushort(__float2bfloat16(x));
}
#else
#define REQUIRE_CUDA_HEADERS() \
  GTEST_SKIP() << "CUDA headers (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h) not found at configure time"

double cuda_decode(DType, std::uint32_t) { return 0; }
std::uint32_t cuda_encode(DType, double, Saturation) { return 0; }
std::uint32_t cuda_fp8_from_float(DType, float) { return 0; }
std::uint32_t cuda_narrow_from_float(DType, float) { return 0; }
#endif

int width(DType dtype) { return static_cast<int>(size_of(dtype)) * 8; }
// How many bit patterns a narrow format has (8 or 16 bits: the formats swept here).
std::uint32_t patterns(DType dtype) {
  const int bits = width(dtype);
  if (bits > 16) throw std::invalid_argument("patterns: a " + std::to_string(bits) + "-bit format is not swept");
  return std::uint32_t{1} << bits;
}

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Two encodings agree when they are the same pattern, or both are NaN (the NaN patterns
// of the two libraries may differ).
bool same_encoding(DType dtype, std::uint32_t a, std::uint32_t b) {
  if (a == b) return true;
  return std::isnan(cuda_decode(dtype, a)) && std::isnan(cuda_decode(dtype, b));
}

// Doubles that probe every rounding decision of a format: each value, the midpoints
// between neighbours and points a hair either side, overflow and underflow edges,
// infinities, NaNs, and random doubles over and beyond the format's range.
std::vector<double> probe_doubles(DType dtype) {
  std::vector<double> values;
  const std::uint32_t sign_bit = patterns(dtype) >> 1;
  for (std::uint32_t bits = 0; bits < sign_bit; ++bits) {
    const double a = cuda_decode(dtype, bits);
    const double b = cuda_decode(dtype, bits + 1);
    if (std::isnan(a)) continue;
    for (double sign : {1.0, -1.0}) values.push_back(sign * a);
    if (std::isnan(b) || std::isinf(b) || std::isinf(a)) continue;
    const double gap = b - a;
    const double midpoint = a + gap / 2;
    for (double x :
         {midpoint, std::nextafter(midpoint, 0.0), std::nextafter(midpoint, kInfinity), midpoint - gap * 0x1p-20,
          midpoint + gap * 0x1p-20, a + gap / 4, a + 3 * gap / 4, a + gap * 0x1p-30, b - gap * 0x1p-30}) {
      for (double sign : {1.0, -1.0}) values.push_back(sign * x);
    }
  }
  const double max = float_format(dtype).max_finite();
  for (double x :
       {max * (1 + 0x1p-5), max * (1 + 0x1p-4), max * (1 + 0x1p-3), max * 1.0625 + 1, max * 2, max * 1e10, 1e300,
        std::numeric_limits<double>::max(), kInfinity, kNaN, std::numeric_limits<double>::signaling_NaN(),
        std::bit_cast<double>(0x7ff0000000000001ull), std::bit_cast<double>(0x7ff7ffffffffffffull),
        std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::min(), 1e-300, 0.0}) {
    for (double sign : {1.0, -1.0}) values.push_back(sign * x);
  }
  const int lowest = std::ilogb(float_format(dtype).min_subnormal()) - 4;
  const int highest = std::ilogb(max) + 4;
  std::uint64_t state = 0xc0da + static_cast<std::uint64_t>(dtype);
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t random = mix64(state++);
    const int exponent = lowest + static_cast<int>(below(random, highest - lowest + 1));
    const double x = std::ldexp(1 + unit_interval(mix64(state++)), exponent);
    values.push_back((random & 1) ? -x : x);
    values.push_back(std::bit_cast<double>(mix64(state++)));
  }
  return values;
}

class CudaConversionTest : public ::testing::TestWithParam<DType> {};

INSTANTIATE_TEST_SUITE_P(NarrowFormats, CudaConversionTest,
                         ::testing::Values(DType::Float16, DType::BFloat16, DType::Float8E4M3, DType::Float8E5M2),
                         [](const ::testing::TestParamInfo<DType>& instance) {
                           return std::string(long_name(instance.param));
                         });

TEST_P(CudaConversionTest, DecodeEveryPattern) {
  REQUIRE_CUDA_HEADERS();
  const DType dtype = GetParam();
  const FloatFormat& format = float_format(dtype);
  Mismatches mismatches;
  for (std::uint32_t bits = 0; bits < patterns(dtype); ++bits) {
    const double ours = decode(format, bits);
    const double cuda = cuda_decode(dtype, bits);
    if (!same_value(ours, cuda)) {
      mismatches.add(hex(bits) + ": ours " + describe(ours) + ", CUDA " + describe(cuda));
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}

TEST_P(CudaConversionTest, EncodeProbeDoubles) {
  REQUIRE_CUDA_HEADERS();
  const DType dtype = GetParam();
  const FloatFormat& format = float_format(dtype);
  Mismatches mismatches;
  for (double x : probe_doubles(dtype)) {
    for (Saturation saturation : {Saturation::None, Saturation::Finite}) {
      const std::uint32_t ours = encode(format, x, saturation);
      const std::uint32_t cuda = cuda_encode(dtype, x, saturation);
      if (!same_encoding(dtype, ours, cuda)) {
        mismatches.add(describe(x) + (saturation == Saturation::None ? " None" : " Finite") + ": ours " + hex(ours) +
                       ", CUDA " + hex(cuda));
      }
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}

// From float, CUDA rounds once as well (float to double is exact), and the fp8 classes'
// constructors saturate to the largest finite value.
TEST_P(CudaConversionTest, EncodeFromFloat) {
  REQUIRE_CUDA_HEADERS();
  const DType dtype = GetParam();
  const FloatFormat& format = float_format(dtype);
  const bool fp8 = dtype == DType::Float8E4M3 || dtype == DType::Float8E5M2;
  Mismatches mismatches;
  std::uint64_t state = 0xf10a7;
  for (int i = 0; i < 300000; ++i) {
    const auto bits = static_cast<std::uint32_t>(mix64(state++));
    // Keep most draws near the format's range; float's full range comes in as well.
    const float x = (i % 3 == 0) ? std::bit_cast<float>(bits)
                                 : std::ldexp(std::bit_cast<float>((bits & 0x807fffff) | 0x3f800000),
                                              static_cast<int>(bits % 64) - 40);
    const Saturation saturation = fp8 ? Saturation::Finite : Saturation::None;
    const std::uint32_t ours = encode(format, static_cast<double>(x), saturation);
    const std::uint32_t cuda = fp8 ? cuda_fp8_from_float(dtype, x) : cuda_narrow_from_float(dtype, x);
    if (!same_encoding(dtype, ours, cuda)) {
      mismatches.add(describe(x) + ": ours " + hex(ours) + ", CUDA " + hex(cuda));
    }
  }
  EXPECT_EQ(mismatches.count(), 0u) << mismatches.report();
}

}  // namespace
}  // namespace collcheck
