// The reduction contract's fast path (impls/link/reduce_op.h), which the proc and sim engines
// reduce with: bit for bit reduce_elements' results, natively for float32 and float64, through
// float32 for float16 and bfloat16, by table for the float8s, into a buffer of its own and in place.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "impls/link/reduce_op.h"
#include "reference/random.h"

namespace collcheck {
namespace {

// The native float path gives reduce_elements' bits for every op, on random bit patterns that
// include NaNs, infinities, subnormals and signed zeros, into a buffer of its own or in place.
TEST(ReduceOp, NativeReductionIsBitForBitTheContract) {
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int32, DType::BFloat16, DType::Float16}) {
    const std::size_t size = size_of(dtype), count = 4000;
    std::vector<std::byte> a(count * size), b(count * size), want(count * size), got(count * size);
    for (std::size_t i = 0; i < count * size; ++i) {
      a[i] = static_cast<std::byte>(mix64(i) >> 11);
      b[i] = static_cast<std::byte>(mix64(i + 0x9e3779b9) >> 17);
    }
    // Every few elements small or special, so that sums and products meet every case.
    for (std::size_t i = 0; i + 1 < count; i += 7) std::memcpy(&b[i * size], &a[(i + 1) * size], size);
    for (RedOp op : all_ops()) {
      reduce_elements(dtype, op, a.data(), b.data(), want.data(), count);
      reduce_elements_fast(dtype, op, a.data(), b.data(), got.data(), count);
      EXPECT_EQ(want, got) << name(dtype) << " " << name(op);
      // In place, into either input (a group with a NaN result is computed again from inputs
      // its stores must not have reached).
      std::vector<std::byte> into_a = a, into_b = b;
      reduce_elements_fast(dtype, op, into_a.data(), b.data(), into_a.data(), count);
      reduce_elements_fast(dtype, op, a.data(), into_b.data(), into_b.data(), count);
      EXPECT_EQ(want, into_a) << name(dtype) << " " << name(op) << " into its first input";
      EXPECT_EQ(want, into_b) << name(dtype) << " " << name(op) << " into its second input";
    }
  }
}

// The float8s' fast path reads every pair's result from a table: for both formats, every op and
// every pair of operands (both orders), it gives reduce_elements' bits, into a buffer of its own
// and in place.
TEST(ReduceOp, Float8ReductionsByTableAreTheContractForEveryPair) {
  constexpr std::size_t kPairs = std::size_t{1} << 16;
  std::vector<std::byte> a(kPairs), b(kPairs), want(kPairs), got(kPairs);
  for (std::size_t pair = 0; pair < kPairs; ++pair) {
    a[pair] = static_cast<std::byte>(pair >> 8);
    b[pair] = static_cast<std::byte>(pair);
  }
  for (DType dtype : {DType::Float8E4M3, DType::Float8E5M2}) {
    for (RedOp op : all_ops()) {
      reduce_elements(dtype, op, a.data(), b.data(), want.data(), kPairs);
      reduce_elements_fast(dtype, op, a.data(), b.data(), got.data(), kPairs);
      EXPECT_EQ(want, got) << name(dtype) << " " << name(op);
      std::vector<std::byte> into_b = b;
      reduce_elements_fast(dtype, op, a.data(), into_b.data(), into_b.data(), kPairs);
      EXPECT_EQ(want, into_b) << name(dtype) << " " << name(op) << " into its second input";
      reduce_elements(dtype, op, b.data(), a.data(), want.data(), kPairs);
      reduce_elements_fast(dtype, op, b.data(), a.data(), got.data(), kPairs);
      EXPECT_EQ(want, got) << name(dtype) << " " << name(op) << " the operands swapped";
    }
  }
}

// Float16 and bfloat16 reduce through float32, rounding twice (to float32, then to 16 bits) where
// the contract rounds once from double: the same bits, for every value of the format against
// operands that meet each of its edges (signed zeros, the smallest and largest subnormals and
// normals, one and its neighbours, infinities, NaNs) and random ones, whose sums and products fall
// on halfway cases, overflow and underflow. (Narrowing bfloat16 by truncation instead of to nearest
// even fails here, as does a float16 narrowing that loses its last bit.)
TEST(ReduceOp, SixteenBitFloatsThroughFloat32AreTheContractForEveryValue) {
  constexpr std::size_t kValues = std::size_t{1} << 16;
  const std::vector<std::uint16_t> edges{0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x0401, 0x3C00, 0x3C01,
                                         0x3BFF, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x007F, 0x0080, 0x3F80,
                                         0x3F81, 0x7F7F, 0xFF7F, 0x7F80, 0x7FC0, 0x4000, 0xC000, 0x0200};
  std::vector<std::uint16_t> partners = edges;
  for (std::uint64_t k = 0; k < 40; ++k) partners.push_back(static_cast<std::uint16_t>(mix64(k + 77) >> 48));
  const std::size_t count = kValues * partners.size();
  std::vector<std::uint16_t> a(count), b(count), want(count), got(count);
  for (std::size_t i = 0; i < count; ++i) {
    a[i] = static_cast<std::uint16_t>(i % kValues);
    b[i] = partners[i / kValues];
  }
  const auto* x = reinterpret_cast<const std::byte*>(a.data());
  const auto* y = reinterpret_cast<const std::byte*>(b.data());
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    for (RedOp op : all_ops()) {
      reduce_elements(dtype, op, x, y, reinterpret_cast<std::byte*>(want.data()), count);
      reduce_elements_fast(dtype, op, x, y, reinterpret_cast<std::byte*>(got.data()), count);
      std::size_t wrong = 0, first = 0;
      for (std::size_t i = count; i-- > 0;) {
        if (want[i] == got[i]) continue;
        ++wrong;
        first = i;
      }
      if (wrong > 0) {
        ADD_FAILURE() << name(dtype) << " " << name(op) << ": " << wrong << " results differ, the first " << std::hex
                      << a[first] << " with " << b[first];
      }
    }
  }
}

}  // namespace
}  // namespace collcheck
