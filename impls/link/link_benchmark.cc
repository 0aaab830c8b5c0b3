// How fast a received piece is checked, landed and stored on: the checksum alone, the copy with
// its checksum (cached and around the cache), and a forwarded reduction as two passes (reduce,
// then copy with checksum) and as one (reduce_with_checksum), with the received piece's checksum
// taken before it (as a receiver does), for a 128 KiB piece (a proc FIFO
// slot's) in the caches, in GB/s of the piece. Each with its buffers at one offset modulo 4 KiB
// (`aligned`: where the checksum's quarters and the buffers all fall into the same L1 sets) and at
// offsets 1 KiB apart (`skewed`). Run: build/bin/link_benchmark (see docs/performance.md).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "impls/link/hook.h"
#include "impls/link/reduce_op.h"

namespace collcheck {
namespace {

constexpr std::size_t kPiece = std::size_t{128} << 10;
constexpr std::size_t kPage = 4096;

// Four piece-sized buffers (a, b, out, copy), each at a page boundary plus `skew` times its
// index: 0 aligns all four modulo 4 KiB.
class Buffers {
 public:
  explicit Buffers(std::size_t skew) : storage_(4 * (kPiece + 2 * kPage)) {
    const auto base = reinterpret_cast<std::uintptr_t>(storage_.data());
    std::byte* page = storage_.data() + (kPage - base % kPage) % kPage;
    for (std::size_t k = 0; k < 4; ++k) buffer_[k] = page + k * (kPiece + kPage) + k * skew;
    for (std::size_t i = 0; i < kPiece / sizeof(float); ++i) {
      const float x = static_cast<float>(i % 1000) * 0.5F, y = static_cast<float>(i % 777) + 1;
      std::memcpy(buffer_[0] + i * sizeof(float), &x, sizeof x);
      std::memcpy(buffer_[1] + i * sizeof(float), &y, sizeof y);
    }
  }
  std::byte* a() const { return buffer_[0]; }
  std::byte* b() const { return buffer_[1]; }
  std::byte* out() const { return buffer_[2]; }
  std::byte* copy() const { return buffer_[3]; }

 private:
  std::vector<std::byte> storage_;
  std::byte* buffer_[4] = {};
};

std::size_t skew_of(const benchmark::State& state) { return state.range(0) == 0 ? 0 : 1024; }

void finish(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPiece));
  state.SetLabel(state.range(0) == 0 ? "aligned" : "skewed");
}

void checksum_alone(benchmark::State& state) {
  const Buffers buffers(skew_of(state));
  for (auto _ : state) benchmark::DoNotOptimize(checksum({buffers.b(), kPiece}));
  finish(state);
}

void copy_with_checksum_cached(benchmark::State& state) {
  const Buffers buffers(skew_of(state));
  for (auto _ : state) benchmark::DoNotOptimize(copy_with_checksum(buffers.copy(), {buffers.b(), kPiece}, false));
  finish(state);
}

void copy_with_checksum_around_cache(benchmark::State& state) {
  const Buffers buffers(0);  // (around the cache needs a 64-byte aligned destination)
  for (auto _ : state) benchmark::DoNotOptimize(copy_with_checksum(buffers.copy(), {buffers.b(), kPiece}, true));
  finish(state);
}

// A forwarded piece as two passes: a + b into out, then out copied into the slot with its checksum.
void reduce_then_copy(benchmark::State& state) {
  const Buffers buffers(skew_of(state));
  for (auto _ : state) {
    reduce_elements_fast(DType::Float32, RedOp::Sum, buffers.a(), buffers.b(), buffers.out(), kPiece / sizeof(float));
    benchmark::DoNotOptimize(copy_with_checksum(buffers.copy(), {buffers.out(), kPiece}, false));
  }
  finish(state);
}

// The same in one pass.
void reduce_with_checksum_one_pass(benchmark::State& state) {
  const Buffers buffers(skew_of(state));
  for (auto _ : state) {
    benchmark::DoNotOptimize(reduce_with_checksum(DType::Float32, RedOp::Sum, buffers.a(), buffers.b(), buffers.out(),
                                                  buffers.copy(), kPiece / sizeof(float), false));
  }
  finish(state);
}

// A received piece checked, then reduced and stored on in one pass: what a receiver that forwards a
// reduction does (checked first: in place the destination is an operand).
void check_then_reduce_with_checksum(benchmark::State& state) {
  const Buffers buffers(skew_of(state));
  for (auto _ : state) {
    benchmark::DoNotOptimize(checksum({buffers.b(), kPiece}));
    benchmark::DoNotOptimize(reduce_with_checksum(DType::Float32, RedOp::Sum, buffers.a(), buffers.b(), buffers.out(),
                                                  buffers.copy(), kPiece / sizeof(float), false));
  }
  finish(state);
}

BENCHMARK(checksum_alone)->Arg(0)->Arg(1);
BENCHMARK(copy_with_checksum_cached)->Arg(0)->Arg(1);
BENCHMARK(copy_with_checksum_around_cache)->Arg(0);
BENCHMARK(reduce_then_copy)->Arg(0)->Arg(1);
BENCHMARK(reduce_with_checksum_one_pass)->Arg(0)->Arg(1);
BENCHMARK(check_then_reduce_with_checksum)->Arg(0)->Arg(1);

}  // namespace
}  // namespace collcheck

BENCHMARK_MAIN();
