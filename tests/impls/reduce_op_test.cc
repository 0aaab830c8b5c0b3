// The reduction contract's fast path (impls/link/reduce_op.h), which the proc and sim engines
// reduce with: bit for bit reduce_elements' results, natively for float32 and float64, in float
// for float16 and bfloat16, by table for the float8s, into a buffer of its own and in place.
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
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int32, DType::BFloat16}) {
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

// Float16 and bfloat16 reduce in float on the fast path. For `dtype` and `op`, every operand
// against each of `others`, in both orders and in place: whether reduce_elements_fast gives
// reduce_elements' bits (the first difference named where not).
::testing::AssertionResult reduced_in_float_as_the_contract(DType dtype, RedOp op,
                                                            const std::vector<std::uint16_t>& others) {
  constexpr std::size_t kPatterns = std::size_t{1} << 16;
  std::vector<std::byte> every(2 * kPatterns), other(2 * kPatterns), want(2 * kPatterns), got(2 * kPatterns);
  for (std::size_t pattern = 0; pattern < kPatterns; ++pattern) {
    const auto bits = static_cast<std::uint16_t>(pattern);
    std::memcpy(&every[2 * pattern], &bits, 2);
  }
  for (std::uint16_t value : others) {
    for (std::size_t pattern = 0; pattern < kPatterns; ++pattern) std::memcpy(&other[2 * pattern], &value, 2);
    const std::string what =
        std::string(name(dtype)) + " " + std::string(name(op)) + " with the pattern " + std::to_string(value);
    reduce_elements(dtype, op, every.data(), other.data(), want.data(), kPatterns);
    reduce_elements_fast(dtype, op, every.data(), other.data(), got.data(), kPatterns);
    if (want != got) return ::testing::AssertionFailure() << what;
    std::vector<std::byte> into = every;
    reduce_elements_fast(dtype, op, into.data(), other.data(), into.data(), kPatterns);
    if (want != into) return ::testing::AssertionFailure() << what << " into its first input";
    reduce_elements(dtype, op, other.data(), every.data(), want.data(), kPatterns);
    reduce_elements_fast(dtype, op, other.data(), every.data(), got.data(), kPatterns);
    if (want != got) return ::testing::AssertionFailure() << what << " the operands swapped";
  }
  return ::testing::AssertionSuccess();
}

// Every operand against a spread of others (the specials, the edges of the subnormals and of
// overflow, and random patterns: every exponent difference a sum can round across).
TEST(ReduceOp, Float16AndBFloat16ReductionsInFloatAreTheContract) {
  std::vector<std::uint16_t> others = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x7bff, 0xfbff,
                                       0x7c00, 0xfc00, 0x7e00, 0x7f80, 0xff80, 0x7f7f, 0x0080, 0x007f, 0x7fc0, 0x3f80};
  for (std::uint64_t i = 0; others.size() < 36; ++i) others.push_back(static_cast<std::uint16_t>(mix64(i) >> 48));
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    for (RedOp op : all_ops()) EXPECT_TRUE(reduced_in_float_as_the_contract(dtype, op, others));
  }
}

// The same for every pair, 2^32 a format and op (minutes; not run by the suite:
// `impls_proc_tests --gtest_also_run_disabled_tests --gtest_filter='ReduceOp.*EveryPair*'`). Sums and
// products round; min and max compare exactly.
TEST(ReduceOp, DISABLED_Float16AndBFloat16ReductionsInFloatAreTheContractForEveryPair) {
  std::vector<std::uint16_t> every(std::size_t{1} << 16);
  for (std::size_t pattern = 0; pattern < every.size(); ++pattern) every[pattern] = static_cast<std::uint16_t>(pattern);
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    for (RedOp op : {RedOp::Sum, RedOp::Prod}) EXPECT_TRUE(reduced_in_float_as_the_contract(dtype, op, every));
  }
}

}  // namespace
}  // namespace collcheck
