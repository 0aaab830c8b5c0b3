// The one reduction-op contract every executor follows (the CPU ones here, the CUDA kernels
// later): what a ⊕ b is for each dtype and op, and how avg finishes.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "reference/collective.h"
#include "reference/dtype.h"
#include "reference/float_format.h"

namespace collcheck {

// out[i] = a[i] ⊕ b[i] for `count` packed elements; `out` may be `a` or `b`.
//   integers: sum and prod wrap around (two's complement); min and max in the type's order;
//   floats: computed in double from the decoded elements and rounded once to the dtype
//     (ties to even, overflow to ±inf; e4m3 to NaN), as NCCL rounds after every step;
//   min and max of floats propagate NaN (a NaN operand gives NaN);
//   avg reduces as sum: finish_average() divides at the end.
void reduce_elements(DType, RedOp, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count);

// a ⊕ b for two float elements decoded to double, before the one rounding to the dtype: the step
// reduce_elements takes for every float format (min and max propagate NaN; avg adds).
double reduce_values(RedOp, double a, double b);

// combine_decoded for one float type: elements of `Bits`, each decoded to double and the result
// encoded back by the type's own functions (the dtype chosen once per call, not per element).
template <typename Bits, typename Decode, typename Encode, typename Combine>
void combine_as(const std::byte* a, const std::byte* b, std::byte* out, std::size_t count, Decode decode_bits,
                Encode encode_value, Combine combine) {
  for (std::size_t i = 0; i < count; ++i) {
    Bits x, y;
    std::memcpy(&x, a + i * sizeof x, sizeof x);
    std::memcpy(&y, b + i * sizeof y, sizeof y);
    const Bits result = encode_value(combine(decode_bits(x), decode_bits(y)));
    std::memcpy(out + i * sizeof result, &result, sizeof result);
  }
}

// out[i] = combine(a[i], b[i]) for `count` packed float elements (a float dtype), each decoded to
// double and the result rounded once to the dtype: reduce_elements' float loop with its step given
// (the mutants' reductions give theirs). `out` may be `a` or `b`.
template <typename Combine>
void combine_decoded(DType dtype, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count,
                     Combine combine) {
  const auto rounded = [](auto to_bits) {
    return [to_bits](double value) { return to_bits(value, Saturation::None); };
  };
  switch (dtype) {
    case DType::Float16:
      return combine_as<std::uint16_t>(a, b, out, count, float16_to_double, rounded(float16_from_double), combine);
    case DType::BFloat16:
      return combine_as<std::uint16_t>(a, b, out, count, bfloat16_to_double, rounded(bfloat16_from_double), combine);
    case DType::Float8E4M3:
      return combine_as<std::uint8_t>(a, b, out, count, float8_e4m3_to_double, rounded(float8_e4m3_from_double),
                                      combine);
    case DType::Float8E5M2:
      return combine_as<std::uint8_t>(a, b, out, count, float8_e5m2_to_double, rounded(float8_e5m2_from_double),
                                      combine);
    case DType::Float32:
      return combine_as<std::uint32_t>(
          a, b, out, count, [](std::uint32_t bits) { return static_cast<double>(std::bit_cast<float>(bits)); },
          [](double value) { return std::bit_cast<std::uint32_t>(static_cast<float>(value)); }, combine);
    default:  // float64
      return combine_as<std::uint64_t>(
          a, b, out, count, [](std::uint64_t bits) { return std::bit_cast<double>(bits); },
          [](double value) { return std::bit_cast<std::uint64_t>(value); }, combine);
  }
}

// The same contract, faster: out = a ⊕ b with identical bits to reduce_elements for every dtype,
// op and input (NaN payloads included), computed natively for float32 and float64, read from a
// table of every pair's result for the float8s (made once, from reduce_elements), and through
// reduce_elements for the rest. `out` may be `a` or `b`.
void reduce_elements_fast(DType, RedOp, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count);
// Whether reduce_elements_fast computes `dtype` and `op` natively, in the hardware's float type
// (float32 and float64 sums, averages and products), and checks only NaN results by the contract.
inline bool native_sum_or_product(DType dtype, RedOp op) {
  return (dtype == DType::Float32 || dtype == DType::Float64) && op != RedOp::Min && op != RedOp::Max;
}

// The last step of avg on a fully reduced buffer: integers divide the wrapped sum, read as
// signed for signed types, by nranks truncating toward zero (NCCL's ncclAvg); floats divide
// and round once.
void finish_average(DType, std::byte* data, std::size_t count, int nranks);

}  // namespace collcheck
