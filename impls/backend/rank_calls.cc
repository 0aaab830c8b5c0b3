// One rank's buffers between guard zones and the loop of its calls (see rank_calls.h).
#include "impls/backend/rank_calls.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "reference/inputs.h"

namespace collcheck {

RankBuffers make_rank_buffers(const Case& c, int rank) {
  RankBuffers b;
  const std::size_t element = size_of(c.dtype);
  b.in_bytes = input_elements(c, rank) * element;
  b.out_bytes = output_elements(c, rank) * element;
  if (!c.in_place) {
    b.input = GuardedBuffer(input_elements(c, rank), element, c.offset);
    b.output = GuardedBuffer(output_elements(c, rank), element, c.offset);
    b.in = b.input.data();
    b.out = b.output.data();
  } else {
    b.input = GuardedBuffer(std::max(input_elements(c), output_elements(c)), element, c.offset);
    const InPlaceLayout alias = in_place_layout(c.collective, c.count, rank, c.root);
    b.in = b.out = b.input.data();
    if (alias.input_inside) b.in = b.input.at(alias.offset);
    else b.out = b.input.at(alias.offset);
  }
  if (c.empty_as_null) {  // empty buffers as callers often pass them: null
    if (b.in_bytes == 0) b.in = nullptr;
    if (b.out_bytes == 0) b.out = nullptr;
  }
  return b;
}

void fill_rank_input(const Case& c, int rank, std::uint64_t call, const std::vector<std::byte>* given, RankBuffers& b) {
  if (given != nullptr) {
    std::copy_n(given->begin(), std::min(given->size(), b.in_bytes), b.in);
    return;
  }
  Case next = c;
  next.seed = c.seed + call;
  if (b.in_bytes > 0) InputGenerator(next).fill(rank, 0, {b.in, b.in_bytes});
}

RankResult rank_result(const RankBuffers& b) {
  RankResult r;
  if (b.out_bytes > 0) r.output.assign(b.out, b.out + b.out_bytes);
  if (b.in_bytes > 0) r.input.assign(b.in, b.in + b.in_bytes);
  r.guards_intact = b.input.intact() && b.output.intact();
  return r;
}

RankRun ended_by(CallEnd end) {
  RankRun run = RankRun::ended(Outcome::Detected, std::move(end.error));
  run.refused = end.refused;
  return run;
}

namespace {

RankRun detected_at(CallEnd end, const std::string& which) {
  end.error += " (" + which + ")";
  return ended_by(std::move(end));
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

RankResult downloaded_result(const RankBuffers& b, const RankTransfers& transfers) {
  if (transfers.download) transfers.download();
  return rank_result(b);
}

void uploaded_input(const Case& c, int rank, std::uint64_t call, const std::vector<std::byte>* given, RankBuffers& b,
                    const RankTransfers& transfers) {
  fill_rank_input(c, rank, call, given, b);
  if (transfers.upload) transfers.upload();
}

RankRun timed_calls(const Case& c, const RankRunOptions& options, World& world, RankBuffers& b, const RankCall& call,
                    const RankTransfers& transfers) {
  RankRun run;
  uploaded_input(c, world.rank(), 0, options.input, b, transfers);
  for (int k = 0; k < options.warmup; ++k) {
    if (const CallEnd end = call(); !end.ok()) return detected_at(end, "warmup call " + std::to_string(k + 1));
  }
  world.barrier();  // every rank starts timing together (the control channel, not under test)
  double total = 0;
  for (int k = 0; k < options.iterations; ++k) {
    const auto start = std::chrono::steady_clock::now();
    const CallEnd end = call();
    total += seconds_since(start);
    if (!end.ok()) return detected_at(end, "timed call " + std::to_string(k + 1));
    if (options.checked) run.calls.push_back(downloaded_result(b, transfers));
  }
  run.seconds = options.iterations > 0 ? total / options.iterations : 0;
  return run;
}

}  // namespace

RankRun run_rank_calls(const Case& c, const RankRunOptions& options, World& world, RankBuffers& b, const RankCall& call,
                       const RankTransfers& transfers) {
  if (options.timed) return timed_calls(c, options, world, b, call, transfers);
  RankRun run;
  const auto start = std::chrono::steady_clock::now();
  const int calls = std::max(options.calls, 1);
  for (int k = 0; k < calls; ++k) {
    uploaded_input(c, world.rank(), static_cast<std::uint64_t>(k), k == 0 ? options.input : nullptr, b, transfers);
    if (const CallEnd end = call(); !end.ok()) {
      return detected_at(end, "call " + std::to_string(k + 1) + " of " + std::to_string(calls));
    }
    run.calls.push_back(downloaded_result(b, transfers));
  }
  run.seconds = seconds_since(start);
  return run;
}

}  // namespace collcheck
