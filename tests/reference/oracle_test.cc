// Hand-computed oracle tables: every collective on inputs written out here, including count 0
// and 1, one rank, roots other than 0, integer wraparound, avg, and NaN/inf/overflow rules.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "reference/float_format.h"
#include "reference/inputs.h"
#include "reference/oracle.h"
#include "tests/support/cases.h"

namespace collcheck {
namespace {

using Rows = std::vector<std::vector<double>>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Case make_case(Collective collective, DType dtype, RedOp op, std::size_t count, int nranks, int root = 0,
               ValueKind values = ValueKind::Exact) {
  Case c = testing::make_case(collective, dtype, op, count, nranks);
  c.root = root;
  c.values = values;
  return c;
}

std::vector<double> expected_values(const Case& c, const Rows& inputs, int rank) {
  const Expected e = expected(InputTable::from_values(c, inputs), rank);
  std::vector<double> out;
  for (std::size_t i = 0; i < e.count; ++i) out.push_back(decode(c.dtype, e.bits(i)));
  return out;
}

std::vector<std::byte> pack(DType dtype, const std::vector<double>& values) {
  std::vector<std::byte> out(values.size() * size_of(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) store_bits(dtype, out, i, encode(dtype, values[i]));
  return out;
}

// Whether the oracle accepts `got` as rank's output.
bool accepts(const Case& c, const Rows& inputs, int rank, const std::vector<double>& got) {
  const Expected e = expected(InputTable::from_values(c, inputs), rank);
  return compare(e, rank, pack(c.dtype, got)).ok;
}

TEST(OracleTable, AllReduceIntegerSumWrapsAround) {
  const Case c = make_case(Collective::AllReduce, DType::Int8, RedOp::Sum, 2, 3);
  const Rows in{{100, -1}, {100, 2}, {100, 3}};
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(expected_values(c, in, rank), (std::vector<double>{44, 4}));
}

TEST(OracleTable, AllReduceUnsignedProductWrapsAround) {
  const Case c = make_case(Collective::AllReduce, DType::UInt8, RedOp::Prod, 2, 2);
  EXPECT_EQ(expected_values(c, {{16, 3}, {16, 5}}, 1), (std::vector<double>{0, 15}));
}

TEST(OracleTable, AllReduceInt64SumWrapsAtTwoToThe64) {
  Case c = make_case(Collective::AllReduce, DType::Int64, RedOp::Sum, 1, 2);
  const InputTable in(c, {{0x7fffffffffffffffull}, {1}});
  EXPECT_EQ(expected(in, 0).bits(0), 0x8000000000000000ull);
}

TEST(OracleTable, MinAndMaxOrderSignedAndUnsignedTypes) {
  const Rows in{{-5, 7}, {3, -9}};
  EXPECT_EQ(expected_values(make_case(Collective::AllReduce, DType::Int32, RedOp::Min, 2, 2), in, 0),
            (std::vector<double>{-5, -9}));
  EXPECT_EQ(expected_values(make_case(Collective::AllReduce, DType::Int32, RedOp::Max, 2, 2), in, 0),
            (std::vector<double>{3, 7}));
  const Rows unsigned_in{{200, 1}, {3, 255}};
  EXPECT_EQ(expected_values(make_case(Collective::AllReduce, DType::UInt8, RedOp::Min, 2, 2), unsigned_in, 0),
            (std::vector<double>{3, 1}));
}

TEST(OracleTable, IntegerAvgDividesTheWrappedSumTruncatingTowardZero) {
  EXPECT_EQ(expected_values(make_case(Collective::AllReduce, DType::Int32, RedOp::Avg, 2, 2), {{-7, 7}, {0, 0}}, 0),
            (std::vector<double>{-3, 3}));
  // 255 + 255 wraps to 254 in uint8; 254 / 2 = 127 (NCCL's ncclAvg on integers).
  EXPECT_EQ(expected_values(make_case(Collective::AllReduce, DType::UInt8, RedOp::Avg, 1, 2), {{255}, {255}}, 0),
            (std::vector<double>{127}));
  // int8: 100 + 100 wraps to -56; -56 / 3 = -18.
  EXPECT_EQ(expected_values(make_case(Collective::AllReduce, DType::Int8, RedOp::Avg, 1, 3), {{100}, {100}, {0}}, 0),
            (std::vector<double>{-18}));
}

TEST(OracleTable, AllReduceExactFloatsCheckBitForBit) {
  const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 2, 2);
  const Rows in{{1.5, -2}, {0.25, 4}};
  EXPECT_EQ(expected_values(c, in, 0), (std::vector<double>{1.75, 2}));
  EXPECT_TRUE(expected(InputTable::from_values(c, in), 0).bitwise());
  EXPECT_FALSE(accepts(c, in, 0, {1.75, 2 + 0x1p-22}));  // one float32 ulp off
}

TEST(OracleTable, AllGatherConcatenatesRankBlocks) {
  const Case c = make_case(Collective::AllGather, DType::Int32, RedOp::Sum, 2, 3);
  const Rows in{{1, 2}, {3, 4}, {5, 6}};
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(expected_values(c, in, rank), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  }
}

TEST(OracleTable, ReduceScatterGivesEachRankItsBlockOfTheSum) {
  const Case c = make_case(Collective::ReduceScatter, DType::Int32, RedOp::Sum, 1, 3);
  const Rows in{{1, 10, 100}, {2, 20, 200}, {3, 30, 300}};
  EXPECT_EQ(expected_values(c, in, 0), (std::vector<double>{6}));
  EXPECT_EQ(expected_values(c, in, 1), (std::vector<double>{60}));
  EXPECT_EQ(expected_values(c, in, 2), (std::vector<double>{600}));
}

TEST(OracleTable, AllToAllTransposesBlocks) {
  const Case c = make_case(Collective::AllToAll, DType::Int32, RedOp::Sum, 1, 3);
  const Rows in{{11, 12, 13}, {21, 22, 23}, {31, 32, 33}};  // rank r sends rc to rank c
  EXPECT_EQ(expected_values(c, in, 0), (std::vector<double>{11, 21, 31}));
  EXPECT_EQ(expected_values(c, in, 2), (std::vector<double>{13, 23, 33}));
}

// Blocks of several elements from generated inputs, every element checked against the input it
// must be, read one at a time (the oracle copies them a block at a time): all-gather's block s is
// rank s's input, all-to-all's block s is rank s's block for this rank, broadcast the root's input.
TEST(OracleTable, MovedBlocksAreTheInputsTheyCopy) {
  for (const DType dtype : {DType::Int8, DType::BFloat16, DType::Float64}) {
    for (const Collective collective : {Collective::AllGather, Collective::AllToAll, Collective::Broadcast}) {
      const Case c = make_case(collective, dtype, RedOp::Sum, 5, 4, /*root=*/2);
      const InputGenerator inputs(c);
      for (int rank = 0; rank < c.nranks; ++rank) {
        const Expected e = expected(inputs, rank);
        const std::size_t blocks = collective == Collective::Broadcast ? 1 : 4;
        ASSERT_EQ(e.count, blocks * c.count);
        for (std::size_t at = 0; at < e.count; ++at) {
          const std::size_t block = at / c.count, i = at % c.count;
          const int source = collective == Collective::Broadcast ? c.root : static_cast<int>(block);
          const std::size_t from = collective == Collective::AllToAll ? static_cast<std::size_t>(rank) * c.count : 0;
          ASSERT_EQ(e.bits(at), inputs.bits(source, from + i))
              << name(collective) << " " << name(dtype) << " rank " << rank << " element " << at;
        }
      }
    }
  }
}

TEST(OracleTable, BroadcastCopiesTheRootsInputEverywhere) {
  const Case c = make_case(Collective::Broadcast, DType::Float64, RedOp::Sum, 2, 3, /*root=*/2);
  const Rows in{{1, 2}, {3, 4}, {5, 6}};
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(expected_values(c, in, rank), (std::vector<double>{5, 6}));
}

TEST(OracleTable, ReduceGivesOnlyTheRootAnOutput) {
  const Case c = make_case(Collective::Reduce, DType::Int32, RedOp::Max, 2, 3, /*root=*/1);
  const Rows in{{1, 9}, {3, 4}, {5, 6}};
  EXPECT_EQ(expected_values(c, in, 1), (std::vector<double>{5, 9}));
  EXPECT_TRUE(expected_values(c, in, 0).empty());
  EXPECT_TRUE(accepts(c, in, 2, {}));
  EXPECT_FALSE(accepts(c, in, 2, {5, 9})) << "a non-root rank has no output to give";
}

TEST(OracleTable, CountZeroHasNoOutput) {
  for (Collective collective : all_collectives()) {
    const Case c = make_case(collective, DType::Float32, RedOp::Sum, 0, 4);
    const Rows in(4);
    EXPECT_TRUE(expected_values(c, in, 3).empty()) << name(collective);
    EXPECT_TRUE(accepts(c, in, 3, {}));
  }
}

TEST(OracleTable, OneRankGetsItsOwnInputBack) {
  const Rows in{{1.5, -3, 7}};
  for (Collective collective : all_collectives()) {
    for (RedOp op : all_ops()) {
      const Case c = make_case(collective, DType::Float32, op, 3, 1);
      EXPECT_EQ(expected_values(c, in, 0), in[0]) << name(collective) << " " << name(op);
    }
  }
}

TEST(OracleTable, CountOne) {
  const Case c = make_case(Collective::AllReduce, DType::BFloat16, RedOp::Prod, 1, 3);
  EXPECT_EQ(expected_values(c, {{2}, {-0.5}, {4}}, 0), (std::vector<double>{-4}));
}

TEST(OracleTable, MinMaxWithNaNAcceptsPropagationOrTheOtherValues) {
  const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Min, 2, 2, 0, ValueKind::Special);
  const Rows in{{kNaN, 1}, {2, 3}};
  EXPECT_TRUE(accepts(c, in, 0, {kNaN, 1}));
  EXPECT_TRUE(accepts(c, in, 0, {2, 1}));   // minNum drops the NaN
  EXPECT_FALSE(accepts(c, in, 0, {1, 1}));  // 1 is nobody's value at element 0
  EXPECT_FALSE(accepts(c, in, 0, {kNaN, kNaN}));
  const Rows all_nan{{kNaN}, {kNaN}};
  EXPECT_TRUE(accepts(make_case(Collective::AllReduce, DType::Float32, RedOp::Max, 1, 2, 0, ValueKind::Special),
                      all_nan, 0, {kNaN}));
}

TEST(OracleTable, MinOfSignedZerosAcceptsEitherZero) {
  const Case c = make_case(Collective::AllReduce, DType::Float16, RedOp::Min, 1, 2, 0, ValueKind::Special);
  EXPECT_TRUE(accepts(c, {{-0.0}, {0.0}}, 0, {0.0}));
  EXPECT_TRUE(accepts(c, {{-0.0}, {0.0}}, 0, {-0.0}));
}

TEST(OracleTable, InfinitiesOfBothSignsSumToNaN) {
  const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 2, 2, 0, ValueKind::Special);
  const Rows in{{kInf, kInf}, {-kInf, 1}};
  EXPECT_TRUE(accepts(c, in, 0, {kNaN, kInf}));
  EXPECT_FALSE(accepts(c, in, 0, {kInf, kInf}));
  EXPECT_FALSE(accepts(c, in, 0, {kNaN, kNaN}));
}

TEST(OracleTable, SumsThatMayOverflowAcceptInfinityAndNaN) {
  const Case c = make_case(Collective::AllReduce, DType::Float16, RedOp::Sum, 1, 3, 0, ValueKind::Real);
  const Rows in{{60000}, {60000}, {-60000}};  // 60000 + 60000 overflows; 60000 - 60000 + 60000 does not
  EXPECT_TRUE(accepts(c, in, 0, {60000}));
  EXPECT_TRUE(accepts(c, in, 0, {kInf}));
  EXPECT_FALSE(accepts(c, in, 0, {-kInf}) && accepts(c, in, 0, {1000}));
  EXPECT_FALSE(accepts(c, in, 0, {1000}));
}

TEST(OracleTable, Float64SumsWhosePartialSumsOverflowDoubleStillHaveAnExpectedValue) {
  // max + max overflows double, but max + max - max - max - 14 is -14 (found by collcheck
  // check); rounding at 1e308 makes the sound bound about 4e293, so -13 passes and 1e300 not.
  const double largest = std::numeric_limits<double>::max();
  const Case c = make_case(Collective::AllReduce, DType::Float64, RedOp::Sum, 1, 5, 0, ValueKind::Special);
  const Rows in{{largest}, {largest}, {-largest}, {-largest}, {-14}};
  EXPECT_TRUE(accepts(c, in, 0, {-14}));
  EXPECT_TRUE(accepts(c, in, 0, {kInf}));  // some order overflows
  EXPECT_TRUE(accepts(c, in, 0, {-13}));
  EXPECT_FALSE(accepts(c, in, 0, {1e300}));
}

TEST(OracleTable, Float8E4M3OverflowSaturatesOrBecomesNaN) {
  const Case c = make_case(Collective::AllReduce, DType::Float8E4M3, RedOp::Sum, 1, 2, 0, ValueKind::Real);
  const Rows in{{400}, {400}};
  EXPECT_TRUE(accepts(c, in, 0, {448}));
  EXPECT_TRUE(accepts(c, in, 0, {kNaN}));
  EXPECT_FALSE(accepts(c, in, 0, {256}));
}

TEST(OracleTable, RealSumsAcceptEitherRoundingWithinTheBound) {
  // 1 + 2^-11 + 2^-11 in float16: 1 either way round, or 1 + 2^-10 when the small ones go first.
  const Case c = make_case(Collective::AllReduce, DType::Float16, RedOp::Sum, 1, 3, 0, ValueKind::Real);
  const Rows in{{1}, {0x1p-11}, {0x1p-11}};
  EXPECT_TRUE(accepts(c, in, 0, {1}));
  EXPECT_TRUE(accepts(c, in, 0, {1 + 0x1p-10}));
  EXPECT_FALSE(accepts(c, in, 0, {1 + 0x1p-8}));
  const Expected e = expected(InputTable::from_values(c, in), 0);
  EXPECT_GT(e.bound[0], 0);
  EXPECT_LT(e.bound[0], 0x1p-8);
}

TEST(OracleTable, FloatAvgIsTheSumOverNranksWithinItsBound) {
  const Case c = make_case(Collective::AllReduce, DType::Float32, RedOp::Avg, 1, 3, 0, ValueKind::Exact);
  const Rows in{{1}, {1}, {2}};
  const Expected e = expected(InputTable::from_values(c, in), 0);
  EXPECT_FALSE(e.bitwise());  // 1/3 premultiplied is not exact
  EXPECT_FLOAT_EQ(static_cast<float>(decode(c.dtype, e.bits(0))), 4.0f / 3.0f);
  const float premultiplied = 1.0f * (1.0f / 3) + 1.0f * (1.0f / 3) + 2.0f * (1.0f / 3);
  EXPECT_TRUE(accepts(c, in, 0, {premultiplied}));
  EXPECT_FALSE(accepts(c, in, 0, {1.3f}));
}

TEST(OracleTable, ProductsThatMayUnderflowAreNotChecked) {
  const Case c = make_case(Collective::AllReduce, DType::Float16, RedOp::Prod, 1, 3, 0, ValueKind::Real);
  const Rows in{{0x1p-10}, {0x1p-10}, {0x1p10}};  // 2^-20 underflows float16 in one order only
  const Expected e = expected(InputTable::from_values(c, in), 0);
  const Verdict v = compare(e, 0, pack(c.dtype, {0}));
  EXPECT_TRUE(v.ok);
  EXPECT_EQ(v.unchecked, 1u);
}

}  // namespace
}  // namespace collcheck
