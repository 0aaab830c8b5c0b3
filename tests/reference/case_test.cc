// Checks Case: validate()'s limits and the field each error names, the exact text form
// to_string() writes, and parse_case() on good, defaulted and malformed text.
#include "reference/case.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "reference/counts.h"
#include "tests/support/errors.h"

namespace collcheck {
namespace {

Case example() {
  Case c;
  c.collective = Collective::AllReduce;
  c.dtype = DType::Float32;
  c.op = RedOp::Sum;
  c.count = 1000;
  c.nranks = 7;
  c.root = 0;
  c.in_place = true;
  c.offset = 3;
  c.values = ValueKind::Exact;
  c.seed = 42;
  return c;
}

constexpr std::string_view kExampleText =
    "allreduce/f32/sum/n=1000/ranks=7/root=0/inplace/offset=3/values=exact/seed=42";

using testing::expect_error;

// Empty buffers as null pointers: a flag after the offset, written only when set, read back
// anywhere among the fields, once.
TEST(CaseText, EmptyNullIsAFlagWrittenWhenSet) {
  Case c = example();
  c.count = 0;
  c.empty_as_null = true;
  EXPECT_EQ(to_string(c), "allreduce/f32/sum/n=0/ranks=7/root=0/inplace/offset=3/emptynull/values=exact/seed=42");
  EXPECT_EQ(parse_case(to_string(c)).value(), c);
  EXPECT_TRUE(parse_case("allreduce/f32/sum/emptynull/n=0/ranks=2").value().empty_as_null);
  EXPECT_FALSE(parse_case("allreduce/f32/sum/n=0/ranks=2").value().empty_as_null);
  expect_error(parse_case("allreduce/f32/sum/n=0/ranks=2/emptynull/emptynull"), "emptynull", {"given twice"});
}

TEST(CaseValidate, ExampleIsValid) {
  const Status status = validate(example());
  EXPECT_TRUE(status.ok()) << status.error().text();
  EXPECT_TRUE(validate(Case{}).ok()) << "the default case is valid";
}

TEST(CaseValidate, Ranks) {
  for (int nranks : {0, -1, 16385, 1 << 20}) {
    Case c = example();
    c.nranks = nranks;
    SCOPED_TRACE(nranks);
    expect_error(validate(c), "ranks", {std::to_string(nranks), "1..16384"});
  }
  for (int nranks : {1, 2, 11, 4096, 16384}) {
    Case c = example();
    c.nranks = nranks;
    EXPECT_TRUE(validate(c).ok()) << nranks;
  }
}

TEST(CaseValidate, Root) {
  for (Collective collective : all_collectives()) {
    SCOPED_TRACE(std::string(name(collective)));
    Case c = example();
    c.collective = collective;
    if (per_rank_counts(collective)) {  // the v-collectives need counts and run out of place
      c.in_place = false;
      set_counts(c, uniform_counts(collective, c.nranks, 3));
    }
    c.root = 7;  // nranks is 7
    expect_error(validate(c), "root", {"7"});
    c.root = -1;
    expect_error(validate(c), "root", {"-1"});
    c.root = 6;
    EXPECT_TRUE(validate(c).ok());
  }
  Case one = example();
  one.nranks = 1;
  one.root = 1;
  expect_error(validate(one), "root");
}

TEST(CaseValidate, Count) {
  Case c = example();
  c.count = kMaxCount;
  EXPECT_TRUE(validate(c).ok()) << "count at the limit";
  c.count = kMaxCount + 1;
  expect_error(validate(c), "n");
  c.count = ~std::size_t{0};
  expect_error(validate(c), "n");
  c.count = 0;
  EXPECT_TRUE(validate(c).ok()) << "an empty call is valid";
}

TEST(CaseValidate, BufferSize) {
  // Reduce-scatter's input holds nranks * count elements.
  Case c = example();
  c.collective = Collective::ReduceScatter;
  c.nranks = 4;
  c.count = kMaxBufferElements / 4;
  EXPECT_TRUE(validate(c).ok()) << "input at the limit";
  c.count = kMaxBufferElements / 4 + 1;
  expect_error(validate(c), "n");
  c.collective = Collective::AllToAll;
  expect_error(validate(c), "n");
  c.collective = Collective::AllReduce;
  EXPECT_TRUE(validate(c).ok());
  // All-gather's output is one rank's buffer too.
  c.collective = Collective::AllGather;
  expect_error(validate(c), "n");
}

TEST(CaseValidate, Offset) {
  Case c = example();
  c.offset = kMaxOffset;
  EXPECT_TRUE(validate(c).ok());
  c.offset = kMaxOffset + 1;
  expect_error(validate(c), "offset", {"4097", "4096"});
}

TEST(CaseText, ToStringWritesEveryFieldInOrder) {
  EXPECT_EQ(to_string(example()), kExampleText);
  Case c = example();
  c.in_place = false;
  EXPECT_EQ(to_string(c), "allreduce/f32/sum/n=1000/ranks=7/root=0/outofplace/offset=3/values=exact/seed=42");
  c.collective = Collective::ReduceScatter;
  c.dtype = DType::Float8E5M2;
  c.op = RedOp::Avg;
  c.count = 0;
  c.nranks = 4096;
  c.root = 4095;
  c.offset = 0;
  c.values = ValueKind::Special;
  c.seed = 18446744073709551615ull;
  EXPECT_EQ(to_string(c),
            "reducescatter/f8e5m2/avg/n=0/ranks=4096/root=4095/outofplace/offset=0/"
            "values=special/seed=18446744073709551615");
  c.values = ValueKind::Real;
  c.collective = Collective::AllToAll;
  c.dtype = DType::UInt64;
  c.op = RedOp::Prod;
  EXPECT_EQ(to_string(c),
            "alltoall/u64/prod/n=0/ranks=4096/root=4095/outofplace/offset=0/"
            "values=real/seed=18446744073709551615");
}

TEST(CaseText, ValueKindNames) {
  EXPECT_EQ(name(ValueKind::Exact), "exact");
  EXPECT_EQ(name(ValueKind::Real), "real");
  EXPECT_EQ(name(ValueKind::Special), "special");
  for (ValueKind kind : {ValueKind::Exact, ValueKind::Real, ValueKind::Special}) {
    const Result<ValueKind> parsed = parse_value_kind(name(kind));
    ASSERT_TRUE(parsed.ok()) << name(kind);
    EXPECT_EQ(*parsed, kind);
  }
  EXPECT_FALSE(parse_value_kind("bogus").ok());
}

TEST(CaseText, ParsesItsOwnText) {
  const Result<Case> parsed = parse_case(kExampleText);
  ASSERT_TRUE(parsed.ok()) << parsed.error().text();
  EXPECT_EQ(*parsed, example());
  Case c = example();
  c.in_place = false;
  const Result<Case> outofplace = parse_case(to_string(c));
  ASSERT_TRUE(outofplace.ok()) << outofplace.error().text();
  EXPECT_EQ(*outofplace, c);
}

TEST(CaseText, DefaultsForOmittedFields) {
  const Result<Case> parsed = parse_case("allgather/bf16/sum/n=5/ranks=3");
  ASSERT_TRUE(parsed.ok()) << parsed.error().text();
  Case expected;
  expected.collective = Collective::AllGather;
  expected.dtype = DType::BFloat16;
  expected.op = RedOp::Sum;
  expected.count = 5;
  expected.nranks = 3;
  expected.root = 0;
  expected.in_place = false;
  expected.offset = 0;
  expected.values = ValueKind::Exact;
  expected.seed = 0;
  EXPECT_EQ(*parsed, expected);
  EXPECT_EQ(input_elements(*parsed), 5u);
  EXPECT_EQ(output_elements(*parsed), 15u);
}

TEST(CaseText, KeysInAnyOrder) {
  const Result<Case> parsed =
      parse_case("allreduce/f32/sum/seed=42/values=exact/offset=3/inplace/root=0/ranks=7/n=1000");
  ASSERT_TRUE(parsed.ok()) << parsed.error().text();
  EXPECT_EQ(*parsed, example());
}

TEST(CaseText, PositionalsTakeEverySpelling) {
  const Result<Case> parsed =
      parse_case("All_Reduce/float32/SUM/n=1000/ranks=7/root=0/inplace/offset=3/values=exact/seed=42");
  ASSERT_TRUE(parsed.ok()) << parsed.error().text();
  EXPECT_EQ(*parsed, example());
}

TEST(CaseText, LargestSeed) {
  const Result<Case> parsed = parse_case("broadcast/u8/max/n=1/ranks=2/root=1/seed=18446744073709551615");
  ASSERT_TRUE(parsed.ok()) << parsed.error().text();
  EXPECT_EQ(parsed->seed, 18446744073709551615ull);
  EXPECT_EQ(parsed->root, 1);
  EXPECT_EQ(parsed->collective, Collective::Broadcast);
  EXPECT_EQ(parsed->dtype, DType::UInt8);
  EXPECT_EQ(parsed->op, RedOp::Max);
}

TEST(CaseText, RequiredFields) {
  expect_error(parse_case("allreduce/f32/sum/ranks=7"), "n");
  expect_error(parse_case("allreduce/f32/sum/n=1000"), "ranks");
}

TEST(CaseText, UnknownKeyListsTheAllowedKeys) {
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=2/bogus=3"), "bogus",
               {"ranks", "root", "offset", "values", "seed"});
}

TEST(CaseText, DuplicateKey) {
  expect_error(parse_case("allreduce/f32/sum/n=1/n=2/ranks=2"), "n");
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=2/seed=1/seed=1"), "seed");
}

TEST(CaseText, BadNumbers) {
  expect_error(parse_case("allreduce/f32/sum/n=abc/ranks=2"), "n", {"abc"});
  expect_error(parse_case("allreduce/f32/sum/n=-1/ranks=2"), "n", {"-1"});
  expect_error(parse_case("allreduce/f32/sum/n=/ranks=2"), "n");
  expect_error(parse_case("allreduce/f32/sum/n=12x/ranks=2"), "n", {"12x"});
  expect_error(parse_case("allreduce/f32/sum/n=1.5/ranks=2"), "n");
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=two"), "ranks", {"two"});
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=99999999999999999999"), "ranks");
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=2/seed=18446744073709551616"), "seed", {"18446744073709551616"});
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=2/seed=-1"), "seed");
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=2/offset=x"), "offset");
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=2/root=r"), "root");
  expect_error(parse_case("allreduce/f32/sum/n=99999999999999999999999/ranks=2"), "n");
}

TEST(CaseText, ValuesOutOfRangeAreCaughtByValidation) {
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=0"), "ranks", {"1..16384"});
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=16385"), "ranks", {"1..16384"});
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=2/root=2"), "root");
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=2/offset=4097"), "offset");
  expect_error(parse_case("allreduce/f32/sum/n=68719476737/ranks=2"), "n");
}

TEST(CaseText, BadPositionals) {
  expect_error(parse_case("allreduce/f17/sum/n=1/ranks=2"), "dtype", {"f17"});
  expect_error(parse_case("allreduce/f32/plus/n=1/ranks=2"), "op", {"plus"});
  expect_error(parse_case("allreduc/f32/sum/n=1/ranks=2"), "collective", {"allreduc"});
  // The order is fixed: collective, dtype, op.
  expect_error(parse_case("f32/allreduce/sum/n=1/ranks=2"), "collective");
}

TEST(CaseText, Malformed) {
  for (std::string_view text :
       {"", "allreduce", "allreduce/f32", "allreduce/f32/sum", "allreduce/f32/sum/", "/allreduce/f32/sum/n=1/ranks=2",
        "allreduce/f32/sum/n=1/ranks=2/", "allreduce/f32/sum/n=1//ranks=2", "allreduce/f32/sum/n=1/ranks=2/inplac",
        "allreduce/f32/sum/n1/ranks=2", "allreduce/f32/sum/=1/n=1/ranks=2"}) {
    EXPECT_FALSE(parse_case(text).ok()) << "'" << text << "' parsed";
  }
}

TEST(CaseText, BadValueKind) {
  expect_error(parse_case("allreduce/f32/sum/n=1/ranks=2/values=bogus"), "values",
               {"bogus", "exact", "real", "special"});
}

TEST(Case, BufferElementsFollowTheCollective) {
  Case c = example();
  c.count = 5;
  c.nranks = 3;
  c.collective = Collective::ReduceScatter;
  EXPECT_EQ(input_elements(c), 15u);
  EXPECT_EQ(output_elements(c), 5u);
  c.collective = Collective::AllToAll;
  EXPECT_EQ(input_elements(c), 15u);
  EXPECT_EQ(output_elements(c), 15u);
  c.collective = Collective::Broadcast;
  EXPECT_EQ(input_elements(c), 5u);
  EXPECT_EQ(output_elements(c), 5u);
}

}  // namespace
}  // namespace collcheck
