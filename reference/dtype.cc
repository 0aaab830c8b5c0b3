// DType names, sizes and the table of spellings parse_dtype() accepts.
#include "reference/dtype.h"
#include "reference/numbers.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace collcheck {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::string_view long_name;
  std::string_view nccl_name;
  bool is_float;
  bool is_signed;
};

constexpr std::array<DTypeInfo, 12> kInfo{{
    {DType::Int8, "i8", "int8", "ncclInt8", false, true},
    {DType::UInt8, "u8", "uint8", "ncclUint8", false, false},
    {DType::Int32, "i32", "int32", "ncclInt32", false, true},
    {DType::UInt32, "u32", "uint32", "ncclUint32", false, false},
    {DType::Int64, "i64", "int64", "ncclInt64", false, true},
    {DType::UInt64, "u64", "uint64", "ncclUint64", false, false},
    {DType::Float16, "f16", "float16", "ncclFloat16", true, true},
    {DType::BFloat16, "bf16", "bfloat16", "ncclBfloat16", true, true},
    {DType::Float32, "f32", "float32", "ncclFloat32", true, true},
    {DType::Float64, "f64", "float64", "ncclFloat64", true, true},
    {DType::Float8E4M3, "f8e4m3", "float8_e4m3", "ncclFloat8e4m3", true, true},
    {DType::Float8E5M2, "f8e5m2", "float8_e5m2", "ncclFloat8e5m2", true, true},
}};

constexpr std::array<DType, 12> kAll{DType::Int8,    DType::UInt8,   DType::Int32,      DType::UInt32,
                                     DType::Int64,   DType::UInt64,  DType::Float16,    DType::BFloat16,
                                     DType::Float32, DType::Float64, DType::Float8E4M3, DType::Float8E5M2};

// Other spellings: nccl-tests' -d names, C and PyTorch names, NCCL's enum aliases.
struct Alias {
  std::string_view text;
  DType dtype;
};
constexpr std::array<Alias, 34> kAliases{{
    {"char", DType::Int8},
    {"int8_t", DType::Int8},
    {"ncclchar", DType::Int8},
    {"float8_e4m3fn", DType::Float8E4M3},
    {"uint8_t", DType::UInt8},
    {"byte", DType::UInt8},
    {"int", DType::Int32},
    {"int32_t", DType::Int32},
    {"ncclint", DType::Int32},
    {"uint", DType::UInt32},
    {"uint32_t", DType::UInt32},
    {"int64_t", DType::Int64},
    {"long", DType::Int64},
    {"uint64_t", DType::UInt64},
    {"half", DType::Float16},
    {"fp16", DType::Float16},
    {"ncclhalf", DType::Float16},
    {"bf16", DType::BFloat16},
    {"float", DType::Float32},
    {"fp32", DType::Float32},
    {"ncclfloat", DType::Float32},
    {"double", DType::Float64},
    {"fp64", DType::Float64},
    {"nccldouble", DType::Float64},
    {"fp8e4m3", DType::Float8E4M3},
    {"fp8_e4m3", DType::Float8E4M3},
    {"e4m3", DType::Float8E4M3},
    {"float8e4m3", DType::Float8E4M3},
    {"f8_e4m3", DType::Float8E4M3},
    {"fp8e5m2", DType::Float8E5M2},
    {"fp8_e5m2", DType::Float8E5M2},
    {"e5m2", DType::Float8E5M2},
    {"float8e5m2", DType::Float8E5M2},
    {"f8_e5m2", DType::Float8E5M2},
}};

const DTypeInfo& info(DType dtype) { return kInfo[static_cast<std::size_t>(dtype)]; }

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) { return lower(a) == lower(b); }

}  // namespace

std::span<const DType> all_dtypes() { return kAll; }
std::string_view name(DType dtype) { return info(dtype).name; }
std::string_view long_name(DType dtype) { return info(dtype).long_name; }
std::string_view nccl_name(DType dtype) { return info(dtype).nccl_name; }
bool is_float(DType dtype) { return info(dtype).is_float; }
bool is_signed(DType dtype) { return info(dtype).is_signed; }

Result<DType> parse_dtype(std::string_view text) {
  for (const DTypeInfo& entry : kInfo) {
    if (equal_ignoring_case(text, entry.name) || equal_ignoring_case(text, entry.long_name) ||
        equal_ignoring_case(text, entry.nccl_name)) {
      return entry.dtype;
    }
  }
  for (const Alias& alias : kAliases) {
    if (equal_ignoring_case(text, alias.text)) return alias.dtype;
  }
  return Error{"dtype", quoted_input(text) + ": must be one of " + dtype_choices()};
}

std::string dtype_choices() {
  std::string out;
  for (const DTypeInfo& entry : kInfo) {
    if (!out.empty()) out += ", ";
    out += entry.name;
  }
  return out + " (or long names such as float16, bfloat16, float8_e4m3, half, float, double)";
}

}  // namespace collcheck
