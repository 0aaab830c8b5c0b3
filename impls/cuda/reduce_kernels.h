// The reduction contract of impls/link/reduce_op.h written as kernel bodies that compile for the
// device under nvcc and for the host under the C++ compiler: every dtype x op, and avg's last step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "impls/cuda/portable.h"
#include "reference/collective.h"
#include "reference/dtype.h"

namespace collcheck::cuda {

// The kernels work as follows. An element is combined as the contract says, not as CUDA's own
// operations would: integers wrap (computed in their unsigned type); a float is decoded to double,
// combined there and rounded once to its dtype, ties to even, with the rounding written out in
// integer arithmetic (no __float2half, whose fp8 cousins saturate: the contract overflows to inf,
// or NaN for e4m3); min and max propagate NaN (fminf and __hmin drop it); a NaN result is the
// dtype's quiet NaN (the oracle accepts any NaN where it expects one). Each combination is one
// operation followed by one rounding, so no multiply-add can be contracted into it, and the
// kernels are built with --fmad=false all the same. A span is taken 16 bytes at a time where the
// two inputs and the output share their offset within 16 bytes, after up to 15 bytes of head
// elements and before a tail of elements, each a scalar; otherwise element by element.
// Avg combines as sum; finish_average_span divides at the end.

// A narrow float format (bits <-> double), as the device can hold it.
struct NarrowFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_infinity;  // e4m3 has none: S.1111.111 is its only NaN
};

COLLCHECK_HOST_DEVICE inline std::uint32_t all_ones(int bits) { return (std::uint32_t{1} << bits) - 1; }

// 2^exponent for exponents a normal double holds.
COLLCHECK_HOST_DEVICE inline double power_of_two(int exponent) {
  return bit_cast<double>(static_cast<std::uint64_t>(exponent + 1023) << 52);
}

inline constexpr std::uint64_t kDoubleInfinity = 0x7ff0000000000000u;
inline constexpr std::uint64_t kDoubleNaN = 0x7ff8000000000000u;

// The exponent field of the largest finite values and their largest mantissa: with infinity the
// all-ones field is reserved; e4m3 uses it for all but its all-ones mantissa.
COLLCHECK_HOST_DEVICE inline std::uint32_t top_field(NarrowFormat format) {
  return all_ones(format.exponent_bits) - (format.has_infinity ? 1u : 0u);
}
COLLCHECK_HOST_DEVICE inline std::uint32_t largest_mantissa(NarrowFormat format) {
  return all_ones(format.mantissa_bits) - (format.has_infinity ? 0u : 1u);
}
COLLCHECK_HOST_DEVICE inline std::uint32_t nan_bits(NarrowFormat format) {
  const std::uint32_t exponent = all_ones(format.exponent_bits) << format.mantissa_bits;
  return format.has_infinity ? exponent | (std::uint32_t{1} << (format.mantissa_bits - 1))
                             : exponent | all_ones(format.mantissa_bits);
}

COLLCHECK_HOST_DEVICE inline double decode_narrow(NarrowFormat format, std::uint32_t bits) {
  const int mantissa_bits = format.mantissa_bits;
  const bool negative = ((bits >> (format.exponent_bits + mantissa_bits)) & 1u) != 0;
  const std::uint32_t field = (bits >> mantissa_bits) & all_ones(format.exponent_bits);
  const std::uint32_t mantissa = bits & all_ones(mantissa_bits);
  double magnitude;
  if (field > top_field(format) || (field == top_field(format) && mantissa > largest_mantissa(format))) {
    magnitude = bit_cast<double>(format.has_infinity && mantissa == 0 ? kDoubleInfinity : kDoubleNaN);
  } else if (field == 0) {
    magnitude = static_cast<double>(mantissa) * power_of_two(1 - format.bias - mantissa_bits);
  } else {
    const double significand = static_cast<double>((std::uint32_t{1} << mantissa_bits) | mantissa);
    magnitude = significand * power_of_two(static_cast<int>(field) - format.bias - mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

// The nearest value of the format to `value`, ties to even; beyond the largest finite value,
// infinity (NaN for e4m3). The double's 53-bit significand is shifted down to the quantum of the
// value's binade in the format (subnormals share the smallest normal's) and rounded on the bits
// shifted out.
COLLCHECK_HOST_DEVICE inline std::uint32_t encode_narrow(NarrowFormat format, double value) {
  const auto bits = bit_cast<std::uint64_t>(value);
  const int mantissa_bits = format.mantissa_bits;
  const std::uint32_t sign = static_cast<std::uint32_t>(bits >> 63) << (format.exponent_bits + mantissa_bits);
  const auto biased = static_cast<int>((bits >> 52) & 0x7ff);
  const std::uint32_t overflow =
      format.has_infinity ? all_ones(format.exponent_bits) << mantissa_bits : nan_bits(format);
  if (biased == 0x7ff) return (bits & 0xfffffffffffffu) != 0 ? nan_bits(format) : sign | overflow;
  if (biased == 0) return sign;  // zero, or below 2^-1022: far below any narrow format's least value
  const std::uint64_t significand = (bits & 0xfffffffffffffu) | (std::uint64_t{1} << 52);
  const int exponent = biased - 1023;
  int binade = exponent > 1 - format.bias ? exponent : 1 - format.bias;
  const int shift = 52 - mantissa_bits + (binade - exponent);  // at least 52 - mantissa_bits
  if (shift > 54) return sign;                                 // below half the least quantum
  std::uint64_t quanta = significand >> shift;
  const std::uint64_t rest = significand & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  if (rest > half || (rest == half && (quanta & 1u) != 0)) ++quanta;
  const std::uint64_t implicit_one = std::uint64_t{1} << mantissa_bits;
  if (quanta < implicit_one) return sign | static_cast<std::uint32_t>(quanta);  // subnormal or zero
  if (quanta == 2 * implicit_one) {                                             // into the next binade
    quanta = implicit_one;
    ++binade;
  }
  const auto field = static_cast<std::uint32_t>(binade + format.bias);
  const auto mantissa = static_cast<std::uint32_t>(quanta - implicit_one);
  if (field > top_field(format) || (field == top_field(format) && mantissa > largest_mantissa(format))) {
    return sign | overflow;
  }
  return sign | (field << mantissa_bits) | mantissa;
}

// What each dtype is stored as, and for floats how it decodes to double and encodes back.
template <DType kDType>
struct Element;

template <typename Integer>
struct IntegerElement {
  using Storage = Integer;
  static constexpr bool kFloat = false;
};
template <>
struct Element<DType::Int8> : IntegerElement<std::int8_t> {};
template <>
struct Element<DType::UInt8> : IntegerElement<std::uint8_t> {};
template <>
struct Element<DType::Int32> : IntegerElement<std::int32_t> {};
template <>
struct Element<DType::UInt32> : IntegerElement<std::uint32_t> {};
template <>
struct Element<DType::Int64> : IntegerElement<std::int64_t> {};
template <>
struct Element<DType::UInt64> : IntegerElement<std::uint64_t> {};

// The format's fields are template arguments: a constant the device code of every instance holds.
template <typename Bits, int kExponentBits, int kMantissaBits, int kBias, bool kHasInfinity>
struct NarrowElement {
  using Storage = Bits;
  static constexpr bool kFloat = true;
  COLLCHECK_HOST_DEVICE static NarrowFormat format() {
    return NarrowFormat{kExponentBits, kMantissaBits, kBias, kHasInfinity};
  }
  COLLCHECK_HOST_DEVICE static double decode(Bits bits) { return decode_narrow(format(), bits); }
  COLLCHECK_HOST_DEVICE static Bits encode(double value) { return static_cast<Bits>(encode_narrow(format(), value)); }
  COLLCHECK_HOST_DEVICE static Bits nan() { return static_cast<Bits>(nan_bits(format())); }
};
template <>
struct Element<DType::Float16> : NarrowElement<std::uint16_t, 5, 10, 15, true> {};
template <>
struct Element<DType::BFloat16> : NarrowElement<std::uint16_t, 8, 7, 127, true> {};
template <>
struct Element<DType::Float8E4M3> : NarrowElement<std::uint8_t, 4, 3, 7, false> {};
template <>
struct Element<DType::Float8E5M2> : NarrowElement<std::uint8_t, 5, 2, 15, true> {};

// float32 through double: a sum or product of two floats computed in double and rounded once is
// the correctly rounded float result (53 >= 2 * 24 + 2), and the conversion rounds to nearest even.
template <>
struct Element<DType::Float32> {
  using Storage = std::uint32_t;
  static constexpr bool kFloat = true;
  COLLCHECK_HOST_DEVICE static double decode(Storage bits) { return bit_cast<float>(bits); }
  COLLCHECK_HOST_DEVICE static Storage encode(double value) { return bit_cast<Storage>(static_cast<float>(value)); }
  COLLCHECK_HOST_DEVICE static Storage nan() { return 0x7fc00000u; }
};
template <>
struct Element<DType::Float64> {
  using Storage = std::uint64_t;
  static constexpr bool kFloat = true;
  COLLCHECK_HOST_DEVICE static double decode(Storage bits) { return bit_cast<double>(bits); }
  COLLCHECK_HOST_DEVICE static Storage encode(double value) { return bit_cast<Storage>(value); }
  COLLCHECK_HOST_DEVICE static Storage nan() { return kDoubleNaN; }
};

// x ⊕ y of two integers: wrapping sum and product, in the unsigned type.
template <typename Integer, RedOp kOp>
COLLCHECK_HOST_DEVICE Integer combine_integers(Integer x, Integer y) {
  using Unsigned = std::make_unsigned_t<Integer>;
  if constexpr (kOp == RedOp::Min) return y < x ? y : x;
  if constexpr (kOp == RedOp::Max) return y > x ? y : x;
  if constexpr (kOp == RedOp::Prod) {
    return static_cast<Integer>(static_cast<Unsigned>(static_cast<Unsigned>(x) * static_cast<Unsigned>(y)));
  }
  return static_cast<Integer>(static_cast<Unsigned>(static_cast<Unsigned>(x) + static_cast<Unsigned>(y)));
}

// x ⊕ y of two floats of the same dtype, in double, rounded once; NaN in or out gives the dtype's NaN.
template <DType kDType, RedOp kOp>
COLLCHECK_HOST_DEVICE typename Element<kDType>::Storage combine_floats(typename Element<kDType>::Storage x,
                                                                       typename Element<kDType>::Storage y) {
  using E = Element<kDType>;
  const double a = E::decode(x);
  const double b = E::decode(y);
  if (a != a || b != b) return E::nan();
  double result;
  if constexpr (kOp == RedOp::Min) {
    result = b < a ? b : a;
  } else if constexpr (kOp == RedOp::Max) {
    result = b > a ? b : a;
  } else if constexpr (kOp == RedOp::Prod) {
    result = a * b;
  } else {
    result = a + b;
  }
  if (result != result) return E::nan();  // inf - inf, 0 * inf
  return E::encode(result);
}

// x ⊕ y of one element pair, as the contract says.
template <DType kDType, RedOp kOp>
COLLCHECK_HOST_DEVICE typename Element<kDType>::Storage combine(typename Element<kDType>::Storage x,
                                                                typename Element<kDType>::Storage y) {
  if constexpr (Element<kDType>::kFloat) {
    return combine_floats<kDType, kOp>(x, y);
  } else {
    return combine_integers<typename Element<kDType>::Storage, kOp>(x, y);
  }
}

// out[i] = a[i] ⊕ b[i] for `count` packed elements, this thread's share of them (`lanes`); `out`
// may be `a` or `b`. Avg is given as Sum.
template <DType kDType, RedOp kOp>
COLLCHECK_HOST_DEVICE void reduce_span(const std::byte* a, const std::byte* b, std::byte* out, std::size_t count,
                                       Lanes lanes) {
  using Storage = typename Element<kDType>::Storage;
  constexpr std::size_t kSize = sizeof(Storage);
  constexpr std::size_t kPerVector = 16 / kSize;
  const auto one = [&](std::size_t i) {
    store<Storage>(out + i * kSize, combine<kDType, kOp>(load<Storage>(a + i * kSize), load<Storage>(b + i * kSize)));
  };
  const auto offset = [](const std::byte* at) { return reinterpret_cast<std::uintptr_t>(at) % 16; };
  std::size_t head = count;
  std::size_t vectors = 0;
  const std::uintptr_t misaligned = offset(out);
  if (offset(a) == misaligned && offset(b) == misaligned && misaligned % kSize == 0) {
    const std::size_t before = (16 - misaligned) % 16 / kSize;
    head = before < count ? before : count;
    vectors = (count - head) / kPerVector;
  }
  for (std::size_t i = lanes.index; i < head; i += lanes.count) one(i);
  for (std::size_t vector = lanes.index; vector < vectors; vector += lanes.count) {
    const std::size_t at = (head + vector * kPerVector) * kSize;
    Storage xs[kPerVector], ys[kPerVector];
    const Bytes16 x = load16(a + at), y = load16(b + at);
    std::memcpy(xs, &x, 16);
    std::memcpy(ys, &y, 16);
    for (std::size_t lane = 0; lane < kPerVector; ++lane) xs[lane] = combine<kDType, kOp>(xs[lane], ys[lane]);
    Bytes16 result;
    std::memcpy(&result, xs, 16);
    store16(out + at, result);
  }
  for (std::size_t i = head + vectors * kPerVector + lanes.index; i < count; i += lanes.count) one(i);
}

// Avg's last step on a fully reduced span: integers divide the wrapped sum (read as signed for
// signed types) by nranks truncating toward zero, in 64 bits; floats divide in double and round once.
template <DType kDType>
COLLCHECK_HOST_DEVICE void finish_average_span(std::byte* data, std::size_t count, int nranks, Lanes lanes) {
  using E = Element<kDType>;
  using Storage = typename E::Storage;
  for (std::size_t i = lanes.index; i < count; i += lanes.count) {
    const Storage value = load<Storage>(data + i * sizeof(Storage));
    Storage result;
    if constexpr (!E::kFloat) {
      using Wide = std::conditional_t<std::is_signed_v<Storage>, std::int64_t, std::uint64_t>;
      result = static_cast<Storage>(static_cast<Wide>(value) / static_cast<Wide>(nranks));
    } else {
      const double quotient = E::decode(value) / nranks;
      result = quotient != quotient ? E::nan() : E::encode(quotient);
    }
    store<Storage>(data + i * sizeof(Storage), result);
  }
}

// Calls visitor.template operator()<D, O>() with the dtype and op given at run time (avg as sum):
// how a launcher, on the host, picks the kernel instance.
template <RedOp kOp, typename Visitor>
void visit_dtype(DType dtype, Visitor&& visitor) {
  switch (dtype) {
    case DType::Int8: return visitor.template operator()<DType::Int8, kOp>();
    case DType::UInt8: return visitor.template operator()<DType::UInt8, kOp>();
    case DType::Int32: return visitor.template operator()<DType::Int32, kOp>();
    case DType::UInt32: return visitor.template operator()<DType::UInt32, kOp>();
    case DType::Int64: return visitor.template operator()<DType::Int64, kOp>();
    case DType::UInt64: return visitor.template operator()<DType::UInt64, kOp>();
    case DType::Float16: return visitor.template operator()<DType::Float16, kOp>();
    case DType::BFloat16: return visitor.template operator()<DType::BFloat16, kOp>();
    case DType::Float32: return visitor.template operator()<DType::Float32, kOp>();
    case DType::Float64: return visitor.template operator()<DType::Float64, kOp>();
    case DType::Float8E4M3: return visitor.template operator()<DType::Float8E4M3, kOp>();
    case DType::Float8E5M2: return visitor.template operator()<DType::Float8E5M2, kOp>();
  }
}

template <typename Visitor>
void visit_dtype_and_op(DType dtype, RedOp op, Visitor&& visitor) {
  switch (op) {
    case RedOp::Prod: return visit_dtype<RedOp::Prod>(dtype, visitor);
    case RedOp::Min: return visit_dtype<RedOp::Min>(dtype, visitor);
    case RedOp::Max: return visit_dtype<RedOp::Max>(dtype, visitor);
    default: return visit_dtype<RedOp::Sum>(dtype, visitor);
  }
}

}  // namespace collcheck::cuda
