// Round-to-nearest-even conversions between double and the narrow float formats, by counting
// the value in the format's quanta from its bits; decoding by fields (tables for speed).
#include "reference/float_format.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace collcheck {
namespace {

constexpr FloatFormat kFloat16{5, 10, 15, true};
constexpr FloatFormat kBFloat16{8, 7, 127, true};
constexpr FloatFormat kFloat32{8, 23, 127, true};
constexpr FloatFormat kFloat64{11, 52, 1023, true};
constexpr FloatFormat kFloat8E4M3{4, 3, 7, false};
constexpr FloatFormat kFloat8E5M2{5, 2, 15, true};

std::uint64_t all_ones(int bits) { return (std::uint64_t{1} << bits) - 1; }

// 2^e, built from its bits where it is a normal double (the hot paths), else by ldexp.
double pow2(int e) {
  if (e >= -1022 && e <= 1023) return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52);
  return std::ldexp(1.0, e);
}

// The exponent field that holds the largest finite values: with infinity the all-ones
// field is reserved; e4m3 uses it for normal values (all but its all-ones mantissa, NaN).
std::uint64_t top_field(const FloatFormat& format) {
  return all_ones(format.exponent_bits) - (format.has_infinity ? 1 : 0);
}

std::uint64_t largest_mantissa(const FloatFormat& format) {
  return all_ones(format.mantissa_bits) - (format.has_infinity ? 0 : 1);
}

double decode_fields(const FloatFormat& format, std::uint64_t bits) {
  const int width = format.exponent_bits + format.mantissa_bits;
  const bool negative = ((bits >> width) & 1u) != 0;
  const std::uint64_t exponent_field = (bits >> format.mantissa_bits) & all_ones(format.exponent_bits);
  const std::uint64_t mantissa = bits & all_ones(format.mantissa_bits);
  double magnitude;
  if (exponent_field > top_field(format) ||
      (exponent_field == top_field(format) && mantissa > largest_mantissa(format))) {
    // IEEE: the all-ones exponent is inf (mantissa 0) or NaN; e4m3: S.1111.111 is NaN.
    magnitude = format.has_infinity && mantissa == 0 ? std::numeric_limits<double>::infinity()
                                                     : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent_field == 0) {
    magnitude = static_cast<double>(mantissa) * pow2(format.min_exponent() - format.mantissa_bits);
  } else {
    const double significand = static_cast<double>((std::uint64_t{1} << format.mantissa_bits) | mantissa);
    magnitude = significand * pow2(static_cast<int>(exponent_field) - format.bias - format.mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

// Decoding tables for the 8- and 16-bit formats, built on first use.
std::vector<double> build_table(const FloatFormat& format) {
  std::vector<double> values(std::size_t{1} << (1 + format.exponent_bits + format.mantissa_bits));
  for (std::size_t bits = 0; bits < values.size(); ++bits) values[bits] = decode_fields(format, bits);
  return values;
}
const std::vector<double>& float16_table() {
  static const auto t = build_table(kFloat16);
  return t;
}
const std::vector<double>& bfloat16_table() {
  static const auto t = build_table(kBFloat16);
  return t;
}
const std::vector<double>& e4m3_table() {
  static const auto t = build_table(kFloat8E4M3);
  return t;
}
const std::vector<double>& e5m2_table() {
  static const auto t = build_table(kFloat8E5M2);
  return t;
}

bool same_format(const FloatFormat& a, const FloatFormat& b) {
  return a.exponent_bits == b.exponent_bits && a.mantissa_bits == b.mantissa_bits && a.bias == b.bias &&
         a.has_infinity == b.has_infinity;
}

// The table of a narrow format given by its fields, or null for any other format.
const std::vector<double>* table_of(const FloatFormat& format) {
  if (same_format(format, kFloat16)) return &float16_table();
  if (same_format(format, kBFloat16)) return &bfloat16_table();
  if (same_format(format, kFloat8E4M3)) return &e4m3_table();
  if (same_format(format, kFloat8E5M2)) return &e5m2_table();
  return nullptr;
}

std::uint64_t integer_mask(DType dtype) {
  const std::size_t bits = size_of(dtype) * 8;
  return bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

std::uint64_t encode_integer(DType dtype, double value) {
  if (std::isnan(value)) return 0;
  const std::size_t bits = size_of(dtype) * 8;
  if (is_signed(dtype)) {
    const double low = -std::ldexp(1.0, static_cast<int>(bits) - 1);
    const double high = -low;  // exclusive
    if (value <= low) return (std::uint64_t{1} << (bits - 1)) & integer_mask(dtype);
    if (value >= high) return integer_mask(dtype) >> 1;
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(value)) & integer_mask(dtype);
  }
  if (value <= 0) return 0;
  if (value >= std::ldexp(1.0, static_cast<int>(bits))) return integer_mask(dtype);
  return static_cast<std::uint64_t>(value);
}

double decode_integer(DType dtype, std::uint64_t bits) {
  bits &= integer_mask(dtype);
  if (!is_signed(dtype)) return static_cast<double>(bits);
  const std::size_t width = size_of(dtype) * 8;
  const std::uint64_t sign = std::uint64_t{1} << (width - 1);
  const auto value = static_cast<std::int64_t>((bits ^ sign) - sign);  // sign-extend
  return static_cast<double>(value);
}

}  // namespace

double FloatFormat::max_finite() const {
  const double significand = static_cast<double>((std::uint64_t{1} << mantissa_bits) | largest_mantissa(*this));
  return significand * pow2(static_cast<int>(top_field(*this)) - bias - mantissa_bits);
}
double FloatFormat::min_normal() const { return pow2(min_exponent()); }
double FloatFormat::min_subnormal() const { return pow2(min_exponent() - mantissa_bits); }
double FloatFormat::unit_roundoff() const { return pow2(-precision()); }
std::uint64_t FloatFormat::nan_bits() const {
  const std::uint64_t exponent = all_ones(exponent_bits) << mantissa_bits;
  return has_infinity ? exponent | (std::uint64_t{1} << (mantissa_bits - 1)) : exponent | all_ones(mantissa_bits);
}

const FloatFormat& float_format(DType dtype) {
  switch (dtype) {
    case DType::Float16: return kFloat16;
    case DType::BFloat16: return kBFloat16;
    case DType::Float64: return kFloat64;
    case DType::Float8E4M3: return kFloat8E4M3;
    case DType::Float8E5M2: return kFloat8E5M2;
    default: return kFloat32;
  }
}

namespace {

// A value in one of the format's normal binades, the common case, rounds in one step: its
// exponent and fraction as one integer, rounded to nearest, ties to even, at the format's mantissa
// width (a carry out of the fraction moves the exponent up, as it should), then moved to the
// format's bias: the magnitude's bits, or kNotNormal where the result is past `largest` or the
// value is anything else (zero, subnormal, NaN, infinity), which encode_fields handles.
constexpr std::uint64_t kNotNormal = ~std::uint64_t{0};
[[gnu::always_inline]] inline std::uint64_t encode_normal(const FloatFormat& format, std::uint64_t bits,
                                                          std::uint64_t largest) {
  const int m = format.mantissa_bits;
  const auto field = static_cast<int>((bits >> 52) & 0x7ff);
  if (m >= 52 || field < 1023 + format.min_exponent() || field == 0x7ff) return kNotNormal;
  const int drop = 52 - m;
  const std::uint64_t magnitude = bits & all_ones(63);
  const std::uint64_t rounded = (magnitude + (std::uint64_t{1} << (drop - 1)) - 1 + ((magnitude >> drop) & 1)) >> drop;
  const std::uint64_t result = rounded - (static_cast<std::uint64_t>(1023 - format.bias) << m);
  return result <= largest ? result : kNotNormal;
}

// encode()'s body, inlined where it is used: for a narrow dtype's format, a constant
// (encode_as), the format's fields fold into the code.
[[gnu::always_inline]] inline std::uint64_t encode_fields(const FloatFormat& format, double value,
                                                          Saturation saturation) {
  const auto bits = std::bit_cast<std::uint64_t>(value);
  const int m = format.mantissa_bits;
  const std::uint64_t sign = (bits >> 63) << (format.exponent_bits + m);
  const auto field = static_cast<int>((bits >> 52) & 0x7ff);
  const std::uint64_t fraction = bits & all_ones(52);
  const std::uint64_t largest = (top_field(format) << m) | largest_mantissa(format);
  const std::uint64_t overflow = saturation == Saturation::Finite ? largest
                                 : format.has_infinity            ? all_ones(format.exponent_bits) << m
                                                                  : format.nan_bits();
  if (const std::uint64_t normal = encode_normal(format, bits, largest); normal != kNotNormal) return sign | normal;
  if (field == 0x7ff) return fraction != 0 ? format.nan_bits() : sign | overflow;  // NaN, infinity
  if (field == 0 && fraction == 0) return sign;

  // Count the value in quanta of its binade (subnormals share the smallest normal's quantum): the
  // magnitude is significand * 2^(exponent - 52), so the count is the significand shifted right by
  // `drop` bits, rounded to nearest, ties to even, from the bits shifted out. A double subnormal
  // (field 0) lies below every format's smallest normal.
  const std::uint64_t significand = field == 0 ? fraction : fraction | (std::uint64_t{1} << 52);
  const int exponent = field == 0 ? -1022 : field - 1023;
  int binade = std::max(field == 0 ? -1023 : exponent, format.min_exponent());
  const int drop = 52 - m + (binade - exponent);
  std::uint64_t quanta = 0;
  if (drop == 0) {
    quanta = significand;
  } else if (drop < 64) {
    quanta = significand >> drop;
    const std::uint64_t rest = significand & all_ones(drop);
    const std::uint64_t half = std::uint64_t{1} << (drop - 1);
    if (rest > half || (rest == half && (quanta & 1) != 0)) ++quanta;
  }  // else: less than half a quantum (the significand has 53 bits), zero
  const std::uint64_t implicit_one = std::uint64_t{1} << m;
  if (quanta < implicit_one) return sign | quanta;  // subnormal (or rounded to zero)
  if (quanta == 2 * implicit_one) {                 // rounded up into the next binade
    quanta = implicit_one;
    ++binade;
  }
  // The biased exponent is at least 1 (binade >= min_exponent()), a small int: no overflow.
  const int biased_exponent = binade + format.bias;
  const auto biased = static_cast<std::uint64_t>(biased_exponent);
  const std::uint64_t mantissa = quanta - implicit_one;
  if (biased > top_field(format) || (biased == top_field(format) && mantissa > largest_mantissa(format))) {
    return sign | overflow;
  }
  return sign | (biased << m) | mantissa;
}

template <FloatFormat kFormat>
std::uint64_t encode_as(double value, Saturation saturation) {
  return encode_fields(kFormat, value, saturation);
}

}  // namespace

std::uint64_t encode(const FloatFormat& format, double value, Saturation saturation) {
  if (same_format(format, kFloat16)) return encode_as<kFloat16>(value, saturation);
  if (same_format(format, kBFloat16)) return encode_as<kBFloat16>(value, saturation);
  if (same_format(format, kFloat8E4M3)) return encode_as<kFloat8E4M3>(value, saturation);
  if (same_format(format, kFloat8E5M2)) return encode_as<kFloat8E5M2>(value, saturation);
  return encode_fields(format, value, saturation);
}

double decode(const FloatFormat& format, std::uint64_t bits) {
  if (const std::vector<double>* table = table_of(format)) return (*table)[bits & (table->size() - 1)];
  return decode_fields(format, bits);
}

std::uint16_t float16_from_double(double value, Saturation saturation) {
  return static_cast<std::uint16_t>(encode_as<kFloat16>(value, saturation));
}
std::uint16_t bfloat16_from_double(double value, Saturation saturation) {
  return static_cast<std::uint16_t>(encode_as<kBFloat16>(value, saturation));
}
std::uint8_t float8_e4m3_from_double(double value, Saturation saturation) {
  return static_cast<std::uint8_t>(encode_as<kFloat8E4M3>(value, saturation));
}
std::uint8_t float8_e5m2_from_double(double value, Saturation saturation) {
  return static_cast<std::uint8_t>(encode_as<kFloat8E5M2>(value, saturation));
}
double float16_to_double(std::uint16_t bits) { return float16_table()[bits]; }
double bfloat16_to_double(std::uint16_t bits) { return bfloat16_table()[bits]; }
double float8_e4m3_to_double(std::uint8_t bits) { return e4m3_table()[bits]; }
double float8_e5m2_to_double(std::uint8_t bits) { return e5m2_table()[bits]; }

std::uint64_t encode(DType dtype, double value, Saturation saturation) {
  switch (dtype) {
    case DType::Float64: return std::bit_cast<std::uint64_t>(value);
    case DType::Float32: {
      float narrow = static_cast<float>(value);
      if (saturation == Saturation::Finite && std::isinf(narrow)) {
        narrow = std::copysign(std::numeric_limits<float>::max(), narrow);
      }
      return std::bit_cast<std::uint32_t>(narrow);
    }
    case DType::Float16: return encode_as<kFloat16>(value, saturation);
    case DType::BFloat16: return encode_as<kBFloat16>(value, saturation);
    case DType::Float8E4M3: return encode_as<kFloat8E4M3>(value, saturation);
    case DType::Float8E5M2: return encode_as<kFloat8E5M2>(value, saturation);
    default: return encode_integer(dtype, value);
  }
}

double decode(DType dtype, std::uint64_t bits) {
  switch (dtype) {
    case DType::Float64: return std::bit_cast<double>(bits);
    case DType::Float32: return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    case DType::Float16: return float16_table()[bits & 0xffffu];
    case DType::BFloat16: return bfloat16_table()[bits & 0xffffu];
    case DType::Float8E4M3: return e4m3_table()[bits & 0xffu];
    case DType::Float8E5M2: return e5m2_table()[bits & 0xffu];
    default: return decode_integer(dtype, bits);
  }
}

namespace {

// Element by element through `encode_one` and `decode_one`, on elements of type Stored: a loop the
// compiler sees whole.
template <typename Stored, typename EncodeOne>
void encode_each(std::span<const double> values, std::span<std::byte> packed, EncodeOne encode_one) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto stored = static_cast<Stored>(encode_one(values[i]));
    std::memcpy(packed.data() + i * sizeof(Stored), &stored, sizeof(Stored));
  }
}

template <typename Stored, typename DecodeOne>
void decode_each(std::span<const std::byte> packed, std::span<double> values, DecodeOne decode_one) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    Stored stored;
    std::memcpy(&stored, packed.data() + i * sizeof(Stored), sizeof(Stored));
    values[i] = decode_one(stored);
  }
}

template <FloatFormat kFormat, typename Stored>
void encode_narrow(std::span<const double> values, std::span<std::byte> packed) {
  encode_each<Stored>(values, packed, [](double value) { return encode_as<kFormat>(value, Saturation::None); });
}

template <typename Stored>
void decode_by_table(std::span<const std::byte> packed, std::span<double> values, const std::vector<double>& table) {
  decode_each<Stored>(packed, values, [&table](Stored stored) { return table[stored]; });
}

}  // namespace

void encode_all(DType dtype, std::span<const double> values, std::span<std::byte> packed) {
  switch (dtype) {
    case DType::Float64: std::memcpy(packed.data(), values.data(), values.size_bytes()); return;
    case DType::Float32: return encode_each<float>(values, packed, [](double value) { return value; });
    case DType::Float16: return encode_narrow<kFloat16, std::uint16_t>(values, packed);
    case DType::BFloat16: return encode_narrow<kBFloat16, std::uint16_t>(values, packed);
    case DType::Float8E4M3: return encode_narrow<kFloat8E4M3, std::uint8_t>(values, packed);
    case DType::Float8E5M2: return encode_narrow<kFloat8E5M2, std::uint8_t>(values, packed);
    default:
      return by_element_width(dtype, [&](auto stored) {
        encode_each<decltype(stored)>(values, packed, [dtype](double value) { return encode_integer(dtype, value); });
      });
  }
}

void decode_all(DType dtype, std::span<const std::byte> packed, std::span<double> values) {
  switch (dtype) {
    case DType::Float64: std::memcpy(values.data(), packed.data(), values.size_bytes()); return;
    case DType::Float32: return decode_each<float>(packed, values, [](float stored) { return stored; });
    case DType::Float16: return decode_by_table<std::uint16_t>(packed, values, float16_table());
    case DType::BFloat16: return decode_by_table<std::uint16_t>(packed, values, bfloat16_table());
    case DType::Float8E4M3: return decode_by_table<std::uint8_t>(packed, values, e4m3_table());
    case DType::Float8E5M2: return decode_by_table<std::uint8_t>(packed, values, e5m2_table());
    default:
      return by_element_width(dtype, [&](auto stored) {
        decode_each<decltype(stored)>(packed, values, [dtype](auto bits) { return decode_integer(dtype, bits); });
      });
  }
}

double ulp(DType dtype, double value) {
  if (!is_float(dtype)) return 1;
  const FloatFormat& format = float_format(dtype);
  const double magnitude = std::fabs(value);
  if (!std::isfinite(magnitude)) return magnitude;
  if (magnitude < format.min_normal()) return format.min_subnormal();
  // The binade of a normal double is its exponent field; the ulp is a normal power of two
  // for every format (float64's smallest normal ulp is 2^-1074 only below its min_normal).
  const auto field = static_cast<std::int64_t>((std::bit_cast<std::uint64_t>(magnitude) >> 52) & 0x7ff);
  const std::int64_t ulp_field = field - format.mantissa_bits;
  if (ulp_field <= 0) return std::ldexp(1.0, static_cast<int>(field - 1023 - format.mantissa_bits));
  return std::bit_cast<double>(static_cast<std::uint64_t>(ulp_field) << 52);
}

double round_to(DType dtype, double value) {
  switch (dtype) {
    case DType::Float64: return value;
    case DType::Float32: return static_cast<float>(value);
    default: return decode(dtype, encode(dtype, value));
  }
}
}  // namespace collcheck
