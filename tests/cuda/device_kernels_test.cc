// The kernels on a CUDA device against the same kernels run on the host (which cuda_kernels_tests
// holds to the contract): every dtype x op, on random bits, at aligned and unaligned offsets and
// lengths that leave heads and tails; and the checksum kernel against link/'s checksum. Exits 77
// (skipped) where no device is present, after showing that its comparison fails on a flipped bit
// and a dropped NaN (so it fails here too if it could not see a broken kernel).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "impls/cuda/device_kernels.h"
#include "impls/cuda/host_kernels.h"
#include "impls/link/hook.h"
#include "reference/collective.h"
#include "reference/dtype.h"
#include "reference/random.h"

namespace {

using collcheck::DType;
using collcheck::RedOp;

int failures = 0;

bool check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::printf("FAIL %s: %s\n", what, cudaGetErrorString(status));
  ++failures;
  return false;
}

std::vector<std::byte> random_bytes(std::size_t bytes, std::uint64_t seed);

// The first element where `got` differs from `want` (elements of `size` bytes); past the end if none.
std::size_t first_difference(const std::vector<std::byte>& want, const std::vector<std::byte>& got, std::size_t size) {
  const std::size_t count = want.size() / size;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(want.data() + i * size, got.data() + i * size, size) != 0) return i;
  }
  return count;
}

// The comparison must see what a broken kernel gets wrong, device or not: the host kernels'
// sum set beside the same sum with one element's low bit flipped (and an f16 min that drops a
// NaN, as __hmin does) must each be told apart at that element. Fails the test where it cannot.
bool the_comparison_can_fail() {
  const std::vector<std::byte> a = random_bytes(4000, 1), b = random_bytes(4000, 2);
  std::vector<std::byte> want(4000), broken(4000);
  collcheck::cuda::reduce_on_host(DType::Int32, RedOp::Sum, a.data(), b.data(), want.data(), 1000);
  broken = want;
  broken[4 * 777] ^= std::byte{1};
  if (first_difference(want, want, 4) != 1000 || first_difference(want, broken, 4) != 777) return false;
  const std::uint16_t nan = 0x7e00, one = 0x3c00;
  std::vector<std::byte> x(2), y(2), min(2);
  std::memcpy(x.data(), &nan, 2);
  std::memcpy(y.data(), &one, 2);
  collcheck::cuda::reduce_on_host(DType::Float16, RedOp::Min, x.data(), y.data(), min.data(), 1);
  return first_difference(min, y, 2) == 0;  // the contract's NaN is not the one a NaN-dropping min gives
}

std::vector<std::byte> random_bytes(std::size_t bytes, std::uint64_t seed) {
  std::vector<std::byte> out(bytes);
  for (std::size_t i = 0; i < bytes; ++i) {
    out[i] = static_cast<std::byte>(collcheck::mix64(seed * 0x9e3779b97f4a7c15ull + i / 8) >> (8 * (i % 8)));
  }
  return out;
}

// One dtype x op at one offset and count: the device's bits must be the host kernels' bits.
void compare(DType dtype, RedOp op, std::size_t offset, std::size_t count, std::byte* device_a, std::byte* device_b,
             std::byte* device_out) {
  const std::size_t size = collcheck::size_of(dtype);
  const std::size_t bytes = count * size;
  const std::vector<std::byte> a = random_bytes(bytes, count + 1), b = random_bytes(bytes, count + 2);
  std::vector<std::byte> want(bytes), got(bytes);
  collcheck::cuda::reduce_on_host(dtype, op, a.data(), b.data(), want.data(), count);
  if (op == RedOp::Avg) collcheck::cuda::finish_average_on_host(dtype, want.data(), count, 3);
  if (!check(cudaMemcpy(device_a + offset, a.data(), bytes, cudaMemcpyHostToDevice), "copy in") ||
      !check(cudaMemcpy(device_b + offset, b.data(), bytes, cudaMemcpyHostToDevice), "copy in")) {
    return;
  }
  check(static_cast<cudaError_t>(collcheck::cuda::launch_reduce(dtype, op, device_a + offset, device_b + offset,
                                                                device_out + offset, count, nullptr)),
        "launch reduce");
  if (op == RedOp::Avg) {
    check(
        static_cast<cudaError_t>(collcheck::cuda::launch_finish_average(dtype, device_out + offset, count, 3, nullptr)),
        "launch finish_average");
  }
  if (!check(cudaMemcpy(got.data(), device_out + offset, bytes, cudaMemcpyDeviceToHost), "copy out")) return;
  if (const std::size_t i = first_difference(want, got, size); i < count) {
    std::printf("FAIL %s %s, %zu elements at byte offset %zu: element %zu differs\n",
                std::string(collcheck::name(dtype)).c_str(), std::string(collcheck::name(op)).c_str(), count, offset,
                i);
    ++failures;
  }
}

// The checksum kernel against link/'s checksum on the host, at lengths around its 8- and 32-byte
// words, from one segment per stream to the most (256), a slot's size and beyond.
void compare_checksums(std::byte* device_data, std::uint64_t* device_result) {
  for (std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9}, std::size_t{31},
        std::size_t{32}, std::size_t{33}, std::size_t{100}, std::size_t{1000}, std::size_t{4096}, std::size_t{65536},
        std::size_t{65541}, std::size_t{1} << 17, (std::size_t{1} << 20) + 24, (std::size_t{1} << 22) + 13}) {
    const std::vector<std::byte> data = random_bytes(bytes, bytes + 7);
    if (!check(cudaMemcpy(device_data, data.data(), bytes, cudaMemcpyHostToDevice), "copy in")) return;
    check(static_cast<cudaError_t>(collcheck::cuda::launch_checksum(device_data, bytes, device_result, nullptr)),
          "launch checksum");
    std::uint64_t got = 0;
    if (!check(cudaMemcpy(&got, device_result, sizeof got, cudaMemcpyDeviceToHost), "copy out")) return;
    if (got != collcheck::checksum(data)) {
      std::printf("FAIL checksum of %zu bytes: device %llx, host %llx\n", bytes, static_cast<unsigned long long>(got),
                  static_cast<unsigned long long>(collcheck::checksum(data)));
      ++failures;
    }
  }
}

}  // namespace

int main() {
  if (!the_comparison_can_fail()) {
    std::printf("FAIL: the comparison does not see a flipped bit or a dropped NaN\n");
    return 1;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no CUDA device (cudaGetDeviceCount: %d devices)\n", devices);
    return 77;
  }
  constexpr std::size_t kMaxBytes = (std::size_t{1} << 22) + 64;
  std::byte *a = nullptr, *b = nullptr, *out = nullptr;
  if (!check(cudaMalloc(&a, kMaxBytes), "cudaMalloc") || !check(cudaMalloc(&b, kMaxBytes), "cudaMalloc") ||
      !check(cudaMalloc(&out, kMaxBytes), "cudaMalloc")) {
    return 1;
  }
  int cases = 0;
  for (DType dtype : collcheck::all_dtypes()) {
    const std::size_t size = collcheck::size_of(dtype);
    for (RedOp op : collcheck::all_ops()) {
      for (std::size_t offset : {std::size_t{0}, size, 16 - size, std::size_t{16}}) {
        for (std::size_t count :
             {std::size_t{1}, std::size_t{7}, std::size_t{33}, std::size_t{4099}, (std::size_t{1} << 22) / size}) {
          compare(dtype, op, offset % 16, count, a, b, out);
          ++cases;
        }
      }
    }
  }
  compare_checksums(a, reinterpret_cast<std::uint64_t*>(b));
  cudaFree(a);
  cudaFree(b);
  cudaFree(out);
  std::printf("%d cases, %d failures\n", cases, failures);
  return failures == 0 ? 0 : 1;
}
