// An MSCCL algorithm as a collcheck schedule. It works as follows: each gpu becomes the
// participant of its rank and each thread block a stream of it (channel: the block's), with
// the gpu's steps in their flattened order (MscclGpu::order). A chunk is total count /
// nchunksperloop elements, so chunk offsets and counts become element ranges. Each MSCCL step
// becomes one or two steps:
//   s     Send src                         r     Recv into dst
//   rcs   Recv into dst, Send dst          rrc   RecvReduce src into dst
//   rrs   RecvReduce src into a temporary, Send the temporary
//   rrcs  RecvReduce src into dst, Send dst
//   cpy   Copy src to dst                  re    Reduce src into dst
//   nop   nothing (its wait moves to the next step)
// The temporary of rrs is scratch of the block's own past the file's scratch chunks. A step's
// first part waits (Participant::add_after) for the last part of each step it depends on.
// In place, the input and output alias as NCCL lays them out (in_place_alias), which is also
// where MSCCL's kernel finds them: one buffer for all-reduce and all-to-all, the input at
// output + rank * count for all-gather, the output at input + rank * count for reduce-scatter.
#include <numeric>
#include <regex>

#include "impls/schedule/msccl_xml.h"
#include "impls/schedule/schedule_file.h"

namespace collcheck {
namespace {

// The factor between `count` and the total count MSCCL splits into nchunksperloop chunks.
std::size_t total_factor(const MscclAlgorithm& a) {
  return a.collective == Collective::AllReduce ? 1 : static_cast<std::size_t>(a.ngpus);
}

std::size_t chunk_elements(const MscclAlgorithm& a, const Case& c) {
  return c.count * total_factor(a) / static_cast<std::size_t>(a.chunks_per_loop);
}

// Where the temporaries of rrs start in each block's scratch, in chunks, and the total.
std::vector<int> temporaries(const MscclGpu& gpu, int& total) {
  std::vector<int> starts;
  total = gpu.scratch_chunks;
  for (const MscclThreadBlock& block : gpu.blocks) {
    starts.push_back(total);
    int widest = 0;
    for (const MscclStep& step : block.steps)
      if (step.op == MscclOp::RecvReduceSend) widest = std::max(widest, step.count);
    total += widest;
  }
  return starts;
}

// The collcheck steps of one MSCCL step, in order (their count: 1 or 2).
int emit(Schedule& s, int gpu, int b, const MscclThreadBlock& block, const MscclStep& step, int temporary,
         std::size_t chunk) {
  const auto range = [&](BufferKind kind, int offset) {
    return Range{kind, static_cast<std::uint64_t>(offset) * chunk, static_cast<std::uint64_t>(step.count) * chunk};
  };
  const Range source = range(step.source_buffer, step.source_offset);
  const Range destination = range(step.destination_buffer, step.destination_offset);
  const Range scratch = range(BufferKind::Scratch, temporary);
  const auto add = [&](StepKind kind, int peer, Range from, Range to) {
    s.add(gpu, Step{kind, peer, from, to, block.channel, b});
  };
  switch (step.op) {
    case MscclOp::Send: add(StepKind::Send, block.send_peer, source, {}); return 1;
    case MscclOp::Recv: add(StepKind::Recv, block.recv_peer, {}, destination); return 1;
    case MscclOp::RecvCopySend:
      add(StepKind::Recv, block.recv_peer, {}, destination);
      add(StepKind::Send, block.send_peer, destination, {});
      return 2;
    case MscclOp::RecvReduceSend:
      add(StepKind::RecvReduce, block.recv_peer, source, scratch);
      add(StepKind::Send, block.send_peer, scratch, {});
      return 2;
    case MscclOp::RecvReduceCopy: add(StepKind::RecvReduce, block.recv_peer, source, destination); return 1;
    case MscclOp::RecvReduceCopySend:
      add(StepKind::RecvReduce, block.recv_peer, source, destination);
      add(StepKind::Send, block.send_peer, destination, {});
      return 2;
    case MscclOp::Copy: add(StepKind::Copy, -1, source, destination); return 1;
    case MscclOp::Reduce: add(StepKind::Reduce, -1, source, destination); return 1;
    case MscclOp::Nop: return 0;
  }
  return 0;
}

// For each gpu, the MSCCL step each schedule step comes from, as (block, step).
std::vector<std::vector<std::pair<int, int>>> origins(const MscclAlgorithm& a) {
  std::vector<std::vector<std::pair<int, int>>> from(a.gpus.size());
  for (std::size_t g = 0; g < a.gpus.size(); ++g) {
    for (const auto& [b, k] : a.gpus[g].order) {
      const MscclOp op = a.gpus[g].blocks[b].steps[k].op;
      const bool two =
          op == MscclOp::RecvCopySend || op == MscclOp::RecvReduceSend || op == MscclOp::RecvReduceCopySend;
      from[g].insert(from[g].end(), two ? 2 : 1, std::pair{b, k});
    }
  }
  return from;
}

}  // namespace

std::size_t msccl_count_multiple(const MscclAlgorithm& a) {
  const auto chunks = static_cast<std::size_t>(a.chunks_per_loop);
  return chunks / std::gcd(chunks, total_factor(a));
}

std::string msccl_shapes(const MscclAlgorithm& a) {
  return std::string(name(a.collective)) + " on " + std::to_string(a.ngpus) + " ranks " +
         (a.in_place ? "in place" : "out of place") + ", count a multiple of " +
         std::to_string(msccl_count_multiple(a)) + ", ops sum, prod, min, max";
}

std::string msccl_refusal(const MscclAlgorithm& a, const Case& c) {
  std::string shapes = "the file runs only " + msccl_shapes(a);
  if (c.collective != a.collective || c.nranks != a.ngpus || c.in_place != a.in_place) return shapes;
  if (c.count % msccl_count_multiple(a) != 0) return shapes;
  if (reduces(c.collective)) {
    const std::vector<RedOp> ops = schedule_file_ops();
    if (std::find(ops.begin(), ops.end(), c.op) == ops.end()) return shapes;
  }
  return "";
}

Result<Schedule> msccl_schedule(const MscclAlgorithm& a, const Case& c) {
  const std::string refused = msccl_refusal(a, c);
  if (!refused.empty()) return Error{"", a.file + ": " + refused};
  const std::size_t chunk = chunk_elements(a, c);
  Schedule s;
  s.algorithm = "msccl:" + a.name;
  s.shape = c;
  s.participants.resize(static_cast<std::size_t>(a.ngpus));
  for (int g = 0; g < a.ngpus; ++g) {
    const MscclGpu& gpu = a.gpus[g];
    Participant& participant = s.participants[static_cast<std::size_t>(g)];
    int scratch_chunks = 0;
    const std::vector<int> temporary = temporaries(gpu, scratch_chunks);
    participant.scratch = static_cast<std::size_t>(scratch_chunks) * chunk;
    // The index of the last schedule step of each MSCCL step emitted so far.
    std::vector<std::vector<int>> last(gpu.blocks.size());
    for (std::size_t b = 0; b < gpu.blocks.size(); ++b) last[b].assign(gpu.blocks[b].steps.size(), -1);
    for (const auto& [b, k] : gpu.order) {
      const MscclThreadBlock& block = gpu.blocks[b];
      const MscclStep& step = block.steps[k];
      const int first = static_cast<int>(participant.steps.size());
      const int added = emit(s, g, b, block, step, temporary[b], chunk);
      for (const auto& [target, signal] : step.waits) participant.add_after(first, last[target][signal]);
      last[b][k] = first + added - 1;
    }
  }
  return s;
}

std::string msccl_explain(const MscclAlgorithm& a, const Case& c, const std::string& message) {
  const auto from = origins(a);
  const std::size_t chunk = std::max<std::size_t>(chunk_elements(a, c), 1);
  static const std::regex element_pattern(R"(output element (\d+))");
  std::string out = name_steps_in(message, [&](int gpu, int index) -> std::string {
    const auto g = static_cast<std::size_t>(gpu), k = static_cast<std::size_t>(index);
    if (g >= from.size() || k >= from[g].size()) return "";
    return msccl_step_name(a, gpu, from[g][k].first, from[g][k].second);
  });
  std::smatch element;
  if (std::regex_search(out, element, element_pattern)) {
    const std::size_t index = std::stoul(element[1].str());
    const auto end = static_cast<std::size_t>(element.position(0) + element.length(0));
    out.insert(end, " (output chunk " + std::to_string(index / chunk) + ")");
  }
  return out;
}

}  // namespace collcheck
