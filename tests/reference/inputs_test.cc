// Checks the input generator: a pure function of (case, rank, index) whose values differ by
// rank and by index, and whose exact, real and special kinds hold what inputs.h promises.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "reference/counts.h"
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

// A case of every collective with `nranks` ranks: v-collectives with counts of every size from
// 0 up, in turn (a v-collective's n is their sum).
Case case_of(Collective collective, DType dtype, ValueKind values, int nranks, std::uint64_t seed) {
  Case c = make_case(dtype, RedOp::Sum, values, nranks, seed);
  c.collective = collective;
  c.count = 37;
  if (per_rank_counts(collective)) {
    c.counts.resize(counts_needed(collective, nranks));
    for (std::size_t k = 0; k < c.counts.size(); ++k) c.counts[k] = (k * 7) % 11;
    c.count = 0;
    for (std::size_t count : c.counts) c.count += count;
  }
  return c;
}

// Every rank's whole input, packed, as the generator makes it with no memo in use.
std::vector<std::vector<std::byte>> made(const Case& c) {
  EXPECT_EQ(InputMemo::current(), nullptr);
  const InputGenerator inputs(c);
  std::vector<std::vector<std::byte>> ranks;
  for (int rank = 0; rank < c.nranks; ++rank) {
    ranks.emplace_back(input_elements(c, rank) * size_of(c.dtype));
    inputs.fill(rank, 0, ranks.back());
  }
  return ranks;
}

// The memo's key leaves out a case's root, layout, offset and null buffers: sound only while the
// generator ignores them, which this checks for every collective, dtype and kind of values.
TEST(Inputs, DoNotDependOnRootLayoutOffsetOrNullBuffers) {
  for (Collective collective : all_collectives()) {
    for (DType dtype : all_dtypes()) {
      for (ValueKind values : {ValueKind::Exact, ValueKind::Real, ValueKind::Special}) {
        const Case c = case_of(collective, dtype, values, 4, 11);
        SCOPED_TRACE(to_string(c));
        const auto inputs = made(c);
        Case other = c;
        other.root = 3;
        other.in_place = !per_rank_counts(collective);
        other.offset = 5;
        other.empty_as_null = true;
        EXPECT_TRUE(same_inputs(other, c));
        EXPECT_EQ(made(other), inputs);
      }
    }
  }
}

// Cases that differ from `c` in one field its inputs depend on each (seed, dtype, op, kind of
// values, ranks, collective, count or counts), and last one that differs only in its root.
std::vector<Case> neighbours_of(const Case& c) {
  std::vector<Case> others(8, c);
  others[0].seed += 1;
  others[1].dtype = DType::BFloat16;
  others[2].op = RedOp::Max;
  others[3].values = c.values == ValueKind::Real ? ValueKind::Exact : ValueKind::Real;
  others[4] = case_of(c.collective, c.dtype, c.values, 2, c.seed);
  others[5].collective = c.collective == Collective::AllGather ? Collective::Broadcast : Collective::AllGather;
  others[5].counts.clear();
  others[5].count = 37;
  if (per_rank_counts(c.collective)) {
    std::swap(others[6].counts.front(), others[6].counts.back());
  } else {
    others[6].count += 1;
  }
  others[7].root = 2;
  return others;
}

// Fills every rank of `c` through `inputs`, whole and in parts, and checks them against `want`.
void expect_filled(const InputGenerator& inputs, const std::vector<std::vector<std::byte>>& want) {
  const Case& c = inputs.which();
  for (int rank = 0; rank < c.nranks; ++rank) {
    const auto r = static_cast<std::size_t>(rank);
    std::vector<std::byte> whole(want[r].size());
    inputs.fill(rank, 0, whole);
    EXPECT_EQ(whole, want[r]) << "rank " << rank;
    if (whole.size() < 3 * size_of(c.dtype)) continue;
    std::vector<std::byte> part(2 * size_of(c.dtype));
    inputs.fill(rank, 1, part);
    const auto second = want[r].begin() + static_cast<std::ptrdiff_t>(size_of(c.dtype));
    EXPECT_TRUE(std::equal(part.begin(), part.end(), second)) << "rank " << rank;
  }
}

// With a memo in use, fill gives what the generator makes, whole and in parts, for every
// collective and kind; a case that differs in any field the inputs depend on is never served
// another's inputs (one that differs in its root is).
TEST(InputMemo, ServesWhatTheGeneratorMakesAndOnlyForItsCase) {
  for (Collective collective : all_collectives()) {
    for (ValueKind values : {ValueKind::Exact, ValueKind::Real, ValueKind::Special}) {
      const Case c = case_of(collective, DType::Float16, values, 3, 5);
      SCOPED_TRACE(to_string(c));
      const std::vector<Case> others = neighbours_of(c);
      const auto want = made(c);
      std::vector<std::vector<std::vector<std::byte>>> others_want;
      others_want.reserve(others.size());
      for (const Case& other : others) others_want.push_back(made(other));
      InputMemo memo(std::uint64_t{1} << 20);
      const InputMemo::Use use(memo);
      expect_filled(InputGenerator(c), want);  // made and kept
      for (int rank = 0; rank < c.nranks; ++rank) {
        EXPECT_EQ(memo.find(c, rank).size(), want[static_cast<std::size_t>(rank)].size()) << "rank " << rank;
      }
      expect_filled(InputGenerator(c), want);  // served
      for (std::size_t k = 0; k < others.size(); ++k) {
        SCOPED_TRACE("against " + to_string(others[k]));
        const bool same = k + 1 == others.size();
        EXPECT_EQ(same_inputs(others[k], c), same);
        for (int rank = 0; rank < others[k].nranks; ++rank) {
          const bool kept = !memo.find(others[k], rank).empty();
          EXPECT_EQ(kept, same && !want[static_cast<std::size_t>(rank)].empty()) << "rank " << rank;
        }
        expect_filled(InputGenerator(others[k]), others_want[k]);
      }
    }
  }
}

// values() of a rank whose input the memo keeps are decoded from it: the same doubles, bit for
// bit, as the generator's own for every dtype, kind of values and op, whole and from an offset.
TEST(InputMemo, ValuesFromKeptInputsAreTheGenerators) {
  for (DType dtype : all_dtypes()) {
    for (ValueKind values : {ValueKind::Exact, ValueKind::Real, ValueKind::Special}) {
      for (RedOp op : {RedOp::Sum, RedOp::Prod, RedOp::Max}) {
        Case c = make_case(dtype, op, values, 5);
        c.count = 600;
        SCOPED_TRACE(to_string(c));
        const InputGenerator inputs(c);
        std::vector<std::vector<double>> want;
        for (int rank = 0; rank < c.nranks; ++rank) {
          want.emplace_back(c.count);
          inputs.values(rank, 0, want.back());
        }
        InputMemo memo(std::uint64_t{1} << 20);
        const InputMemo::Use use(memo);
        for (int rank = 0; rank < c.nranks; ++rank) {
          std::vector<std::byte> whole(c.count * size_of(dtype));
          inputs.fill(rank, 0, whole);
          ASSERT_FALSE(memo.find(c, rank).empty());
          std::vector<double> got(c.count - 7);
          inputs.values(rank, 7, got);
          for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(std::bit_cast<std::uint64_t>(got[i]),
                      std::bit_cast<std::uint64_t>(want[static_cast<std::size_t>(rank)][i + 7]))
                << "rank " << rank << " element " << i + 7;
          }
        }
      }
    }
  }
}

// A memo holds no more than its capacity: the oldest case's inputs go first, never the inputs of
// the case being kept to make room for more of its own, and a rank's input larger than the whole
// capacity is not kept. Nothing is kept where no memo is in use, and a Use gives back the one before.
TEST(InputMemo, LetsTheOldestCaseGoAndNeverTheOneItKeeps) {
  const Case first = case_of(Collective::AllReduce, DType::Float32, ValueKind::Real, 2, 1);
  Case second = first, third = first;
  second.seed = 2;
  third.seed = 3;
  const std::vector<std::byte> rank_input(1000, std::byte{1});
  InputMemo memo(4000);  // two cases of two ranks
  memo.keep(first, 0, rank_input);
  memo.keep(first, 1, rank_input);
  memo.keep(second, 0, rank_input);
  memo.keep(second, 1, rank_input);
  EXPECT_EQ(memo.held(), 4000u);
  memo.keep(third, 0, rank_input);  // the first case goes
  EXPECT_TRUE(memo.find(first, 0).empty());
  EXPECT_TRUE(memo.find(first, 1).empty());
  EXPECT_EQ(memo.find(second, 1).size(), 1000u);
  EXPECT_EQ(memo.find(third, 0).size(), 1000u);
  EXPECT_EQ(memo.held(), 3000u);
  Case wide = first;
  wide.seed = 4;
  wide.nranks = 8;
  for (int rank = 0; rank < 8; ++rank) memo.keep(wide, rank, rank_input);  // more than the whole
  EXPECT_TRUE(memo.find(second, 0).empty());
  EXPECT_TRUE(memo.find(third, 0).empty());
  EXPECT_EQ(memo.find(wide, 0).size(), 1000u);
  EXPECT_EQ(memo.find(wide, 3).size(), 1000u);
  EXPECT_TRUE(memo.find(wide, 4).empty());  // no room left but its own
  EXPECT_EQ(memo.held(), 4000u);
  memo.keep(third, 1, std::vector<std::byte>(4001));
  EXPECT_TRUE(memo.find(third, 1).empty());
  EXPECT_EQ(memo.held(), 4000u);

  EXPECT_EQ(InputMemo::current(), nullptr);
  const InputGenerator inputs(first);
  std::vector<std::byte> whole(input_elements(first, 0) * size_of(first.dtype));
  InputMemo outer(1 << 20), inner(1 << 20);
  {
    const InputMemo::Use use_outer(outer);
    {
      const InputMemo::Use use_inner(inner);
      EXPECT_EQ(InputMemo::current(), &inner);
      inputs.fill(0, 0, whole);
    }
    EXPECT_EQ(InputMemo::current(), &outer);
  }
  EXPECT_EQ(InputMemo::current(), nullptr);
  inputs.fill(1, 0, whole);
  EXPECT_EQ(inner.held(), whole.size());
  EXPECT_EQ(outer.held(), 0u);
}

}  // namespace
}  // namespace collcheck
