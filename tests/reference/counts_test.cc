// The v-collectives in the reference: their case text (`counts=3,0,5`), validate()'s errors on
// bad counts, per-rank buffer sizes and block positions, and hand-computed oracle tables.
#include "reference/counts.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "reference/float_format.h"
#include "reference/oracle.h"
#include "tests/support/errors.h"

namespace collcheck {
namespace {

using Rows = std::vector<std::vector<double>>;

Case vector_case(Collective collective, std::vector<std::size_t> counts, int nranks, DType dtype = DType::Int32) {
  Case c;
  c.collective = collective;
  c.dtype = dtype;
  c.nranks = nranks;
  set_counts(c, std::move(counts));
  return c;
}

using testing::expect_error;

std::vector<double> expected_values(const Case& c, const Rows& inputs, int rank) {
  const Expected e = expected(InputTable::from_values(c, inputs), rank);
  std::vector<double> out;
  for (std::size_t i = 0; i < e.count; ++i) out.push_back(decode(c.dtype, e.bits(i)));
  return out;
}

TEST(CountsText, CountsFollowNAndRoundTrip) {
  const Case c = vector_case(Collective::AllGatherV, {3, 0, 5}, 3);
  EXPECT_EQ(to_string(c), "allgatherv/i32/sum/n=8/counts=3,0,5/ranks=3/root=0/outofplace/offset=0/values=exact/seed=0");
  EXPECT_EQ(parse_case(to_string(c)).value(), c);
  const Case matrix = vector_case(Collective::AllToAllV, {0, 1, 2, 3}, 2);
  EXPECT_EQ(to_string(matrix),
            "alltoallv/i32/sum/n=6/counts=0,1,2,3/ranks=2/root=0/outofplace/offset=0/values=exact/seed=0");
  EXPECT_EQ(parse_case(to_string(matrix)).value(), matrix);
}

TEST(CountsText, NMayBeLeftOutAndIsTheSum) {
  const Result<Case> parsed = parse_case("reduce_scatter_v/f32/sum/counts=1,0,4/ranks=3");
  ASSERT_TRUE(parsed.ok()) << parsed.error().text();
  EXPECT_EQ(parsed->collective, Collective::ReduceScatterV);
  EXPECT_EQ(parsed->count, 5u);
  EXPECT_EQ(parsed->counts, (std::vector<std::size_t>{1, 0, 4}));
  expect_error(parse_case("allgatherv/f32/sum/n=4/counts=1,0,4/ranks=3"), "n", {"4", "sum of counts", "5"});
}

TEST(CountsText, BadCountsAreErrorsNamingTheField) {
  expect_error(parse_case("allgatherv/f32/sum/ranks=3"), "counts", {"missing"});
  expect_error(parse_case("allgatherv/f32/sum/counts=1,x,3/ranks=3"), "counts", {"1,x,3", "commas"});
  expect_error(parse_case("allgatherv/f32/sum/counts=1,,3/ranks=3"), "counts", {"commas"});
  expect_error(parse_case("allgatherv/f32/sum/counts=1,2/ranks=3"), "counts", {"2 entries", "takes 3"});
  expect_error(parse_case("alltoallv/f32/sum/counts=1,2,3/ranks=2"), "counts", {"3 entries", "takes 4", "row-major"});
  expect_error(parse_case("allgatherv/f32/sum/counts=1/counts=1/ranks=1"), "counts", {"given twice"});
  expect_error(parse_case("allreduce/f32/sum/n=3/counts=1,2/ranks=2"), "counts", {"only the v-collectives"});
}

TEST(CountsValidate, InPlaceIsRefused) {
  for (Collective collective : {Collective::AllGatherV, Collective::ReduceScatterV, Collective::AllToAllV}) {
    Case c = vector_case(collective, uniform_counts(collective, 2, 1), 2);
    EXPECT_TRUE(validate(c).ok()) << name(collective);
    c.in_place = true;
    expect_error(validate(c), "inplace", {name(collective), "out of place"});
  }
}

TEST(CountsValidate, EveryBufferWithinTheLimit) {
  Case c = vector_case(Collective::AllGatherV, {kMaxBufferElements / 2, kMaxBufferElements / 2 + 1}, 2);
  expect_error(validate(c), "counts", {"rank 0", std::to_string(kMaxBufferElements + 1)});
  c = vector_case(Collective::AllToAllV, {0, kMaxBufferElements, kMaxBufferElements, 0}, 2);
  EXPECT_TRUE(validate(c).ok()) << "each buffer is at the limit, the total twice it";
}

TEST(CountsSizes, PerRankBuffersAndBlocks) {
  const Case gather = vector_case(Collective::AllGatherV, {3, 0, 5}, 3);
  EXPECT_EQ(input_elements(gather, 1), 0u);
  EXPECT_EQ(input_elements(gather, 2), 5u);
  EXPECT_EQ(output_elements(gather, 1), 8u);
  EXPECT_EQ(input_elements(gather), 5u) << "the largest";
  EXPECT_EQ(block_start(gather, 2), 3u);
  const Case scatter = vector_case(Collective::ReduceScatterV, {3, 0, 5}, 3);
  EXPECT_EQ(input_elements(scatter, 0), 8u);
  EXPECT_EQ(output_elements(scatter, 2), 5u);
  // Rank s sends counts[s*3+d] to rank d.
  const Case matrix = vector_case(Collective::AllToAllV, {1, 2, 3, 0, 0, 4, 5, 6, 0}, 3);
  EXPECT_EQ(input_elements(matrix, 0), 6u);
  EXPECT_EQ(input_elements(matrix, 1), 4u);
  EXPECT_EQ(output_elements(matrix, 2), 7u);
  EXPECT_EQ(output_elements(matrix), 8u) << "the largest column: rank 1 receives 2 + 0 + 6";
  EXPECT_EQ(input_elements(matrix), 11u) << "the largest row: rank 2 sends 5 + 6 + 0";
  EXPECT_EQ(send_start(matrix, 2, 1), 5u);
  EXPECT_EQ(receive_start(matrix, 2, 1), 3u);
}

// The rows and columns of n^2 counts are summed in one pass along the rows: plainly where every count
// is below 2^40, else saturating (SIZE_MAX plus one stays SIZE_MAX, where plain sums would wrap to 0).
// In 32 bits by row and by column (the transposition), or neither where a count does not fit.
TEST(CountsSizes, RowAndColumnSumsSaturateAndColumnsNarrow) {
  const Case matrix = vector_case(Collective::AllToAllV, {1, 2, 3, 0, 0, 4, 5, 6, 0}, 3);
  const RankElements elements = rank_elements(matrix);
  EXPECT_EQ(elements.inputs, (std::vector<std::size_t>{6, 4, 11}));
  EXPECT_EQ(elements.outputs, (std::vector<std::size_t>{6, 8, 7}));
  EXPECT_EQ(narrow_counts(matrix).rows, (std::vector<std::uint32_t>{1, 2, 3, 0, 0, 4, 5, 6, 0}));
  EXPECT_EQ(narrow_counts(matrix).columns, (std::vector<std::uint32_t>{1, 0, 5, 2, 0, 6, 3, 4, 0}));
  Case huge = vector_case(Collective::AllToAllV, {1, 2, 3, 4}, 2);
  huge.counts = {SIZE_MAX, 1, 2, 3};
  EXPECT_EQ(rank_elements(huge).inputs, (std::vector<std::size_t>{SIZE_MAX, 5}));
  EXPECT_EQ(rank_elements(huge).outputs, (std::vector<std::size_t>{SIZE_MAX, 4}));
  EXPECT_TRUE(narrow_counts(huge).rows.empty() && narrow_counts(huge).columns.empty());
  huge.counts = {std::size_t{1} << 32, 1, 2, 3};
  EXPECT_TRUE(narrow_counts(huge).rows.empty() && narrow_counts(huge).columns.empty());
  huge.counts = {UINT32_MAX, 1, 2, 3};
  EXPECT_EQ(narrow_counts(huge).columns, (std::vector<std::uint32_t>{UINT32_MAX, 2, 1, 3}));
  EXPECT_TRUE(narrow_counts(vector_case(Collective::AllGatherV, {3, 0, 5}, 3)).rows.empty());
}

// A v-collective's case as its uniform form keeps every field but its counts (not copied), the
// collective the uniform one, `n` the count given, out of place.
TEST(CountsSizes, UniformCaseKeepsEveryFieldButTheCounts) {
  Case v = vector_case(Collective::AllToAllV, {1, 2, 3, 4}, 2, DType::Float64);
  v.op = RedOp::Max;
  v.root = 1;
  v.offset = 3;
  v.empty_as_null = true;
  v.values = ValueKind::Special;
  v.seed = 42;
  Case expected = v;
  expected.collective = Collective::AllToAll;
  expected.counts.clear();
  expected.count = 7;
  EXPECT_EQ(uniform_case(v, 7), expected);
}

TEST(CountsOracle, AllGatherVConcatenatesBlocksOfEachRanksCount) {
  const Case c = vector_case(Collective::AllGatherV, {2, 0, 1}, 3);
  const Rows in{{1, 2}, {}, {30}};
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(expected_values(c, in, rank), (std::vector<double>{1, 2, 30}));
}

TEST(CountsOracle, ReduceScatterVGivesEachRankItsBlockOfTheSum) {
  const Case c = vector_case(Collective::ReduceScatterV, {1, 0, 2}, 3);
  const Rows in{{1, 10, 100}, {2, 20, 200}, {3, 30, 300}};
  EXPECT_EQ(expected_values(c, in, 0), (std::vector<double>{6}));
  EXPECT_TRUE(expected_values(c, in, 1).empty());
  EXPECT_EQ(expected_values(c, in, 2), (std::vector<double>{60, 600}));
}

TEST(CountsOracle, AllToAllVTransposesBlocksOfEachPairsCount) {
  // Rank 0 sends 1 to itself and 2 to rank 1; rank 1 sends 0 to rank 0 and 1 to itself.
  const Case c = vector_case(Collective::AllToAllV, {1, 2, 0, 1}, 2);
  const Rows in{{10, 11, 12}, {21}};
  EXPECT_EQ(expected_values(c, in, 0), (std::vector<double>{10}));
  EXPECT_EQ(expected_values(c, in, 1), (std::vector<double>{11, 12, 21}));
}

TEST(CountsOracle, AllZeroCountsGiveNoOutputAnywhere) {
  for (Collective collective : {Collective::AllGatherV, Collective::ReduceScatterV, Collective::AllToAllV}) {
    const Case c = vector_case(collective, uniform_counts(collective, 3, 0), 3);
    for (int rank = 0; rank < 3; ++rank) EXPECT_TRUE(expected_values(c, Rows(3), rank).empty()) << name(collective);
  }
}

// Real values take the bound path, as reduce-scatter does: one ulp inside the bound passes,
// a value far outside fails.
TEST(CountsOracle, ReduceScatterVRealValuesAreCheckedAgainstABound) {
  Case c = vector_case(Collective::ReduceScatterV, {0, 3, 1}, 3, DType::Float32);
  c.values = ValueKind::Real;
  const InputGenerator inputs(c);
  const Expected e = expected(inputs, 1);
  ASSERT_EQ(e.count, 3u);
  ASSERT_FALSE(e.bitwise());
  std::vector<std::byte> got = e.data;
  EXPECT_TRUE(compare(e, 1, got).ok);
  store_bits(c.dtype, got, 2, encode(c.dtype, decode(c.dtype, e.bits(2)) * 1.5 + 1));
  EXPECT_FALSE(compare(e, 1, got).ok);
  // Rank 1's block starts at element 0 of every input (rank 0 receives nothing).
  double sum = 0;
  for (int rank = 0; rank < 3; ++rank) sum += inputs.value(rank, 0);
  EXPECT_NEAR(decode(c.dtype, e.bits(0)), sum, e.bound[0]);
}

// The generated inputs cover each rank's own buffer: a rank with more elements than the
// others has inputs past their ends, and the oracle reads each at its own offsets.
TEST(CountsOracle, GeneratedAllToAllVMatchesAHandTransposition) {
  const Case c = vector_case(Collective::AllToAllV, {2, 0, 1, 3, 1, 0, 0, 0, 4}, 3, DType::UInt32);
  const InputGenerator inputs(c);
  for (int destination = 0; destination < 3; ++destination) {
    const Expected e = expected(inputs, destination);
    ASSERT_EQ(e.count, output_elements(c, destination));
    std::size_t at = 0;
    for (int source = 0; source < 3; ++source) {
      for (std::size_t i = 0; i < pair_count(c, source, destination); ++i) {
        EXPECT_EQ(e.bits(at++), inputs.bits(source, send_start(c, source, destination) + i));
      }
    }
  }
}

}  // namespace
}  // namespace collcheck
