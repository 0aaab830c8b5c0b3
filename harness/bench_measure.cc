// `collcheck bench`'s measuring: the size sweep and the case of each size, one placement timed
// on a backend (checked against the oracle in batches), bandwidths, and the memory-copy yardstick.
#include "harness/bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "reference/bandwidth.h"
#include "reference/oracle.h"

namespace collcheck::bench {

std::vector<std::uint64_t> sweep_sizes(const Settings& s) {
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t bytes = s.min_bytes; bytes <= s.max_bytes;) {
    sizes.push_back(bytes);
    const std::uint64_t next = s.step_bytes > 0 ? bytes + s.step_bytes : bytes * s.step_factor;
    if (next <= bytes) break;  // a factor of 1, or 0 bytes times anything: the sweep ends here
    bytes = next;
  }
  return sizes;
}

std::size_t count_for_bytes(Collective collective, DType dtype, int nranks, std::uint64_t bytes) {
  const std::size_t elements = bytes / size_of(dtype);
  const bool block_per_rank = output_elements(collective, 1, nranks) > 1 || input_elements(collective, 1, nranks) > 1;
  return block_per_rank ? elements / static_cast<std::size_t>(nranks) : elements;
}

Case bench_case(const Settings& s, DType dtype, RedOp op, int root, std::uint64_t bytes) {
  Case c;
  c.collective = s.collective;
  c.dtype = dtype;
  c.op = op;
  c.nranks = s.nranks;
  c.root = root;
  c.count = count_for_bytes(s.collective, dtype, s.nranks, bytes);
  return c;
}

Bandwidth bandwidth(const Case& c, double seconds) {
  if (seconds <= 0) return {};
  Bandwidth b;
  b.algbw = static_cast<double>(algorithm_bytes(c)) / seconds / 1e9;
  b.busbw = b.algbw * bus_factor(c.collective, c.nranks);
  return b;
}

std::optional<std::size_t> count_wrong(const Case& c, const RepeatedRun& run) {
  if (run.calls.empty()) return std::nullopt;
  Oracle oracle(c);
  std::size_t wrong = 0;
  for (const std::vector<RankResult>& call : run.calls) {
    std::vector<std::span<const std::byte>> outputs;
    for (int rank = 0; rank < c.nranks; ++rank) {
      if (static_cast<std::size_t>(rank) >= call.size()) {
        wrong += output_elements(c, rank);
      } else {
        outputs.emplace_back(call[static_cast<std::size_t>(rank)].output);
      }
    }
    const std::vector<Verdict> verdicts = oracle.compare_all(outputs, 0);
    for (std::size_t rank = 0; rank < verdicts.size(); ++rank) {
      const Verdict& verdict = verdicts[rank];
      if (verdict.ok) continue;
      wrong += verdict.error.empty() ? std::max<std::size_t>(verdict.mismatched, 1)
                                     : std::max<std::size_t>(output_elements(c, static_cast<int>(rank)), 1);
    }
  }
  return wrong;
}

// A checked run hands back every timed call's outputs: at most this many bytes of them at
// once, so a checked sweep to 32 MiB on many ranks does not hold gigabytes.
constexpr std::size_t kCheckedBytesPerRun = std::size_t{256} << 20;

// The timed calls of one checked measurement split into runs whose outputs fit the budget.
std::vector<int> checked_batches(const Case& c, int iterations) {
  const std::size_t per_call =
      std::max<std::size_t>(output_elements(c) * size_of(c.dtype), 1) * static_cast<std::size_t>(c.nranks);
  const int batch =
      static_cast<int>(std::clamp<std::size_t>(kCheckedBytesPerRun / per_call, 1, std::size_t(iterations)));
  std::vector<int> batches(static_cast<std::size_t>(iterations / batch), batch);
  if (iterations % batch != 0) batches.push_back(iterations % batch);
  return batches;
}

Measurement measure(Backend& backend, const Case& c, const Settings& settings) {
  Measurement m;
  if (!backend.capabilities().supports(c)) {
    m.state = Measurement::State::Unsupported;
    return m;
  }
  RunOptions options;
  options.deadline = settings.deadline;
  options.timed = true;
  options.warmup = settings.warmup;
  options.checked = settings.check && !c.in_place;
  if (settings.progress && settings.progress_every > 0) {
    options.progress_every = settings.progress_every;
    options.progress = [&](const std::string& line) {
      settings.progress(backend.name() + ", " + std::to_string(algorithm_bytes(c)) + " B " +
                        (c.in_place ? "in place" : "out of place") + ": " + line);
    };
  }
  const std::vector<int> batches =
      options.checked ? checked_batches(c, settings.iterations) : std::vector<int>{settings.iterations};
  double seconds = 0;
  m.checked = settings.check;
  for (int iterations : batches) {
    options.iterations = iterations;
    RepeatedRun run = backend.run(c, options);
    if (settings.check && c.in_place && run.outcome == Outcome::Ok) {
      RunOptions once;  // fresh inputs, one call: see the header
      once.deadline = settings.deadline;
      RepeatedRun checked = backend.run(c, once);
      checked.seconds = run.seconds;
      run = std::move(checked);
    }
    if (run.refused) {  // outside what the backend takes, found as it ran: like one it declares
      m.state = Measurement::State::Unsupported;
      m.error = run.error;
      return m;
    }
    if (run.outcome != Outcome::Ok) {
      m.state = Measurement::State::Failed;
      m.outcome = run.outcome;
      m.error = run.error;
      return m;
    }
    seconds += run.seconds * iterations;
    if (!m.checked) continue;
    const std::optional<std::size_t> wrong = count_wrong(c, run);
    if (!wrong) m.checked_calls_missing = true;
    m.wrong = m.checked_calls_missing ? std::nullopt : std::optional<std::size_t>(m.wrong.value_or(0) + *wrong);
  }
  m.seconds = seconds / settings.iterations;
  m.bandwidth = bandwidth(c, m.seconds);
  return m;
}

MemoryCopy measure_memory_copy(std::size_t bytes, int repeats) {
  MemoryCopy copy;
  copy.bytes = bytes;
  if (bytes == 0) return copy;
  std::vector<std::byte> from(bytes, std::byte{0x5a});
  std::vector<std::byte> to(bytes, std::byte{0});  // touched, so the copy does not time page faults
  double best = std::numeric_limits<double>::infinity();
  for (int k = 0; k < std::max(repeats, 1); ++k) {
    const auto begin = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), bytes);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - begin;
    best = std::min(best, took.count());
    from[static_cast<std::size_t>(k) % bytes] = to[bytes - 1 - static_cast<std::size_t>(k) % bytes];  // keeps the copy
  }
  copy.seconds = best;
  copy.bandwidth = best > 0 ? static_cast<double>(bytes) / best / 1e9 : 0;
  return copy;
}

}  // namespace collcheck::bench
