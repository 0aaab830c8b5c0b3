// Shows compare() failing on deliberately broken reductions (a dropped or doubled rank, a
// swapped element, a shifted block, too little precision) and passing on correct ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

#include "reference/float_format.h"
#include "reference/oracle.h"

namespace collcheck {
namespace {

// A deliberately simple all-reduce: ranks folded in `order`, each step rounded to the dtype
// (or to `accumulate`, a mutant's narrower type). Integers wrap.
struct Reducer {
  std::vector<int> order;
  DType accumulate;
  int doubled = -1;  // a rank counted twice
};

std::vector<std::byte> all_reduce(const Case& c, const InputGenerator& inputs, const Reducer& reducer) {
  std::vector<std::byte> out(c.count * size_of(c.dtype));
  for (std::size_t i = 0; i < c.count; ++i) {
    std::vector<int> ranks = reducer.order;
    if (reducer.doubled >= 0) ranks.push_back(reducer.doubled);
    std::uint64_t bits = inputs.bits(ranks[0], i);
    double value = inputs.value(ranks[0], i);
    for (std::size_t k = 1; k < ranks.size(); ++k) {
      if (is_float(c.dtype)) {
        const double x = inputs.value(ranks[k], i);
        value = round_to(reducer.accumulate, c.op == RedOp::Prod ? value * x : value + x);
      } else {
        const std::uint64_t x = inputs.bits(ranks[k], i);
        bits = c.op == RedOp::Prod ? bits * x : bits + x;
      }
    }
    store_bits(c.dtype, out, i, is_float(c.dtype) ? encode(c.dtype, value) : bits);
  }
  return out;
}

Case make_case(DType dtype, RedOp op, ValueKind values, int nranks) {
  Case c;
  c.dtype = dtype;
  c.op = op;
  c.values = values;
  c.nranks = nranks;
  c.count = 64;
  c.seed = 11;
  return c;
}

std::vector<int> ranks_in_order(int nranks) {
  std::vector<int> order(static_cast<std::size_t>(nranks));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

Verdict check(const Case& c, const Reducer& reducer) {
  const InputGenerator inputs(c);
  return compare(expected(inputs, 0), 0, all_reduce(c, inputs, reducer));
}

TEST(Compare, PassesCorrectReductionsInAnyRankOrder) {
  for (DType dtype : all_dtypes()) {
    for (RedOp op : {RedOp::Sum, RedOp::Prod}) {
      for (ValueKind kind : {ValueKind::Exact, ValueKind::Real}) {
        const Case c = make_case(dtype, op, kind, 7);
        std::vector<int> order = ranks_in_order(7);
        std::reverse(order.begin(), order.end());
        std::rotate(order.begin(), order.begin() + 3, order.end());
        const Verdict v = check(c, {order, dtype});
        EXPECT_TRUE(v.ok) << to_string(c) << "\n" << v.describe(dtype);
      }
    }
  }
}

TEST(Compare, CatchesADroppedRankInEveryDtype) {
  for (DType dtype : all_dtypes()) {
    for (ValueKind kind : {ValueKind::Exact, ValueKind::Real}) {
      // Summed in fp8 itself, four roundings of u = 2^-4 or 2^-3 may lose any one input:
      // the sound bound cannot see a dropped rank there. Exact values can.
      const bool fp8 = dtype == DType::Float8E4M3 || dtype == DType::Float8E5M2;
      if (kind == ValueKind::Real && fp8) continue;
      const Case c = make_case(dtype, RedOp::Sum, kind, 5);
      std::vector<int> order = ranks_in_order(5);
      order.erase(order.begin() + 2);
      const Verdict v = check(c, {order, dtype});
      EXPECT_FALSE(v.ok) << to_string(c);
      EXPECT_GT(v.mismatched, c.count / 2) << to_string(c);
    }
  }
}

TEST(Compare, CatchesADoubledContributionInEveryDtypeBitForBit) {
  for (DType dtype : all_dtypes()) {
    for (RedOp op : {RedOp::Sum, RedOp::Prod}) {
      const Case c = make_case(dtype, op, ValueKind::Exact, 4);
      Reducer reducer{ranks_in_order(4), dtype, /*doubled=*/3};
      const Verdict v = check(c, reducer);
      EXPECT_FALSE(v.ok) << to_string(c);
    }
  }
}

TEST(Compare, CatchesSwappedAndShiftedElements) {
  const Case c = make_case(DType::Float8E4M3, RedOp::Sum, ValueKind::Exact, 3);
  const InputGenerator inputs(c);
  const Expected e = expected(inputs, 0);
  std::vector<std::byte> got = all_reduce(c, inputs, {ranks_in_order(3), c.dtype});
  ASSERT_TRUE(compare(e, 0, got).ok);

  std::vector<std::byte> swapped = got;
  std::size_t a = 0, b = 1;
  while (swapped[a] == swapped[b]) ++b;  // two elements that differ
  std::swap(swapped[a], swapped[b]);
  const Verdict v = compare(e, 0, swapped);
  EXPECT_EQ(v.mismatched, 2u);
  ASSERT_EQ(v.first.size(), 2u);
  EXPECT_EQ(v.first[0].element, a);
  EXPECT_EQ(v.first[1].element, b);

  std::vector<std::byte> shifted = got;
  std::rotate(shifted.begin(), shifted.begin() + 1, shifted.end());
  EXPECT_GT(compare(e, 0, shifted).mismatched, c.count / 2);
}

TEST(Compare, CatchesAccumulationInTooLittlePrecision) {
  // Real float64 values summed in float32, float32 summed in bfloat16: far outside the bound.
  for (auto [dtype, narrow] : {std::pair{DType::Float64, DType::Float32}, std::pair{DType::Float32, DType::BFloat16},
                               std::pair{DType::Float16, DType::Float8E5M2}}) {
    const Case c = make_case(dtype, RedOp::Sum, ValueKind::Real, 8);
    EXPECT_TRUE(check(c, {ranks_in_order(8), dtype}).ok) << to_string(c);
    EXPECT_FALSE(check(c, {ranks_in_order(8), narrow}).ok) << to_string(c) << " summed in " << name(narrow);
  }
}

TEST(Compare, RejectsOutputOfTheWrongSize) {
  const Case c = make_case(DType::Float32, RedOp::Sum, ValueKind::Exact, 2);
  const Expected e = expected(c, 0);
  std::vector<std::byte> short_output(e.data.begin(), e.data.end() - 4);
  const Verdict v = compare(e, 0, short_output);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.error.find("252 bytes, expected 256"), std::string::npos) << v.error;
}

TEST(Compare, BitwiseChecksTreatEveryNaNAlike) {
  Case c = make_case(DType::Float16, RedOp::Sum, ValueKind::Special, 1);
  c.collective = Collective::Broadcast;
  c.count = 1;
  const InputTable in(c, {{0x7e00}});
  const Expected e = expected(in, 0);
  ASSERT_TRUE(e.bitwise());
  std::vector<std::byte> other_nan(2);
  store_bits(DType::Float16, other_nan, 0, 0xfe01);
  EXPECT_TRUE(compare(e, 0, other_nan).ok);
}

TEST(Compare, DescribesMismatchesWithRankElementValuesAndUlps) {
  const Case c = make_case(DType::Float32, RedOp::Sum, ValueKind::Exact, 2);
  const Expected e = expected(c, 1);
  std::vector<std::byte> got = e.data;
  store_bits(DType::Float32, got, 5, e.bits(5) + 3);  // 3 ulps up
  const Verdict v = compare(e, 1, got);
  ASSERT_EQ(v.mismatched, 1u);
  EXPECT_EQ(v.first[0].rank, 1);
  EXPECT_EQ(v.first[0].element, 5u);
  EXPECT_DOUBLE_EQ(v.first[0].ulps, 3);
  const std::string text = v.describe(DType::Float32);
  EXPECT_NE(text.find("rank 1 element 5: expected "), std::string::npos) << text;
  EXPECT_NE(text.find("3 ulp"), std::string::npos) << text;
  EXPECT_NE(text.find("1 of 64 elements wrong"), std::string::npos) << text;
}

TEST(Compare, ReportsAtMostTheRequestedNumberOfMismatches) {
  const Case c = make_case(DType::Int32, RedOp::Sum, ValueKind::Exact, 2);
  const Expected e = expected(c, 0);
  std::vector<std::byte> zeros(e.data.size());
  const Verdict v = compare(e, 0, zeros, 3);
  EXPECT_EQ(v.first.size(), 3u);
  EXPECT_GT(v.mismatched, 60u);
}

// Oracle::compare_all checks exact float all-reduces a block at a time without the whole
// expected output: it must pass every correct rank and, with one element wrong anywhere (the
// last of a block, the very last), fail that rank exactly as compare() does.
TEST(CompareAll, JudgesEveryRankAsCompareDoes) {
  for (ValueKind values : {ValueKind::Exact, ValueKind::Real}) {
    Case c = make_case(DType::Float32, RedOp::Sum, values, 3);
    c.count = 40000;  // more than one block of 32768
    Oracle oracle(c);
    const std::vector<std::byte> right = oracle.expected(0).data;
    const std::vector<std::span<const std::byte>> correct(3, right);
    for (const Verdict& verdict : oracle.compare_all(correct)) {
      EXPECT_TRUE(verdict.ok);
      EXPECT_EQ(verdict.checked, c.count);
    }
    for (std::size_t wrong_element : {std::size_t{32767}, std::size_t{32768}, c.count - 1}) {
      std::vector<std::byte> wrong = right;
      wrong[wrong_element * 4 + 2] ^= std::byte{0x40};  // a high bit of the significand: outside any bound
      const std::vector<std::span<const std::byte>> outputs{right, wrong, right};
      const std::vector<Verdict> verdicts = oracle.compare_all(outputs);
      ASSERT_EQ(verdicts.size(), 3u);
      EXPECT_TRUE(verdicts[0].ok && verdicts[2].ok);
      const Verdict alone = compare(oracle.expected(1), 1, wrong);
      EXPECT_FALSE(verdicts[1].ok) << "element " << wrong_element;
      EXPECT_EQ(verdicts[1].describe(c.dtype), alone.describe(c.dtype));
    }
    const std::vector<std::span<const std::byte>> short_output{right, std::span(right).first(8), right};
    EXPECT_NE(oracle.compare_all(short_output)[1].error, "");
  }
}

}  // namespace
}  // namespace collcheck
