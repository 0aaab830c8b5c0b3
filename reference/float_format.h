// Narrow float formats (float16, bfloat16, float8 e4m3 and e5m2) to and from double, and
// the numbers the oracle's error bounds need (unit roundoff, largest finite value, ulp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "reference/dtype.h"

namespace collcheck {

// What to do with a value too large for the format. `None` follows IEEE (infinity, or NaN
// for e4m3, which has no infinity); `Finite` clamps to the largest finite value, as CUDA's
// __NV_SATFINITE and the __nv_fp8_* constructors do (NaN stays NaN, infinity clamps).
enum class Saturation { None, Finite };

// A binary float format: 1 sign bit, `exponent_bits`, `mantissa_bits` stored fraction bits.
struct FloatFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_infinity;  // false for e4m3: all-ones exponent holds normal values, S.1111.111 is NaN

  int precision() const { return mantissa_bits + 1; }  // significand bits, implicit one included
  int min_exponent() const { return 1 - bias; }        // of the smallest normal
  double max_finite() const;
  double min_normal() const;
  double min_subnormal() const;
  double unit_roundoff() const;    // 2^-precision
  std::uint64_t nan_bits() const;  // the canonical quiet NaN, positive
};

// The format of a float dtype (also float32 and float64). Precondition: is_float(dtype).
const FloatFormat& float_format(DType);

// Round a double to the nearest value of the format, ties to even; subnormals kept.
std::uint64_t encode(const FloatFormat&, double value, Saturation = Saturation::None);
double decode(const FloatFormat&, std::uint64_t bits);

// Convenience names for the four narrow formats.
std::uint16_t float16_from_double(double, Saturation = Saturation::None);
std::uint16_t bfloat16_from_double(double, Saturation = Saturation::None);
std::uint8_t float8_e4m3_from_double(double, Saturation = Saturation::None);
std::uint8_t float8_e5m2_from_double(double, Saturation = Saturation::None);
double float16_to_double(std::uint16_t);
double bfloat16_to_double(std::uint16_t);
double float8_e4m3_to_double(std::uint8_t);
double float8_e5m2_to_double(std::uint8_t);

// Any dtype's element <-> double. Integers convert exactly when they fit (int64 and uint64
// beyond 2^53 round); bits are the element's little-endian bytes, zero-extended.
std::uint64_t encode(DType, double value, Saturation = Saturation::None);
double decode(DType, std::uint64_t bits);
// The same a batch at a time, the dtype's format chosen once: `values` encoded into `packed`, its
// elements packed little-endian (values.size() of them), or `packed` decoded into `values`.
void encode_all(DType, std::span<const double> values, std::span<std::byte> packed);
void decode_all(DType, std::span<const std::byte> packed, std::span<double> values);
// The distance from |value| to the next larger representable value of the dtype
// (1 for integers); the unit of "difference in ulps" in reports.
double ulp(DType, double value);
// The dtype's nearest value to `value` (ties to even), as a double.
double round_to(DType, double value);

}  // namespace collcheck
