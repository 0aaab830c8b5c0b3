// How fast the reduction kernels run on a GPU, beside a device-to-device cudaMemcpy of the same
// bytes: for each dtype and op, out = a ⊕ b over 256 MiB of output, in GB/s of memory traffic
// (two inputs read, one output written; the copy reads and writes once). Prints a table; exits 77
// where there is no device. Run: build/bin/cuda_kernel_bandwidth (ci/device-check runs it).
#include <cstdio>
#include <string>

#include <cuda_runtime.h>

#include "impls/cuda/device_kernels.h"
#include "reference/collective.h"
#include "reference/dtype.h"

namespace {

constexpr std::size_t kOutputBytes = std::size_t{256} << 20;
constexpr int kRepeats = 10;

// Seconds per repeat of `body`, timed with events on the default stream after one warm-up.
template <typename Body>
double seconds_per_repeat(Body body) {
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  body();
  cudaEventRecord(start);
  for (int i = 0; i < kRepeats; ++i) body();
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float milliseconds = 0;
  cudaEventElapsedTime(&milliseconds, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return milliseconds / 1e3 / kRepeats;
}

}  // namespace

int main() {
  using namespace collcheck;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("cuda_kernel_bandwidth: no CUDA device here\n");
    return 77;
  }
  cudaDeviceProp properties{};
  cudaGetDeviceProperties(&properties, 0);
  std::byte *a = nullptr, *b = nullptr, *out = nullptr;
  if (cudaMalloc(&a, kOutputBytes) != cudaSuccess || cudaMalloc(&b, kOutputBytes) != cudaSuccess ||
      cudaMalloc(&out, kOutputBytes) != cudaSuccess) {
    std::printf("cuda_kernel_bandwidth: cannot allocate 3 x 256 MiB\n");
    return 1;
  }
  cudaMemset(a, 0, kOutputBytes);
  cudaMemset(b, 0, kOutputBytes);
  const double copy = seconds_per_repeat([&] { cudaMemcpy(out, a, kOutputBytes, cudaMemcpyDeviceToDevice); });
  std::printf("%s: cudaMemcpy device to device %.1f GB/s (read + write)\n", properties.name,
              2.0 * kOutputBytes / copy / 1e9);
  std::printf("%-8s %-5s %10s %8s\n", "dtype", "op", "GB/s", "of copy");
  int status = 0;
  for (DType dtype : all_dtypes()) {
    for (RedOp op : all_ops()) {
      const std::size_t count = kOutputBytes / size_of(dtype);
      int launched = 0;
      const double seconds =
          seconds_per_repeat([&] { launched |= cuda::launch_reduce(dtype, op, a, b, out, count, nullptr); });
      if (launched != 0 || cudaDeviceSynchronize() != cudaSuccess) {
        std::printf("%-8s %-5s launch failed\n", std::string(name(dtype)).c_str(), std::string(name(op)).c_str());
        status = 1;
        continue;
      }
      const double bandwidth = 3.0 * kOutputBytes / seconds / 1e9;
      std::printf("%-8s %-5s %10.1f %7.0f%%\n", std::string(name(dtype)).c_str(), std::string(name(op)).c_str(),
                  bandwidth, 100.0 * bandwidth / (2.0 * kOutputBytes / copy / 1e9));
    }
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(out);
  return status;
}
