// The reduction-op contract on packed CPU buffers: a typed loop per integer type, the narrow
// float formats through double with one rounding per step, and for the fast one a native
// float32/float64 path, float16 and bfloat16 through float32, and float8 tables.
#include "impls/link/reduce_op.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>
#include <vector>

#include "reference/float_format.h"

namespace collcheck {

namespace {

// a ⊕ b in double for one op (avg adds): reduce_values' body, the op fixed so that a loop over
// elements chooses it once.
template <RedOp kOp>
double reduce_value(double x, double y) {
  if constexpr (kOp == RedOp::Prod) {
    return x * y;
  } else if constexpr (kOp == RedOp::Min) {
    if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
    return y < x ? y : x;
  } else if constexpr (kOp == RedOp::Max) {
    if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
    return y > x ? y : x;
  } else {
    return x + y;
  }
}

}  // namespace

double reduce_values(RedOp op, double x, double y) {
  switch (op) {
    case RedOp::Prod: return reduce_value<RedOp::Prod>(x, y);
    case RedOp::Min: return reduce_value<RedOp::Min>(x, y);
    case RedOp::Max: return reduce_value<RedOp::Max>(x, y);
    default: return reduce_value<RedOp::Sum>(x, y);
  }
}

namespace {

template <typename T>
T load(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

template <typename T>
void store(std::byte* at, T value) {
  std::memcpy(at, &value, sizeof value);
}

// Integers in their unsigned type, so that wraparound is defined: one loop per op (the op chosen
// once per call, so that each loop vectorises).
template <typename T, typename Combine>
void combine_integers(const std::byte* a, const std::byte* b, std::byte* out, std::size_t count, Combine combine) {
  for (std::size_t i = 0; i < count; ++i) {
    store<T>(out + i * sizeof(T), combine(load<T>(a + i * sizeof(T)), load<T>(b + i * sizeof(T))));
  }
}

template <typename T>
void reduce_integers(RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  using Unsigned = std::make_unsigned_t<T>;
  switch (op) {
    case RedOp::Prod:
      return combine_integers<T>(a, b, out, count, [](T x, T y) {
        return static_cast<T>(static_cast<Unsigned>(static_cast<Unsigned>(x) * static_cast<Unsigned>(y)));
      });
    case RedOp::Min: return combine_integers<T>(a, b, out, count, [](T x, T y) { return y < x ? y : x; });
    case RedOp::Max: return combine_integers<T>(a, b, out, count, [](T x, T y) { return y > x ? y : x; });
    default:
      return combine_integers<T>(a, b, out, count, [](T x, T y) {
        return static_cast<T>(static_cast<Unsigned>(static_cast<Unsigned>(x) + static_cast<Unsigned>(y)));
      });
  }
}

// The op chosen once per call, not per element.
void reduce_floats(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  switch (op) {
    case RedOp::Prod: return combine_decoded(dtype, a, b, out, count, reduce_value<RedOp::Prod>);
    case RedOp::Min: return combine_decoded(dtype, a, b, out, count, reduce_value<RedOp::Min>);
    case RedOp::Max: return combine_decoded(dtype, a, b, out, count, reduce_value<RedOp::Max>);
    default: return combine_decoded(dtype, a, b, out, count, reduce_value<RedOp::Sum>);
  }
}

template <typename T>
void divide_integers(std::byte* data, std::size_t count, int nranks) {
  for (std::size_t i = 0; i < count; ++i) {
    const T sum = load<T>(data + i * sizeof(T));
    // In 64 bits, so that nranks need not fit T; C++ division truncates toward zero.
    using Wide = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
    store<T>(data + i * sizeof(T), static_cast<T>(static_cast<Wide>(sum) / static_cast<Wide>(nranks)));
  }
}

// Native reduction. reduce_elements decodes every element through double, which is exact but
// about twenty times slower than memory; for float32 and float64 the native operation gives the
// same bits: a sum or product of two floats computed in double and rounded once equals the
// float operation (53 >= 2*24+2, so double rounding is innocuous), and min and max compare
// exactly. Only a NaN's payload depends on how the contract computes it, so an element whose
// result is NaN is computed again by reduce_elements itself. Blocks of L1 size keep the inputs
// intact until then, since `out` may be `a` or `b`.

// One block's results into `block` by `combine`; whether any of them is NaN.
template <typename T, typename Combine>
bool combine_block(const std::byte* x, const std::byte* y, std::size_t n, T* block, Combine combine) {
  bool any_nan = false;
  for (std::size_t i = 0; i < n; ++i) {
    block[i] = combine(load<T>(x + i * sizeof(T)), load<T>(y + i * sizeof(T)));
    any_nan |= block[i] != block[i];
  }
  return any_nan;
}

// Calls `each` with the native operation of `op` on T (avg adds; min and max give NaN for a NaN
// operand, as the contract does), chosen once for a loop.
template <typename T, typename Each>
[[gnu::always_inline]] inline bool with_native_op(RedOp op, Each each) {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  switch (op) {
    case RedOp::Prod: return each([](T p, T q) { return p * q; });
    case RedOp::Min: return each([nan](T p, T q) { return p != p || q != q ? nan : (q < p ? q : p); });
    case RedOp::Max: return each([nan](T p, T q) { return p != p || q != q ? nan : (q > p ? q : p); });
    default: return each([](T p, T q) { return p + q; });
  }
}

// One block by the native operation of `op`; whether any result is NaN.
template <typename T>
bool reduce_block_native(RedOp op, const std::byte* x, const std::byte* y, std::size_t n, T* block) {
  return with_native_op<T>(op, [&](auto combine) { return combine_block(x, y, n, block, combine); });
}

// The block's NaN results computed again by the contract, for their payloads.
template <typename T>
void redo_nans(DType dtype, RedOp op, const std::byte* x, const std::byte* y, std::size_t n, T* block) {
  for (std::size_t i = 0; i < n; ++i) {
    if (block[i] != block[i]) {
      reduce_elements(dtype, op, x + i * sizeof(T), y + i * sizeof(T), reinterpret_cast<std::byte*>(&block[i]), 1);
    }
  }
}

// Elements in a block of results computed before any is stored (about L1's size in float32).
constexpr std::size_t kBlock = 2048;

// Elements [first, end) through a block of L1 size: results computed whole before any is stored,
// those that are NaN computed again by the contract from the inputs, still intact.
template <typename T>
void reduce_in_blocks(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t first,
                      std::size_t end) {
  T block[kBlock];
  for (; first < end; first += kBlock) {
    const std::size_t n = std::min(kBlock, end - first);
    const std::byte* x = a + first * sizeof(T);
    const std::byte* y = b + first * sizeof(T);
    if (reduce_block_native<T>(op, x, y, n, block)) redo_nans(dtype, op, x, y, n, block);
    std::memcpy(out + first * sizeof(T), block, n * sizeof(T));
  }
}

// Sums and products stored straight into `out`, a group of kGroupBytes at a time: the group's
// inputs are all read and its results computed in registers before any is stored, so `out` may
// be `a` or `b`; a group with a NaN result (rare) goes through reduce_in_blocks instead, as do
// the elements past the last whole group. Vectors of 64 bytes, split by the compiler into what
// the processor has: compiled for AVX-512 and AVX2 too, the processor choosing at run time (not
// under the sanitizers: reference/inputs.cc says why). About twice the speed of the blocks.
constexpr std::size_t kGroupBytes = 256;

// 64 bytes of float or double as one vector (GCC's vector extensions; the compiler splits it into
// the processor's registers).
using Floats64 = float __attribute__((vector_size(64)));
using Doubles64 = double __attribute__((vector_size(64)));
template <typename T>
using Vector64 = std::conditional_t<std::is_same_v<T, float>, Floats64, Doubles64>;

template <typename T, bool kProduct>
[[gnu::always_inline]] inline void combine_in_groups(DType dtype, RedOp op, const std::byte* a, const std::byte* b,
                                                     std::byte* out, std::size_t count) {
  using Lanes = Vector64<T>;
  using Mask = decltype(Lanes{} != Lanes{});
  constexpr std::size_t kVectors = kGroupBytes / sizeof(Lanes);
  constexpr std::size_t kPerGroup = kGroupBytes / sizeof(T);
  std::size_t first = 0;
  for (; first + kPerGroup <= count; first += kPerGroup) {
    const std::size_t at = first * sizeof(T);
    Lanes results[kVectors];
    Mask nan{};
    for (std::size_t v = 0; v < kVectors; ++v) {
      Lanes p, q;
      std::memcpy(&p, a + at + v * sizeof(Lanes), sizeof p);
      std::memcpy(&q, b + at + v * sizeof(Lanes), sizeof q);
      if constexpr (kProduct) {
        results[v] = p * q;
      } else {
        results[v] = p + q;
      }
      nan |= results[v] != results[v];
    }
    std::uint64_t words[sizeof(Mask) / 8];
    std::memcpy(words, &nan, sizeof words);
    std::uint64_t any = 0;
    for (std::uint64_t word : words) any |= word;
    if (any != 0) {
      reduce_in_blocks<T>(dtype, op, a, b, out, first, first + kPerGroup);
      continue;
    }
    std::memcpy(out + at, results, sizeof results);
  }
  reduce_in_blocks<T>(dtype, op, a, b, out, first, count);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
void sum_or_product(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  const bool product = op == RedOp::Prod;
  if (dtype == DType::Float32) {
    return product ? combine_in_groups<float, true>(dtype, op, a, b, out, count)
                   : combine_in_groups<float, false>(dtype, op, a, b, out, count);
  }
  return product ? combine_in_groups<double, true>(dtype, op, a, b, out, count)
                 : combine_in_groups<double, false>(dtype, op, a, b, out, count);
}

// Float16 and bfloat16 through float32: each operand widened exactly, combined by the float
// operation, the result narrowed once to nearest even. The same bits as the contract's one rounding
// from double: a sum or product of two such values rounded to float32 and then to 16 bits is in
// effect rounded once (double rounding is innocuous where 24 >= 2p+2: p = 11 and 8, subnormals
// too, since float32 keeps float16's range and loses bits with bfloat16's), and min and max compare
// exactly. A block with a NaN result is computed again by the contract (its payload). Float16's
// conversions are the processor's (F16C) in the x86-64-v3 and v4 clones; without a _Float16 type
// (clang before 15 on x86) float16 keeps the contract's loop.
#if defined(__FLT16_MAX__)
constexpr bool kHalfConversions = true;
#else
constexpr bool kHalfConversions = false;
#endif

template <DType kDtype>
[[gnu::always_inline]] inline float widen(std::uint16_t bits) {
  if constexpr (kDtype == DType::BFloat16) {
    return std::bit_cast<float>(std::uint32_t{bits} << 16);
  } else {
#if defined(__FLT16_MAX__)
    return static_cast<float>(std::bit_cast<_Float16>(bits));
#else
    return static_cast<float>(bits);           // not reached: kHalfConversions
#endif
  }
}

template <DType kDtype>
[[gnu::always_inline]] inline std::uint16_t narrow(float value) {
  if constexpr (kDtype == DType::BFloat16) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);  // NaNs are redone
  } else {
#if defined(__FLT16_MAX__)
    return std::bit_cast<std::uint16_t>(static_cast<_Float16>(value));
#else
    return static_cast<std::uint16_t>(value);  // not reached: kHalfConversions
#endif
  }
}

// One block of 16-bit results into `block` by `combine` in float32; whether any is NaN.
template <DType kDtype, typename Combine>
[[gnu::always_inline]] inline bool combine_halves(const std::byte* x, const std::byte* y, std::size_t n,
                                                  std::uint16_t* block, Combine combine) {
  bool any_nan = false;
  for (std::size_t i = 0; i < n; ++i) {
    const float result =
        combine(widen<kDtype>(load<std::uint16_t>(x + 2 * i)), widen<kDtype>(load<std::uint16_t>(y + 2 * i)));
    any_nan |= result != result;
    block[i] = narrow<kDtype>(result);
  }
  return any_nan;
}

template <DType kDtype>
[[gnu::always_inline]] inline void reduce_halves_of(RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
                                                    std::size_t count) {
  std::uint16_t block[kBlock];
  for (std::size_t first = 0; first < count; first += kBlock) {
    const std::size_t n = std::min(kBlock, count - first);
    const std::byte* x = a + first * 2;
    const std::byte* y = b + first * 2;
    const bool any_nan =
        with_native_op<float>(op, [&](auto combine) { return combine_halves<kDtype>(x, y, n, block, combine); });
    if (any_nan) reduce_elements(kDtype, op, x, y, reinterpret_cast<std::byte*>(block), n);
    std::memcpy(out + first * 2, block, n * 2);
  }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
void reduce_halves(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  if (dtype == DType::BFloat16) return reduce_halves_of<DType::BFloat16>(op, a, b, out, count);
  if constexpr (kHalfConversions) return reduce_halves_of<DType::Float16>(op, a, b, out, count);
}

// Float8 reductions by table: 2^16 results a dtype and op (a byte each, 64 KiB), indexed by the two
// operands' bits, made once on first use from reduce_elements itself, so every result is its bits
// by construction (NaN payloads and saturation included). Avg reduces as sum.
const std::uint8_t* float8_results(DType dtype, RedOp op) {
  constexpr std::size_t kPairs = std::size_t{1} << 16;
  constexpr std::size_t kOps = 4;  // sum (and avg), prod, min, max
  static std::array<std::once_flag, 2 * kOps> made;
  static std::array<std::array<std::uint8_t, kPairs>, 2 * kOps> results;
  const RedOp reduced = op == RedOp::Avg ? RedOp::Sum : op;
  std::size_t which = reduced == RedOp::Prod ? 1 : reduced == RedOp::Min ? 2 : reduced == RedOp::Max ? 3 : 0;
  if (dtype == DType::Float8E5M2) which += kOps;
  std::call_once(made[which], [&] {
    std::vector<std::uint8_t> first(kPairs), second(kPairs);
    for (std::size_t pair = 0; pair < kPairs; ++pair) {
      first[pair] = static_cast<std::uint8_t>(pair >> 8);
      second[pair] = static_cast<std::uint8_t>(pair);
    }
    reduce_elements(dtype, reduced, reinterpret_cast<const std::byte*>(first.data()),
                    reinterpret_cast<const std::byte*>(second.data()),
                    reinterpret_cast<std::byte*>(results[which].data()), kPairs);
  });
  return results[which].data();
}

}  // namespace

void reduce_elements(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  switch (dtype) {
    case DType::Int8: return reduce_integers<std::int8_t>(op, a, b, out, count);
    case DType::UInt8: return reduce_integers<std::uint8_t>(op, a, b, out, count);
    case DType::Int32: return reduce_integers<std::int32_t>(op, a, b, out, count);
    case DType::UInt32: return reduce_integers<std::uint32_t>(op, a, b, out, count);
    case DType::Int64: return reduce_integers<std::int64_t>(op, a, b, out, count);
    case DType::UInt64: return reduce_integers<std::uint64_t>(op, a, b, out, count);
    default: return reduce_floats(dtype, op, a, b, out, count);
  }
}

void reduce_elements_fast(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
                          std::size_t count) {
  if (native_sum_or_product(dtype, op)) return sum_or_product(dtype, op, a, b, out, count);  // avg sums
  if (dtype == DType::Float32) return reduce_in_blocks<float>(dtype, op, a, b, out, 0, count);
  if (dtype == DType::Float64) return reduce_in_blocks<double>(dtype, op, a, b, out, 0, count);
  if (dtype == DType::BFloat16 || (dtype == DType::Float16 && kHalfConversions)) {
    return reduce_halves(dtype, op, a, b, out, count);
  }
  if (dtype == DType::Float8E4M3 || dtype == DType::Float8E5M2) {
    const std::uint8_t* results = float8_results(dtype, op);
    for (std::size_t i = 0; i < count; ++i) {
      const auto pair =
          static_cast<std::size_t>(std::to_integer<unsigned>(a[i]) << 8 | std::to_integer<unsigned>(b[i]));
      out[i] = static_cast<std::byte>(results[pair]);
    }
    return;
  }
  reduce_elements(dtype, op, a, b, out, count);
}

void finish_average(DType dtype, std::byte* data, std::size_t count, int nranks) {
  switch (dtype) {
    case DType::Int8: return divide_integers<std::int8_t>(data, count, nranks);
    case DType::UInt8: return divide_integers<std::uint8_t>(data, count, nranks);
    case DType::Int32: return divide_integers<std::int32_t>(data, count, nranks);
    case DType::UInt32: return divide_integers<std::uint32_t>(data, count, nranks);
    case DType::Int64: return divide_integers<std::int64_t>(data, count, nranks);
    case DType::UInt64: return divide_integers<std::uint64_t>(data, count, nranks);
    default: break;
  }
  const std::size_t size = size_of(dtype);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, data + i * size, size);
    const std::uint64_t result = encode(dtype, decode(dtype, bits) / nranks);
    std::memcpy(data + i * size, &result, size);
  }
}

}  // namespace collcheck
