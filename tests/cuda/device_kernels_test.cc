// The kernels on a CUDA device against the same kernels run on the host (which cuda_kernels_tests
// holds to the contract): every dtype x op, on random bits, at aligned and unaligned offsets and
// lengths that leave heads and tails; and the checksum kernel against link/'s checksum. The device
// tests skip with the reason where no device is present; the comparison they use is shown to fail
// on a flipped bit and a dropped NaN everywhere, device or not.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "impls/cuda/device_kernels.h"
#include "impls/cuda/host_kernels.h"
#include "impls/link/hook.h"
#include "reference/collective.h"
#include "reference/dtype.h"
#include "reference/random.h"

namespace collcheck::cuda {
namespace {

constexpr int kLaunched = cudaSuccess;  // what the launchers return when the launch went

std::vector<std::byte> random_bytes(std::size_t bytes, std::uint64_t seed) {
  std::vector<std::byte> out(bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    out[i] = static_cast<std::byte>(mix64(seed * 0x9e3779b97f4a7c15ull + i / 8) >> (8 * (i % 8)));
  return out;
}

// The first element where `got` differs from `want` (elements of `size` bytes); past the end if none.
std::size_t first_difference(const std::vector<std::byte>& want, const std::vector<std::byte>& got, std::size_t size) {
  const std::size_t count = want.size() / size;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(want.data() + i * size, got.data() + i * size, size) != 0) return i;
  }
  return count;
}

// The comparison must see what a broken kernel gets wrong: the host kernels' sum beside the same
// sum with one element's low bit flipped, and an f16 min that drops a NaN as __hmin does.
TEST(KernelComparison, SeesAFlippedBitAndADroppedNaN) {
  const std::vector<std::byte> a = random_bytes(4000, 1), b = random_bytes(4000, 2);
  std::vector<std::byte> want(4000);
  reduce_on_host(DType::Int32, RedOp::Sum, a.data(), b.data(), want.data(), 1000);
  std::vector<std::byte> broken = want;
  broken[std::size_t{4} * 777] ^= std::byte{1};
  EXPECT_EQ(first_difference(want, want, 4), 1000u);
  EXPECT_EQ(first_difference(want, broken, 4), 777u);
  const std::uint16_t nan = 0x7e00, one = 0x3c00;
  std::vector<std::byte> x(2), y(2), min(2);
  std::memcpy(x.data(), &nan, 2);
  std::memcpy(y.data(), &one, 2);
  reduce_on_host(DType::Float16, RedOp::Min, x.data(), y.data(), min.data(), 1);
  EXPECT_EQ(first_difference(min, y, 2), 0u) << "the contract's NaN is not what a NaN-dropping min gives";
}

// Device memory for the tests, or the reason there is none.
class DeviceKernels : public ::testing::Test {
 protected:
  static constexpr std::size_t kMaxBytes = (std::size_t{1} << 22) + 64;

  void SetUp() override {
    int devices = 0;
    const cudaError_t counted = cudaGetDeviceCount(&devices);
    if (counted != cudaSuccess || devices == 0) {
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount: "
                   << (counted != cudaSuccess ? cudaGetErrorString(counted) : "0 devices");
    }
    for (std::byte** buffer : {&a_, &b_, &out_}) ASSERT_EQ(cudaMalloc(buffer, kMaxBytes), cudaSuccess);
  }
  void TearDown() override {
    for (std::byte* buffer : {a_, b_, out_}) {
      if (buffer != nullptr) cudaFree(buffer);
    }
  }

  // One dtype x op at one offset and count: the device's bits must be the host kernels' bits.
  void compare(DType dtype, RedOp op, std::size_t offset, std::size_t count) {
    const std::size_t size = size_of(dtype);
    const std::size_t bytes = count * size;
    const std::vector<std::byte> a = random_bytes(bytes, count + 1), b = random_bytes(bytes, count + 2);
    std::vector<std::byte> want(bytes), got(bytes);
    reduce_on_host(dtype, op, a.data(), b.data(), want.data(), count);
    if (op == RedOp::Avg) finish_average_on_host(dtype, want.data(), count, 3);
    ASSERT_EQ(cudaMemcpy(a_ + offset, a.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(b_ + offset, b.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(launch_reduce(dtype, op, a_ + offset, b_ + offset, out_ + offset, count, nullptr), kLaunched);
    if (op == RedOp::Avg) {
      ASSERT_EQ(launch_finish_average(dtype, out_ + offset, count, 3, nullptr), kLaunched);
    }
    ASSERT_EQ(cudaMemcpy(got.data(), out_ + offset, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(first_difference(want, got, size), count)
        << name(dtype) << " " << name(op) << ", " << count << " elements at byte offset " << offset;
  }

  std::byte* a_ = nullptr;
  std::byte* b_ = nullptr;
  std::byte* out_ = nullptr;
};

TEST_F(DeviceKernels, EveryDtypeAndOpGivesTheHostsBits) {
  for (DType dtype : all_dtypes()) {
    const std::size_t size = size_of(dtype);
    for (RedOp op : all_ops()) {
      for (std::size_t offset : {std::size_t{0}, size, 16 - size, std::size_t{16}}) {
        for (std::size_t count :
             {std::size_t{1}, std::size_t{7}, std::size_t{33}, std::size_t{4099}, (std::size_t{1} << 22) / size}) {
          compare(dtype, op, offset % 16, count);
        }
      }
    }
  }
}

// The checksum kernel against link/'s checksum on the host, at lengths around its 8- and 32-byte
// words, from one segment per stream to the most (256), a slot's size and beyond.
TEST_F(DeviceKernels, TheChecksumKernelGivesTheHostsChecksum) {
  auto* result = reinterpret_cast<std::uint64_t*>(b_);
  for (std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9}, std::size_t{31},
        std::size_t{32}, std::size_t{33}, std::size_t{100}, std::size_t{1000}, std::size_t{4096}, std::size_t{65536},
        std::size_t{65541}, std::size_t{1} << 17, (std::size_t{1} << 20) + 24, (std::size_t{1} << 22) + 13}) {
    const std::vector<std::byte> data = random_bytes(bytes, bytes + 7);
    ASSERT_EQ(cudaMemcpy(a_, data.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(launch_checksum(a_, bytes, result, nullptr), kLaunched);
    std::uint64_t got = 0;
    ASSERT_EQ(cudaMemcpy(&got, result, sizeof got, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, checksum(data)) << bytes << " bytes";
  }
}

}  // namespace
}  // namespace collcheck::cuda
