// The element types collectives move and reduce: sizes, names, and the spellings users type.
// Conversions between the narrow float formats and double live in float_format.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "reference/result.h"

namespace collcheck {

enum class DType {
  Int8,
  UInt8,
  Int32,
  UInt32,
  Int64,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Float8E4M3,
  Float8E5M2,
};

// Every dtype, in the order above (the order `collcheck list` prints).
std::span<const DType> all_dtypes();

constexpr std::size_t size_of(DType dtype) {
  switch (dtype) {
    case DType::Int8:
    case DType::UInt8:
    case DType::Float8E4M3:
    case DType::Float8E5M2: return 1;
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::Int32:
    case DType::UInt32:
    case DType::Float32: return 4;
    default: return 8;
  }
}
// Canonical short name, as the Case text form writes it: i8 u8 i32 u32 i64 u64 f16 bf16 f32
// f64 f8e4m3 f8e5m2.
std::string_view name(DType);
// The long name (`float16`, `float8_e4m3`) and the names NCCL's ncclDataType_t uses.
std::string_view long_name(DType);
std::string_view nccl_name(DType);

bool is_float(DType);
bool is_signed(DType);  // floats are signed

// Accepts the canonical and long names, NCCL's (`ncclFloat16`, `ncclBfloat16`), nccl-tests'
// `-d` spellings (`int8`, `uint8`, `int32`, `uint32`, `int64`, `uint64`, `half`, `float`,
// `double`, `bfloat16`, `f8e4m3`, `f8e5m2`) and common C/PyTorch ones (`char`, `int`, `fp16`,
// `bf16`, `fp32`, `fp64`, `fp8e4m3`, `e4m3`, `float8_e4m3fn`, …). Case-insensitive.
Result<DType> parse_dtype(std::string_view text);

// "i8, u8, …": for error messages that list what is allowed.
std::string dtype_choices();

// Whether two buffers hold the same bytes, at memcmp's speed: libstdc++ 12 compares two
// std::vector<std::byte> with == a byte at a time (it takes memcmp only for character types).
inline bool same_bytes(std::span<const std::byte> a, std::span<const std::byte> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

// Calls `each` with a zero of the unsigned integer type as wide as the dtype's element: the one
// place an element's width is chosen, for single elements and for loops that choose it once.
template <typename Each>
decltype(auto) by_element_width(DType dtype, Each each) {
  switch (size_of(dtype)) {
    case 1: return each(std::uint8_t{});
    case 2: return each(std::uint16_t{});
    case 4: return each(std::uint32_t{});
    default: return each(std::uint64_t{});
  }
}

// Reads element `index` of a packed buffer of dtype elements as bits (little-endian, as
// every platform collcheck runs on stores them).
inline std::uint64_t load_bits(DType dtype, std::span<const std::byte> buffer, std::size_t index) {
  return by_element_width(dtype, [&](auto width) -> std::uint64_t {
    decltype(width) narrow;
    std::memcpy(&narrow, buffer.data() + index * sizeof narrow, sizeof narrow);
    return narrow;
  });
}

inline void store_bits(DType dtype, std::span<std::byte> buffer, std::size_t index, std::uint64_t bits) {
  by_element_width(dtype, [&](auto width) {
    const auto narrow = static_cast<decltype(width)>(bits);
    std::memcpy(buffer.data() + index * sizeof narrow, &narrow, sizeof narrow);
  });
}

// store_bits of every one of `bits` in turn, from element 0 of `buffer`.
inline void store_all_bits(DType dtype, std::span<const std::uint64_t> bits, std::span<std::byte> buffer) {
  by_element_width(dtype, [&](auto width) {
    for (std::size_t i = 0; i < bits.size(); ++i) {
      const auto narrow = static_cast<decltype(width)>(bits[i]);
      std::memcpy(buffer.data() + i * sizeof narrow, &narrow, sizeof narrow);
    }
  });
}

}  // namespace collcheck
