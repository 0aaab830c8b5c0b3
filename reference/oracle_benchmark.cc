// How fast the oracle checks: expected outputs and comparisons for an 8-rank all-reduce, in
// GB/s of outputs checked. Run: build/bin/oracle_benchmark (see docs/performance.md).
#include <benchmark/benchmark.h>

#include <vector>

#include "reference/oracle.h"

namespace collcheck {
namespace {

constexpr int kRanks = 8;

Case all_reduce(std::size_t count, DType dtype, ValueKind values) {
  Case c;
  c.collective = Collective::AllReduce;
  c.dtype = dtype;
  c.op = RedOp::Sum;
  c.count = count;
  c.nranks = kRanks;
  c.values = values;
  c.seed = 1;
  return c;
}

// The whole check of one case: expected outputs, then every rank's output compared. The
// outputs are the expected ones (a correct backend), which is the common, full-length path.
void check_all_reduce(benchmark::State& state, DType dtype, ValueKind values) {
  const Case c = all_reduce(static_cast<std::size_t>(state.range(0)), dtype, values);
  const std::vector<std::byte> output = expected(c, 0).data;
  for ([[maybe_unused]] auto _ : state) {
    Oracle oracle(c);
    const std::vector<std::span<const std::byte>> outputs(kRanks, output);
    for (const Verdict& verdict : oracle.compare_all(outputs)) {
      if (!verdict.ok) state.SkipWithError("a correct output failed the check");
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * kRanks *
                          static_cast<std::int64_t>(output.size()));
}

void compare_only(benchmark::State& state, DType dtype, ValueKind values) {
  const Case c = all_reduce(static_cast<std::size_t>(state.range(0)), dtype, values);
  const Expected e = expected(c, 0);
  for ([[maybe_unused]] auto _ : state) {
    for (int rank = 0; rank < kRanks; ++rank) benchmark::DoNotOptimize(compare(e, rank, e.data).ok);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * kRanks *
                          static_cast<std::int64_t>(e.data.size()));
}

BENCHMARK_CAPTURE(check_all_reduce, f32_exact, DType::Float32, ValueKind::Exact)
    ->Arg(1 << 20)
    ->Arg(16 << 20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(check_all_reduce, f32_real, DType::Float32, ValueKind::Real)
    ->Arg(1 << 20)
    ->Arg(16 << 20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(check_all_reduce, bf16_real, DType::BFloat16, ValueKind::Real)
    ->Arg(1 << 20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(check_all_reduce, i32_exact, DType::Int32, ValueKind::Exact)
    ->Arg(1 << 20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(compare_only, f32_exact, DType::Float32, ValueKind::Exact)
    ->Arg(16 << 20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(compare_only, f32_real, DType::Float32, ValueKind::Real)
    ->Arg(16 << 20)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace collcheck

BENCHMARK_MAIN();
