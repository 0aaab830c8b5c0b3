// The reduction-op contract on packed CPU buffers: a typed loop per integer type, and the
// narrow float formats through double with one rounding per step.
#include "impls/reduce_op.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "reference/float_format.h"

namespace collcheck {
namespace {

template <typename T>
T load(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

template <typename T>
void store(std::byte* at, T value) {
  std::memcpy(at, &value, sizeof value);
}

// Integers in their unsigned type, so that wraparound is defined.
template <typename T>
void reduce_integers(RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  using Unsigned = std::make_unsigned_t<T>;
  for (std::size_t i = 0; i < count; ++i) {
    const T x = load<T>(a + i * sizeof(T));
    const T y = load<T>(b + i * sizeof(T));
    T result;
    switch (op) {
      case RedOp::Prod: result = static_cast<T>(static_cast<Unsigned>(static_cast<Unsigned>(x) * static_cast<Unsigned>(y))); break;
      case RedOp::Min: result = y < x ? y : x; break;
      case RedOp::Max: result = y > x ? y : x; break;
      default: result = static_cast<T>(static_cast<Unsigned>(static_cast<Unsigned>(x) + static_cast<Unsigned>(y))); break;
    }
    store<T>(out + i * sizeof(T), result);
  }
}

double apply(RedOp op, double x, double y) {
  switch (op) {
    case RedOp::Prod: return x * y;
    case RedOp::Min:
      if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
      return y < x ? y : x;
    case RedOp::Max:
      if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
      return y > x ? y : x;
    default: return x + y;
  }
}

void reduce_floats(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  const std::size_t size = size_of(dtype);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t x = 0, y = 0;
    std::memcpy(&x, a + i * size, size);
    std::memcpy(&y, b + i * size, size);
    const std::uint64_t result = encode(dtype, apply(op, decode(dtype, x), decode(dtype, y)));
    std::memcpy(out + i * size, &result, size);
  }
}

template <typename T>
void divide_integers(std::byte* data, std::size_t count, int nranks) {
  for (std::size_t i = 0; i < count; ++i) {
    const T sum = load<T>(data + i * sizeof(T));
    // In 64 bits, so that nranks need not fit T; C++ division truncates toward zero.
    using Wide = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
    store<T>(data + i * sizeof(T), static_cast<T>(static_cast<Wide>(sum) / static_cast<Wide>(nranks)));
  }
}

}  // namespace

void reduce_elements(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) {
  switch (dtype) {
    case DType::Int8: return reduce_integers<std::int8_t>(op, a, b, out, count);
    case DType::UInt8: return reduce_integers<std::uint8_t>(op, a, b, out, count);
    case DType::Int32: return reduce_integers<std::int32_t>(op, a, b, out, count);
    case DType::UInt32: return reduce_integers<std::uint32_t>(op, a, b, out, count);
    case DType::Int64: return reduce_integers<std::int64_t>(op, a, b, out, count);
    case DType::UInt64: return reduce_integers<std::uint64_t>(op, a, b, out, count);
    default: return reduce_floats(dtype, op, a, b, out, count);
  }
}

void finish_average(DType dtype, std::byte* data, std::size_t count, int nranks) {
  switch (dtype) {
    case DType::Int8: return divide_integers<std::int8_t>(data, count, nranks);
    case DType::UInt8: return divide_integers<std::uint8_t>(data, count, nranks);
    case DType::Int32: return divide_integers<std::int32_t>(data, count, nranks);
    case DType::UInt32: return divide_integers<std::uint32_t>(data, count, nranks);
    case DType::Int64: return divide_integers<std::int64_t>(data, count, nranks);
    case DType::UInt64: return divide_integers<std::uint64_t>(data, count, nranks);
    default: break;
  }
  const std::size_t size = size_of(dtype);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, data + i * size, size);
    const std::uint64_t result = encode(dtype, decode(dtype, bits) / nranks);
    std::memcpy(data + i * size, &result, size);
  }
}

}  // namespace collcheck
