// Checks the input generator: a pure function of (case, rank, index) whose values differ by
// rank and by index, and whose exact, real and special kinds hold what inputs.h promises.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "reference/float_format.h"
#include "reference/inputs.h"
#include "reference/oracle.h"

namespace collcheck {
namespace {

Case make_case(DType dtype, RedOp op, ValueKind values, int nranks, std::uint64_t seed = 7) {
  Case c;
  c.collective = Collective::AllReduce;
  c.dtype = dtype;
  c.op = op;
  c.values = values;
  c.nranks = nranks;
  c.count = 256;
  c.seed = seed;
  return c;
}

TEST(Inputs, ArePureFunctionsOfCaseRankAndIndex) {
  for (DType dtype : all_dtypes()) {
    for (ValueKind kind : {ValueKind::Exact, ValueKind::Real, ValueKind::Special}) {
      const Case c = make_case(dtype, RedOp::Sum, kind, 5);
      const InputGenerator first(c), second(c);
      for (int rank = 0; rank < 5; ++rank) {
        for (std::size_t index : {0u, 1u, 17u, 1000000u}) {
          EXPECT_EQ(first.bits(rank, index), second.bits(rank, index));
          EXPECT_EQ(first.bits(rank, index), input(c, rank, index));
        }
      }
    }
  }
}

TEST(Inputs, DifferByRankAndByIndex) {
  for (DType dtype : all_dtypes()) {
    for (ValueKind kind : {ValueKind::Exact, ValueKind::Real}) {
      for (RedOp op : all_ops()) {
        const Case c = make_case(dtype, op, kind, 8);
        const InputGenerator inputs(c);
        std::set<std::vector<std::uint64_t>> rows;
        for (int rank = 0; rank < 8; ++rank) {
          std::vector<std::uint64_t> row;
          std::set<std::uint64_t> distinct;
          for (std::size_t i = 0; i < 64; ++i) {
            row.push_back(inputs.bits(rank, i));
            distinct.insert(row.back());
          }
          EXPECT_GT(distinct.size(), 1u) << to_string(c) << " rank " << rank << " is constant";
          rows.insert(row);
        }
        EXPECT_EQ(rows.size(), 8u) << to_string(c) << ": two ranks have the same inputs";
      }
    }
  }
}

TEST(Inputs, DependOnTheSeed) {
  const InputGenerator a(make_case(DType::Float32, RedOp::Sum, ValueKind::Real, 4, 1));
  const InputGenerator b(make_case(DType::Float32, RedOp::Sum, ValueKind::Real, 4, 2));
  int same = 0;
  for (std::size_t i = 0; i < 100; ++i) same += a.bits(0, i) == b.bits(0, i);
  EXPECT_LT(same, 5);
}

TEST(Inputs, ExactIntegersUseTheWholeRange) {
  const InputGenerator inputs(make_case(DType::Int32, RedOp::Sum, ValueKind::Exact, 4));
  bool negative = false, large = false;
  for (std::size_t i = 0; i < 1000; ++i) {
    const double v = decode(DType::Int32, inputs.bits(1, i));
    negative |= v < -1e9;
    large |= v > 1e9;
  }
  EXPECT_TRUE(negative && large);
}

TEST(Inputs, ExactIntegerProductFactorsAreOdd) {
  for (DType dtype : {DType::Int8, DType::UInt8, DType::Int32, DType::UInt64}) {
    const InputGenerator inputs(make_case(dtype, RedOp::Prod, ValueKind::Exact, 4));
    for (std::size_t i = 0; i < 200; ++i) EXPECT_EQ(inputs.bits(2, i) & 1u, 1u);
  }
}

TEST(Inputs, ExactFloatsAreSmallIntegersTimesOnePowerOfTwo) {
  for (DType dtype :
       {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64, DType::Float8E4M3, DType::Float8E5M2}) {
    for (int nranks : {1, 2, 3, 8, 100, 4096}) {
      const Case c = make_case(dtype, RedOp::Sum, ValueKind::Exact, nranks);
      const InputGenerator inputs(c);
      const double unit = std::ldexp(1.0, inputs.scale());
      const double limit = std::ldexp(1.0, float_format(dtype).precision());
      for (std::size_t i = 0; i < 64; ++i) {
        double magnitude = 0;
        for (int rank = 0; rank < nranks; ++rank) {
          const double v = inputs.value(rank, i);
          EXPECT_EQ(v, std::round(v / unit) * unit) << to_string(c);
          EXPECT_EQ(v, decode(dtype, inputs.bits(rank, i))) << to_string(c);
          magnitude += std::fabs(v / unit);
        }
        // Every partial sum is an integer of at most `precision` bits: exact in any order.
        EXPECT_LE(magnitude, limit) << to_string(c) << " element " << i;
      }
    }
  }
}

TEST(Inputs, ExactFloatProductFactorsArePowersOfTwo) {
  const InputGenerator inputs(make_case(DType::Float8E4M3, RedOp::Prod, ValueKind::Exact, 64));
  for (std::size_t i = 0; i < 64; ++i) {
    int scaled = 0;
    for (int rank = 0; rank < 64; ++rank) {
      const double v = std::fabs(inputs.value(rank, i));
      EXPECT_TRUE(v == 0.5 || v == 1 || v == 2) << v;
      scaled += v != 1;
    }
    EXPECT_LE(scaled, 4);
  }
}

TEST(Inputs, RealValuesSpanTheirRangeAndAreRoundedToTheDtype) {
  for (DType dtype : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float8E5M2, DType::Float8E4M3}) {
    const InputGenerator inputs(make_case(dtype, RedOp::Sum, ValueKind::Real, 3));
    double smallest = 1e9, largest = 0;
    for (std::size_t i = 0; i < 4000; ++i) {
      const double v = inputs.value(0, i);
      EXPECT_EQ(v, round_to(dtype, v));
      // The bits (encoded from the value before rounding) are the rounded value's.
      EXPECT_EQ(inputs.bits(0, i), encode(dtype, v)) << name(dtype) << " element " << i;
      smallest = std::min(smallest, std::fabs(v));
      largest = std::max(largest, std::fabs(v));
    }
    EXPECT_LT(smallest, 0.05);
    EXPECT_GT(largest, 6.0);
    EXPECT_LE(largest, 8.0);
  }
}

TEST(Inputs, SpecialValuesMixInNaNInfinitiesNegativeZeroSubnormalsAndExtremes) {
  for (DType dtype : {DType::Float16, DType::Float32, DType::Float8E4M3}) {
    const InputGenerator inputs(make_case(dtype, RedOp::Sum, ValueKind::Special, 2));
    const FloatFormat& format = float_format(dtype);
    bool nan = false, infinity = false, negative_zero = false, subnormal = false, largest = false;
    for (std::size_t i = 0; i < 20000; ++i) {
      const double v = inputs.value(1, i);
      nan |= std::isnan(v);
      infinity |= std::isinf(v);
      negative_zero |= v == 0 && std::signbit(v);
      subnormal |= v != 0 && std::fabs(v) < format.min_normal();
      largest |= std::fabs(v) == format.max_finite();
    }
    EXPECT_TRUE(nan && negative_zero && subnormal && largest) << name(dtype);
    EXPECT_EQ(infinity, format.has_infinity) << name(dtype);  // e4m3 has none
  }
}

TEST(Inputs, FillWritesTheSameBitsPacked) {
  const Case c = make_case(DType::BFloat16, RedOp::Sum, ValueKind::Real, 2);
  const InputGenerator inputs(c);
  std::vector<std::byte> buffer(std::size_t{10} * 2);
  inputs.fill(1, 5, buffer);
  for (std::size_t i = 0; i < 10; ++i) {
    const auto low = static_cast<std::uint64_t>(buffer[2 * i]);
    const auto high = static_cast<std::uint64_t>(buffer[2 * i + 1]);
    EXPECT_EQ(low | high << 8, inputs.bits(1, 5 + i));
  }
}

// The batch paths (values(), fill(), exact_sums()) that generating and checking exact sums run
// on agree with the element-by-element definition (bits(), value()), at offsets inside a batch
// and across the 2^32nd index, where a rank's 32-bit stream of exact values changes its key.
TEST(Inputs, BatchPathsAgreeWithTheElementByElementDefinition) {
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float16, DType::Float8E4M3, DType::Float64}) {
    for (int nranks : {1, 3, 8}) {
      const Case c = make_case(dtype, RedOp::Sum, ValueKind::Exact, nranks);
      const InputGenerator inputs(c);
      for (std::size_t first : {std::size_t{0}, std::size_t{4093}, (std::size_t{1} << 32) - 5}) {
        SCOPED_TRACE(std::string(name(dtype)) + " ranks " + std::to_string(nranks) + " from " + std::to_string(first));
        constexpr std::size_t kLength = 4100;  // past one batch of 4096
        std::vector<double> values(kLength);
        inputs.values(nranks - 1, first, values);
        std::vector<std::byte> filled(kLength * size_of(dtype));
        inputs.fill(nranks - 1, first, filled);
        std::vector<std::byte> sums(kLength * size_of(dtype));
        const bool summed = inputs.exact_sums(first, sums);
        EXPECT_EQ(summed, dtype != DType::Float64) << "float64's offsets need more than 32 bits";
        for (std::size_t i = 0; i < kLength; ++i) {
          ASSERT_EQ(values[i], inputs.value(nranks - 1, first + i)) << "element " << i;
          ASSERT_EQ(load_bits(dtype, filled, i), inputs.bits(nranks - 1, first + i)) << "element " << i;
          double sum = 0;
          for (int rank = 0; rank < nranks; ++rank) sum += inputs.value(rank, first + i);
          if (summed) {
            ASSERT_EQ(load_bits(dtype, sums, i), encode(dtype, sum)) << "element " << i;
          }
        }
      }
    }
  }
}

// fill() writes what bits() defines for every dtype, kind of values, op and rank count (one
// contributor window per element where fewer ranks than all are nonzero), within a batch and
// across one: its batch paths (by mode, then stored at the dtype's width) and the element-by-element
// one agree.
TEST(Inputs, FillWritesTheBitsOfEveryDtypeKindAndOp) {
  constexpr std::size_t kLength = 4100;  // past one batch of 4096
  for (DType dtype : all_dtypes()) {
    for (ValueKind values : {ValueKind::Exact, ValueKind::Real, ValueKind::Special}) {
      for (RedOp op : {RedOp::Sum, RedOp::Prod, RedOp::Max}) {
        for (int nranks : {1, 3, 13}) {
          const Case c = make_case(dtype, op, values, nranks);
          const InputGenerator inputs(c);
          const std::size_t first = nranks == 3 ? 4093 : 0;
          SCOPED_TRACE(std::string(name(dtype)) + " " + std::string(name(values)) + " " + std::string(name(op)) +
                       " ranks " + std::to_string(nranks));
          std::vector<std::byte> filled(kLength * size_of(dtype));
          inputs.fill(nranks - 1, first, filled);
          for (std::size_t i = 0; i < kLength; ++i) {
            ASSERT_EQ(load_bits(dtype, filled, i), inputs.bits(nranks - 1, first + i)) << "element " << i;
          }
        }
      }
    }
  }
}

TEST(Inputs, TablesGiveTheValuesTheyHold) {
  Case c = make_case(DType::Int8, RedOp::Sum, ValueKind::Exact, 2);
  const InputTable table = InputTable::from_values(c, {{1, -1}, {100, -128}});
  EXPECT_EQ(table.bits(0, 1), 0xffu);
  EXPECT_EQ(table.bits(1, 1), 0x80u);
  std::vector<double> values(2);
  table.values(1, 0, values);
  EXPECT_EQ(values, (std::vector<double>{100, -128}));
}

}  // namespace
}  // namespace collcheck
