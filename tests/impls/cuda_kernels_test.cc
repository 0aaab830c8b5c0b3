// The cuda transport's reduction kernels, run on the host, against the contract of
// impls/link/reduce_op.h: the same bits for every dtype x op (any NaN where the contract gives a
// NaN), every pair of 8-bit values, all 16-bit values against random partners, the float
// conversions at their ties and edges, and the 16-byte path at every offset. The comparison is
// shown to fail on kernels broken as CUDA's defaults would break them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "impls/cuda/host_kernels.h"
#include "impls/cuda/reduce_kernels.h"
#include "impls/link/reduce_op.h"
#include "reference/float_format.h"
#include "reference/random.h"

namespace collcheck {
namespace {

using Reducer = std::function<void(DType, RedOp, const std::byte*, const std::byte*, std::byte*, std::size_t)>;

std::uint64_t element_bits(DType dtype, const std::vector<std::byte>& buffer, std::size_t i) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, buffer.data() + i * size_of(dtype), size_of(dtype));
  return bits;
}

bool same_element(DType dtype, std::uint64_t want, std::uint64_t got) {
  if (want == got) return true;
  return is_float(dtype) && std::isnan(decode(dtype, want)) && std::isnan(decode(dtype, got));
}

// The first element where `reducer` and the contract disagree on a ⊕ b, described; none if they agree.
std::optional<std::string> first_difference(DType dtype, RedOp op, const std::vector<std::byte>& a,
                                            const std::vector<std::byte>& b, const Reducer& reducer) {
  const std::size_t count = a.size() / size_of(dtype);
  std::vector<std::byte> want(a.size()), got(a.size());
  reduce_elements(dtype, op, a.data(), b.data(), want.data(), count);
  reducer(dtype, op, a.data(), b.data(), got.data(), count);
  for (std::size_t i = 0; i < count; ++i) {
    if (!same_element(dtype, element_bits(dtype, want, i), element_bits(dtype, got, i))) {
      return std::string(name(dtype)) + " " + std::string(name(op)) + " of " +
             std::to_string(element_bits(dtype, a, i)) + " and " + std::to_string(element_bits(dtype, b, i)) +
             ": contract " + std::to_string(element_bits(dtype, want, i)) + ", kernel " +
             std::to_string(element_bits(dtype, got, i));
    }
  }
  return std::nullopt;
}

const Reducer kHostKernels = cuda::reduce_on_host;

// Every pair of 8-bit values: a[i] = i / 256, b[i] = i % 256.
void every_byte_pair(std::vector<std::byte>& a, std::vector<std::byte>& b) {
  a.resize(65536);
  b.resize(65536);
  for (std::size_t i = 0; i < 65536; ++i) {
    a[i] = static_cast<std::byte>(i / 256);
    b[i] = static_cast<std::byte>(i % 256);
  }
}

// Random bits, with the dtype's special values mixed in (zeros, infinities, NaNs, the largest
// finite value, subnormals) where it is a float.
std::vector<std::byte> random_elements(DType dtype, std::size_t count, std::uint64_t seed) {
  const std::size_t size = size_of(dtype);
  std::vector<std::byte> out(count * size);
  std::uint64_t state = seed * 0x9e3779b97f4a7c15ull;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint64_t bits = mix64(state++);
    if (is_float(dtype) && bits % 4 == 0) {
      const FloatFormat& format = float_format(dtype);
      const double specials[] = {0.0,
                                 -0.0,
                                 INFINITY,
                                 -INFINITY,
                                 NAN,
                                 format.max_finite(),
                                 -format.max_finite(),
                                 format.min_subnormal(),
                                 format.min_normal(),
                                 1.0};
      bits = encode(dtype, specials[(bits >> 8) % std::size(specials)]);
    }
    std::memcpy(out.data() + i * size, &bits, size);
  }
  return out;
}

TEST(CudaKernels, EveryPairOfEightBitValuesUnderEveryOp) {
  std::vector<std::byte> a, b;
  every_byte_pair(a, b);
  for (DType dtype : {DType::Int8, DType::UInt8, DType::Float8E4M3, DType::Float8E5M2}) {
    for (RedOp op : all_ops()) {
      EXPECT_EQ(first_difference(dtype, op, a, b, kHostKernels), std::nullopt);
    }
  }
}

TEST(CudaKernels, EverySixteenBitFloatAgainstRandomPartners) {
  std::vector<std::byte> a(65536 * 2);
  for (std::size_t i = 0; i < 65536; ++i) {
    const auto bits = static_cast<std::uint16_t>(i);
    std::memcpy(a.data() + 2 * i, &bits, 2);
  }
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    for (RedOp op : all_ops()) {
      for (std::uint64_t round = 0; round < 4; ++round) {
        EXPECT_EQ(first_difference(dtype, op, a, random_elements(dtype, 65536, round), kHostKernels), std::nullopt);
      }
    }
  }
}

TEST(CudaKernels, WideTypesOnRandomAndSpecialValues) {
  for (DType dtype : {DType::Int32, DType::UInt32, DType::Int64, DType::UInt64, DType::Float32, DType::Float64}) {
    for (RedOp op : all_ops()) {
      EXPECT_EQ(
          first_difference(dtype, op, random_elements(dtype, 50000, 1), random_elements(dtype, 50000, 2), kHostKernels),
          std::nullopt);
    }
  }
}

// The conversions of the narrow formats against the reference's: every encoding decoded, and
// every value, every midpoint between neighbours (a tie, which goes to the even one), and points
// just beside the midpoints encoded, up to past the largest finite value.
TEST(CudaKernels, NarrowConversionsAgreeWithTheReferenceAtTiesAndEdges) {
  const struct {
    DType dtype;
    cuda::NarrowFormat format;
  } formats[] = {{DType::Float16, {5, 10, 15, true}},
                 {DType::BFloat16, {8, 7, 127, true}},
                 {DType::Float8E4M3, {4, 3, 7, false}},
                 {DType::Float8E5M2, {5, 2, 15, true}}};
  for (const auto& [dtype, format] : formats) {
    const std::uint32_t encodings = 1u << (8 * size_of(dtype));
    for (std::uint32_t bits = 0; bits < encodings; ++bits) {
      const double want = decode(dtype, bits);
      const double got = cuda::decode_narrow(format, bits);
      ASSERT_TRUE(want == got || (std::isnan(want) && std::isnan(got)))
          << name(dtype) << " decodes " << bits << " to " << got << ", not " << want;
    }
    for (std::uint32_t bits = 0; bits + 1 < encodings / 2; ++bits) {
      const double low = decode(dtype, bits), high = decode(dtype, bits + 1);
      if (!std::isfinite(high)) continue;
      const double middle = (low + high) / 2;
      for (double value : {low, middle, std::nextafter(middle, 0.0), std::nextafter(middle, INFINITY), -middle,
                           high * 2, high * 1.5}) {
        ASSERT_EQ(cuda::encode_narrow(format, value), encode(dtype, value)) << name(dtype) << " encodes " << value;
      }
    }
  }
}

// The 16-byte path and its scalar head and tail: inputs and output at every element offset within
// 16 bytes (the same for all three, and different), every count up to three vectors and a bit.
TEST(CudaKernels, SpansAtEveryOffsetAndLength) {
  for (DType dtype : all_dtypes()) {
    const std::size_t size = size_of(dtype);
    const std::vector<std::byte> x = random_elements(dtype, 80, 3), y = random_elements(dtype, 80, 4);
    for (std::size_t offset_a = 0; offset_a < 16; offset_a += size) {
      for (std::size_t offset_out : {offset_a, (offset_a + size) % 16}) {
        for (std::size_t count = 0; count <= 3 * 16 / size + 3; ++count) {
          alignas(16) std::byte a[16 + 80 * 8], b[16 + 80 * 8], want[16 + 80 * 8], got[16 + 80 * 8];
          std::memcpy(a + offset_a, x.data(), count * size);
          std::memcpy(b + offset_a, y.data(), count * size);
          std::memset(got, 0x5a, sizeof got);
          reduce_elements(dtype, RedOp::Sum, a + offset_a, b + offset_a, want, count);
          cuda::reduce_on_host(dtype, RedOp::Sum, a + offset_a, b + offset_a, got + offset_out, count);
          for (std::size_t i = 0; i < count * size; ++i) {
            ASSERT_EQ(want[i], got[offset_out + i]) << name(dtype) << " byte " << i << " of " << count
                                                    << " elements at offsets " << offset_a << ", " << offset_out;
          }
          for (std::size_t i = 0; i < offset_out; ++i) ASSERT_EQ(got[i], std::byte{0x5a}) << "written before the span";
          ASSERT_EQ(got[offset_out + count * size], std::byte{0x5a}) << "written past the span";
        }
      }
    }
  }
}

TEST(CudaKernels, AverageFinishesAsTheContractDoes) {
  for (DType dtype : all_dtypes()) {
    for (int nranks : {1, 2, 3, 7, 11, 13, 4096}) {
      std::vector<std::byte> want = random_elements(dtype, 4000, static_cast<std::uint64_t>(nranks));
      std::vector<std::byte> got = want;
      finish_average(dtype, want.data(), 4000, nranks);
      cuda::finish_average_on_host(dtype, got.data(), 4000, nranks);
      for (std::size_t i = 0; i < 4000; ++i) {
        ASSERT_TRUE(same_element(dtype, element_bits(dtype, want, i), element_bits(dtype, got, i)))
            << name(dtype) << " avg over " << nranks << " ranks, element " << i;
      }
    }
  }
}

// The comparison above catches kernels broken as CUDA's own operations are: fminf's min drops a
// NaN operand, and __nv_fp8_e4m3's conversion saturates where the contract gives NaN.
TEST(CudaKernels, TheComparisonFindsKernelsThatDropNaNOrSaturate) {
  std::vector<std::byte> a, b;
  every_byte_pair(a, b);
  const Reducer drops_nan = [](DType dtype, RedOp op, const std::byte* x, const std::byte* y, std::byte* out,
                               std::size_t count) {
    cuda::reduce_on_host(dtype, op, x, y, out, count);
    for (std::size_t i = 0; i < count; ++i) {
      if (std::isnan(decode(dtype, static_cast<std::uint64_t>(x[i])))) out[i] = y[i];
    }
  };
  EXPECT_NE(first_difference(DType::Float8E5M2, RedOp::Min, a, b, drops_nan), std::nullopt);
  const Reducer saturates = [](DType dtype, RedOp op, const std::byte* x, const std::byte* y, std::byte* out,
                               std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      const double sum =
          decode(dtype, static_cast<std::uint64_t>(x[i])) + decode(dtype, static_cast<std::uint64_t>(y[i]));
      out[i] = static_cast<std::byte>(encode(dtype, sum, Saturation::Finite));
    }
    (void)op;
  };
  const std::optional<std::string> found = first_difference(DType::Float8E4M3, RedOp::Sum, a, b, saturates);
  ASSERT_NE(found, std::nullopt);
}

}  // namespace
}  // namespace collcheck
