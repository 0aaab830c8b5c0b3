// Checks the dtype, collective and op tables: sizes, names, every documented spelling the
// parsers accept, the errors they give for anything else, and each collective's buffer sizes.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reference/collective.h"
#include "reference/dtype.h"

namespace collcheck {
namespace {

std::string upper(std::string_view text) {
  std::string result(text);
  for (char& c : result) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return result;
}

std::string lower(std::string_view text) {
  std::string result(text);
  for (char& c : result) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return result;
}

// Flips the case of every other letter: `float16` -> `FlOaT16`.
std::string mixed(std::string_view text) {
  std::string result(text);
  for (std::size_t i = 0; i < result.size(); i += 2) {
    result[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(result[i])));
  }
  return result;
}

struct DTypeRow {
  DType dtype;
  std::size_t size;
  std::string_view name;
  std::string_view nccl_name;
  bool is_float;
  bool is_signed;
};

// From the header's list and NCCL's ncclDataType_t.
const DTypeRow kDTypes[] = {
    {DType::Int8, 1, "i8", "ncclInt8", false, true},
    {DType::UInt8, 1, "u8", "ncclUint8", false, false},
    {DType::Int32, 4, "i32", "ncclInt32", false, true},
    {DType::UInt32, 4, "u32", "ncclUint32", false, false},
    {DType::Int64, 8, "i64", "ncclInt64", false, true},
    {DType::UInt64, 8, "u64", "ncclUint64", false, false},
    {DType::Float16, 2, "f16", "ncclFloat16", true, true},
    {DType::BFloat16, 2, "bf16", "ncclBfloat16", true, true},
    {DType::Float32, 4, "f32", "ncclFloat32", true, true},
    {DType::Float64, 8, "f64", "ncclFloat64", true, true},
    {DType::Float8E4M3, 1, "f8e4m3", "ncclFloat8e4m3", true, true},
    {DType::Float8E5M2, 1, "f8e5m2", "ncclFloat8e5m2", true, true},
};

TEST(DType, AllDTypesInDeclarationOrder) {
  const auto dtypes = all_dtypes();
  ASSERT_EQ(dtypes.size(), std::size(kDTypes));
  for (std::size_t i = 0; i < dtypes.size(); ++i) EXPECT_EQ(dtypes[i], kDTypes[i].dtype) << i;
}

TEST(DType, Table) {
  for (const DTypeRow& row : kDTypes) {
    SCOPED_TRACE(std::string(row.name));
    EXPECT_EQ(size_of(row.dtype), row.size);
    EXPECT_EQ(name(row.dtype), row.name);
    EXPECT_EQ(nccl_name(row.dtype), row.nccl_name);
    EXPECT_EQ(is_float(row.dtype), row.is_float);
    EXPECT_EQ(is_signed(row.dtype), row.is_signed);
  }
  EXPECT_EQ(long_name(DType::Float16), "float16");
  EXPECT_EQ(long_name(DType::Float8E4M3), "float8_e4m3");
}

TEST(DType, NamesAreDistinct) {
  std::set<std::string> seen;
  for (DType dtype : all_dtypes()) {
    EXPECT_TRUE(seen.insert(lower(name(dtype))).second) << name(dtype);
  }
  std::set<std::string> seen_long;
  for (DType dtype : all_dtypes()) {
    EXPECT_TRUE(seen_long.insert(lower(long_name(dtype))).second) << long_name(dtype);
  }
}

TEST(DType, EveryOwnNameParsesBack) {
  for (DType dtype : all_dtypes()) {
    for (std::string_view text : {name(dtype), long_name(dtype), nccl_name(dtype)}) {
      const Result<DType> parsed = parse_dtype(text);
      ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.error().text();
      EXPECT_EQ(*parsed, dtype) << text;
    }
  }
}

// Every spelling the header documents: canonical and long names, nccl-tests' -d names,
// C / PyTorch names, and NCCL's enum names.
const std::pair<std::string_view, DType> kDTypeSpellings[] = {
    {"i8", DType::Int8},
    {"int8", DType::Int8},
    {"char", DType::Int8},
    {"ncclInt8", DType::Int8},
    {"u8", DType::UInt8},
    {"uint8", DType::UInt8},
    {"ncclUint8", DType::UInt8},
    {"i32", DType::Int32},
    {"int32", DType::Int32},
    {"int", DType::Int32},
    {"ncclInt32", DType::Int32},
    {"u32", DType::UInt32},
    {"uint32", DType::UInt32},
    {"uint", DType::UInt32},
    {"ncclUint32", DType::UInt32},
    {"i64", DType::Int64},
    {"int64", DType::Int64},
    {"ncclInt64", DType::Int64},
    {"u64", DType::UInt64},
    {"uint64", DType::UInt64},
    {"ncclUint64", DType::UInt64},
    {"f16", DType::Float16},
    {"half", DType::Float16},
    {"float16", DType::Float16},
    {"fp16", DType::Float16},
    {"ncclFloat16", DType::Float16},
    {"bf16", DType::BFloat16},
    {"bfloat16", DType::BFloat16},
    {"ncclBfloat16", DType::BFloat16},
    {"f32", DType::Float32},
    {"float", DType::Float32},
    {"float32", DType::Float32},
    {"fp32", DType::Float32},
    {"ncclFloat32", DType::Float32},
    {"f64", DType::Float64},
    {"double", DType::Float64},
    {"float64", DType::Float64},
    {"fp64", DType::Float64},
    {"ncclFloat64", DType::Float64},
    {"f8e4m3", DType::Float8E4M3},
    {"float8_e4m3", DType::Float8E4M3},
    {"fp8e4m3", DType::Float8E4M3},
    {"e4m3", DType::Float8E4M3},
    {"ncclFloat8e4m3", DType::Float8E4M3},
    {"f8e5m2", DType::Float8E5M2},
    {"float8_e5m2", DType::Float8E5M2},
    {"fp8e5m2", DType::Float8E5M2},
    {"e5m2", DType::Float8E5M2},
    {"ncclFloat8e5m2", DType::Float8E5M2},
};

TEST(DType, ParsesEveryDocumentedSpellingInAnyCase) {
  for (const auto& [text, dtype] : kDTypeSpellings) {
    for (const std::string& spelling : {std::string(text), upper(text), lower(text), mixed(text)}) {
      const Result<DType> parsed = parse_dtype(spelling);
      ASSERT_TRUE(parsed.ok()) << spelling << ": " << parsed.error().text();
      EXPECT_EQ(*parsed, dtype) << spelling << " parsed as " << name(*parsed);
    }
  }
}

// nccl.h's ncclDataType_t also has the aliases ncclChar, ncclInt, ncclHalf, ncclFloat and
// ncclDouble; code ported from NCCL spells its types this way.
TEST(DType, ParsesNcclAliases) {
  const std::pair<std::string_view, DType> aliases[] = {
      {"ncclChar", DType::Int8},     {"ncclInt", DType::Int32},      {"ncclHalf", DType::Float16},
      {"ncclFloat", DType::Float32}, {"ncclDouble", DType::Float64},
  };
  for (const auto& [text, dtype] : aliases) {
    for (const std::string& spelling : {std::string(text), lower(text)}) {
      const Result<DType> parsed = parse_dtype(spelling);
      if (!parsed.ok()) {
        ADD_FAILURE() << spelling << ": " << parsed.error().text();
        continue;
      }
      EXPECT_EQ(*parsed, dtype) << spelling;
    }
  }
}

TEST(DType, ChoicesListEveryCanonicalName) {
  const std::string choices = dtype_choices();
  for (DType dtype : all_dtypes()) {
    EXPECT_NE(choices.find(name(dtype)), std::string::npos) << name(dtype) << " not in " << choices;
  }
}

// same_bytes: equal only with the same length and every byte the same (a difference in the last
// byte of a long buffer, or only in the length, is seen); empty buffers are equal.
TEST(DType, SameBytesSeesEveryByteAndTheLength) {
  std::vector<std::byte> first(1000), second(1000);
  for (std::size_t i = 0; i < first.size(); ++i) first[i] = second[i] = static_cast<std::byte>(i * 37);
  EXPECT_TRUE(same_bytes(first, second));
  second.back() ^= std::byte{1};
  EXPECT_FALSE(same_bytes(first, second));
  second.back() = first.back();
  second.push_back(std::byte{0});
  EXPECT_FALSE(same_bytes(first, second));
  EXPECT_FALSE(same_bytes({}, second));
  EXPECT_TRUE(same_bytes({}, {}));
}

TEST(DType, BadNamesAreErrorsNamingTheField) {
  for (std::string_view bad : {"f17", "", "float128", "int16", "f32x", "e4m3fnuz", "i9", "nccl", "bf", "fp8"}) {
    const Result<DType> parsed = parse_dtype(bad);
    ASSERT_FALSE(parsed.ok()) << "'" << bad << "' parsed as " << name(*parsed);
    EXPECT_EQ(parsed.error().field, "dtype");
    EXPECT_NE(parsed.error().message.find(bad), std::string::npos) << parsed.error().message;
    EXPECT_NE(parsed.error().message.find(dtype_choices()), std::string::npos) << parsed.error().message;
  }
}

// --- collectives and ops ---

struct CollectiveRow {
  Collective collective;
  std::string_view name;
  bool reduces;
  bool rank_identical;
  bool rooted;
  // count=5, nranks=3
  std::size_t input;
  std::size_t output;
};

const CollectiveRow kCollectives[] = {
    {Collective::AllReduce, "allreduce", true, true, false, 5, 5},
    {Collective::AllGather, "allgather", false, true, false, 5, 15},
    {Collective::ReduceScatter, "reducescatter", true, false, false, 15, 5},
    {Collective::AllToAll, "alltoall", false, false, false, 15, 15},
    {Collective::Broadcast, "broadcast", false, true, true, 5, 5},
    {Collective::Reduce, "reduce", true, false, true, 5, 5},
    // The v-collectives' sizes here are their uniform forms' (per-rank sizes: counts_test.cc).
    {Collective::AllGatherV, "allgatherv", false, true, false, 5, 15},
    {Collective::ReduceScatterV, "reducescatterv", true, false, false, 15, 5},
    {Collective::AllToAllV, "alltoallv", false, false, false, 15, 15},
};

TEST(Collective, AllCollectivesInDeclarationOrder) {
  const auto collectives = all_collectives();
  ASSERT_EQ(collectives.size(), std::size(kCollectives));
  for (std::size_t i = 0; i < collectives.size(); ++i) {
    EXPECT_EQ(collectives[i], kCollectives[i].collective) << i;
  }
}

TEST(Collective, Table) {
  for (const CollectiveRow& row : kCollectives) {
    SCOPED_TRACE(std::string(row.name));
    EXPECT_EQ(name(row.collective), row.name);
    EXPECT_EQ(reduces(row.collective), row.reduces);
    EXPECT_EQ(rank_identical(row.collective), row.rank_identical);
    EXPECT_EQ(rooted(row.collective), row.rooted);
    EXPECT_EQ(input_elements(row.collective, 5, 3), row.input);
    EXPECT_EQ(output_elements(row.collective, 5, 3), row.output);
  }
}

TEST(Collective, BufferSizesScale) {
  for (const CollectiveRow& row : kCollectives) {
    SCOPED_TRACE(std::string(row.name));
    EXPECT_EQ(input_elements(row.collective, 0, 7), 0u);
    EXPECT_EQ(output_elements(row.collective, 0, 7), 0u);
    // With one rank every buffer holds count elements.
    EXPECT_EQ(input_elements(row.collective, 9, 1), 9u);
    EXPECT_EQ(output_elements(row.collective, 9, 1), 9u);
    // Large sizes do not overflow: 2^36 elements per rank times 4096 ranks.
    const std::size_t count = std::size_t{1} << 36;
    const std::size_t scaled = count * 4096;
    EXPECT_EQ(input_elements(row.collective, count, 4096), row.input == 15 ? scaled : count);
    EXPECT_EQ(output_elements(row.collective, count, 4096), row.output == 15 ? scaled : count);
  }
}

const std::pair<std::string_view, Collective> kCollectiveSpellings[] = {
    {"allreduce", Collective::AllReduce},
    {"all-reduce", Collective::AllReduce},
    {"all_reduce", Collective::AllReduce},
    {"AllReduce", Collective::AllReduce},
    {"all_reduce_perf", Collective::AllReduce},
    {"ar", Collective::AllReduce},
    {"allgather", Collective::AllGather},
    {"all-gather", Collective::AllGather},
    {"all_gather", Collective::AllGather},
    {"AllGather", Collective::AllGather},
    {"all_gather_perf", Collective::AllGather},
    {"ag", Collective::AllGather},
    {"reducescatter", Collective::ReduceScatter},
    {"reduce-scatter", Collective::ReduceScatter},
    {"reduce_scatter", Collective::ReduceScatter},
    {"ReduceScatter", Collective::ReduceScatter},
    {"reduce_scatter_perf", Collective::ReduceScatter},
    {"rs", Collective::ReduceScatter},
    {"alltoall", Collective::AllToAll},
    {"all-to-all", Collective::AllToAll},
    {"all_to_all", Collective::AllToAll},
    {"AllToAll", Collective::AllToAll},
    {"alltoall_perf", Collective::AllToAll},
    {"a2a", Collective::AllToAll},
    {"broadcast", Collective::Broadcast},
    {"Broadcast", Collective::Broadcast},
    {"broadcast_perf", Collective::Broadcast},
    {"bcast", Collective::Broadcast},
    {"reduce", Collective::Reduce},
    {"Reduce", Collective::Reduce},
    {"reduce_perf", Collective::Reduce},
    {"allgatherv", Collective::AllGatherV},
    {"all_gather_v", Collective::AllGatherV},
    {"AllGatherV", Collective::AllGatherV},
    {"agv", Collective::AllGatherV},
    {"reducescatterv", Collective::ReduceScatterV},
    {"reduce_scatter_v", Collective::ReduceScatterV},
    {"rsv", Collective::ReduceScatterV},
    {"alltoallv", Collective::AllToAllV},
    {"all_to_all_v", Collective::AllToAllV},
    {"AllToAllV", Collective::AllToAllV},
    {"a2av", Collective::AllToAllV},
};

TEST(Collective, ParsesEveryDocumentedSpellingInAnyCase) {
  for (const auto& [text, collective] : kCollectiveSpellings) {
    for (const std::string& spelling : {std::string(text), upper(text), lower(text), mixed(text)}) {
      const Result<Collective> parsed = parse_collective(spelling);
      ASSERT_TRUE(parsed.ok()) << spelling << ": " << parsed.error().text();
      EXPECT_EQ(*parsed, collective) << spelling << " parsed as " << name(*parsed);
    }
  }
  for (Collective collective : all_collectives()) {
    const Result<Collective> parsed = parse_collective(name(collective));
    ASSERT_TRUE(parsed.ok()) << name(collective);
    EXPECT_EQ(*parsed, collective);
  }
}

TEST(Collective, ChoicesListEveryName) {
  const std::string choices = collective_choices();
  for (Collective collective : all_collectives()) {
    EXPECT_NE(choices.find(name(collective)), std::string::npos) << choices;
  }
}

TEST(Collective, BadNamesAreErrorsNamingTheField) {
  for (std::string_view bad :
       {"allreduc", "", "gather", "scatter", "sendrecv", "allreduce2", "allreduce_perfx", "_perf", "r"}) {
    const Result<Collective> parsed = parse_collective(bad);
    ASSERT_FALSE(parsed.ok()) << "'" << bad << "' parsed as " << name(*parsed);
    EXPECT_EQ(parsed.error().field, "collective");
    EXPECT_NE(parsed.error().message.find(bad), std::string::npos) << parsed.error().message;
    EXPECT_NE(parsed.error().message.find(collective_choices()), std::string::npos) << parsed.error().message;
  }
}

TEST(RedOp, TableAndParsing) {
  const std::pair<RedOp, std::string_view> ops[] = {
      {RedOp::Sum, "sum"}, {RedOp::Prod, "prod"}, {RedOp::Min, "min"}, {RedOp::Max, "max"}, {RedOp::Avg, "avg"}};
  const auto all = all_ops();
  ASSERT_EQ(all.size(), std::size(ops));
  const std::string choices = op_choices();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto [op, text] = ops[i];
    EXPECT_EQ(all[i], op);
    EXPECT_EQ(name(op), text);
    EXPECT_NE(choices.find(text), std::string::npos) << choices;
    for (const std::string& spelling : {std::string(text), upper(text), mixed(text)}) {
      const Result<RedOp> parsed = parse_op(spelling);
      ASSERT_TRUE(parsed.ok()) << spelling << ": " << parsed.error().text();
      EXPECT_EQ(*parsed, op) << spelling;
    }
  }
}

TEST(RedOp, BadNamesAreErrorsNamingTheField) {
  for (std::string_view bad : {"bogus", "", "summ", "su", "mean2"}) {
    const Result<RedOp> parsed = parse_op(bad);
    ASSERT_FALSE(parsed.ok()) << "'" << bad << "' parsed as " << name(*parsed);
    EXPECT_EQ(parsed.error().field, "op");
    EXPECT_NE(parsed.error().message.find(bad), std::string::npos) << parsed.error().message;
    EXPECT_NE(parsed.error().message.find(op_choices()), std::string::npos) << parsed.error().message;
  }
}

}  // namespace
}  // namespace collcheck
