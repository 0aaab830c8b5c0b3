// The checks of an MSCCL algorithm across elements. They work as follows:
//   links:        a thread block sends on the link (gpu, send peer, channel) and receives on
//                 (recv peer, gpu, channel); MSCCL gives each link of a channel one connection,
//                 so at most one block per gpu sends (receives) on it, and its k-th send is the
//                 receiver's k-th receive: the counts must agree and none may be left over.
//   dependencies: a step's depid/deps, and those of the nops just before it, name a step of a
//                 block of the same gpu; the wait ends when that block signals (hasdep) at that
//                 step or later, so each resolves to the first signalling step from there.
//   order:        each gpu's steps are flattened, block by block as far as each can go, in an
//                 order that keeps every block's order and every dependency; steps left over
//                 wait on each other in a cycle, which the error spells out.
#include <algorithm>
#include <map>
#include <tuple>

#include "impls/schedule/msccl_xml.h"

namespace collcheck {
namespace {

bool sends(MscclOp op) {
  return op == MscclOp::Send || op == MscclOp::RecvCopySend || op == MscclOp::RecvReduceSend ||
         op == MscclOp::RecvReduceCopySend;
}
bool receives(MscclOp op) {
  return op != MscclOp::Send && op != MscclOp::Copy && op != MscclOp::Reduce && op != MscclOp::Nop;
}

Error step_error(const MscclAlgorithm& a, int gpu, int block, int step, const std::string& message) {
  const MscclStep& s = a.gpus[gpu].blocks[block].steps[step];
  return Error{"",
               a.file + ":" + std::to_string(s.line) + ": " + msccl_step_name(a, gpu, block, step) + ": " + message};
}

// (gpu, peer, channel) -> the block on that end; one block per end of a link.
Status check_one_block_per_link(const MscclAlgorithm& a) {
  for (int g = 0; g < a.ngpus; ++g) {
    std::map<std::tuple<bool, int, int>, int> owner;  // (sending?, peer, channel) -> block
    const auto& blocks = a.gpus[g].blocks;
    for (int b = 0; b < static_cast<int>(blocks.size()); ++b) {
      for (const auto& [sending, peer] :
           {std::pair{true, blocks[b].send_peer}, std::pair{false, blocks[b].recv_peer}}) {
        if (peer < 0) continue;
        const auto [at, fresh] = owner.try_emplace({sending, peer, blocks[b].channel}, b);
        if (fresh) continue;
        return Error{"", a.file + ":" + std::to_string(blocks[b].line) + ": tb " + std::to_string(b) + " of gpu " +
                             std::to_string(g) + " and tb " + std::to_string(at->second) + " both " +
                             (sending ? "send to" : "receive from") + " gpu " + std::to_string(peer) + " on channel " +
                             std::to_string(blocks[b].channel) +
                             ": a link of a channel has one thread block at each end"};
      }
    }
  }
  return Ok{};
}

struct Message {
  int block, step, count;
};

// The messages of each end of each link, in order: (from, to, channel) -> sends or receives.
using Ends = std::map<std::tuple<int, int, int>, std::vector<Message>>;

// The sends and the receives of every link, each in order.
void collect_messages(const MscclAlgorithm& a, Ends& sent, Ends& received) {
  for (int g = 0; g < a.ngpus; ++g) {
    const auto& blocks = a.gpus[g].blocks;
    for (int b = 0; b < static_cast<int>(blocks.size()); ++b) {
      const MscclThreadBlock& block = blocks[b];
      for (int k = 0; k < static_cast<int>(block.steps.size()); ++k) {
        const MscclStep& step = block.steps[k];
        if (sends(step.op)) sent[{g, block.send_peer, block.channel}].push_back({b, k, step.count});
        if (receives(step.op)) received[{block.recv_peer, g, block.channel}].push_back({b, k, step.count});
      }
    }
  }
}

// Every receive has its send, with the same count.
Status check_receipts(const MscclAlgorithm& a, const Ends& sent, const Ends& received) {
  for (const auto& [link, receipts] : received) {
    const auto& [from, to, channel] = link;
    const auto found = sent.find(link);
    const std::size_t messages = found == sent.end() ? 0 : found->second.size();
    for (std::size_t k = 0; k < receipts.size(); ++k) {
      const Message& receipt = receipts[k];
      if (k >= messages) {
        return step_error(a, to, receipt.block, receipt.step,
                          "receives message " + std::to_string(k) + " from gpu " + std::to_string(from) +
                              " on channel " + std::to_string(channel) + ", but gpu " + std::to_string(from) +
                              " sends only " + std::to_string(messages) + " there: a receive with no send");
      }
      const Message& send = found->second[k];
      if (send.count != receipt.count) {
        return step_error(a, to, receipt.block, receipt.step,
                          "receives " + std::to_string(receipt.count) + " chunks, but its message " +
                              std::to_string(k) + " is " + msccl_step_name(a, from, send.block, send.step) +
                              ", which sends " + std::to_string(send.count));
      }
    }
  }
  return Ok{};
}

// Every send has its receive.
Status check_sends(const MscclAlgorithm& a, const Ends& sent, const Ends& received) {
  for (const auto& [link, sends_on_link] : sent) {
    const auto& [from, to, channel] = link;
    const auto found = received.find(link);
    const std::size_t receipts = found == received.end() ? 0 : found->second.size();
    if (sends_on_link.size() > receipts) {
      const Message& send = sends_on_link[receipts];
      return step_error(a, from, send.block, send.step,
                        "sends message " + std::to_string(receipts) + " to gpu " + std::to_string(to) + " on channel " +
                            std::to_string(channel) + ", but gpu " + std::to_string(to) + " receives only " +
                            std::to_string(receipts) + " there: a send with no receive");
    }
  }
  return Ok{};
}

// The step whose signal ends the wait of step k of block b on gpu g (which has a dependency).
Result<int> signalling_step(const MscclAlgorithm& a, int g, int b, int k) {
  const auto& blocks = a.gpus[g].blocks;
  const MscclStep& step = blocks[b].steps[k];
  const int target = step.depends_block;
  if (target >= static_cast<int>(blocks.size())) {
    return step_error(a, g, b, k,
                      "depid=\"" + std::to_string(target) + "\": gpu " + std::to_string(g) + " has thread blocks 0.." +
                          std::to_string(blocks.size() - 1));
  }
  const auto& steps = blocks[target].steps;
  const int nsteps = static_cast<int>(steps.size());
  if (step.depends_step < 0 || step.depends_step >= nsteps) {
    return step_error(a, g, b, k,
                      "deps=\"" + std::to_string(step.depends_step) + "\": tb " + std::to_string(target) +
                          " has steps 0.." + std::to_string(nsteps - 1));
  }
  int signal = step.depends_step;
  while (signal < nsteps && (steps[signal].op == MscclOp::Nop || !steps[signal].signals)) ++signal;
  if (signal == nsteps) {
    return step_error(a, g, b, k,
                      "waits for " + msccl_step_name(a, g, target, step.depends_step) +
                          ", but neither it nor a later step of tb " + std::to_string(target) +
                          " signals (hasdep=\"1\"): it would wait forever");
  }
  if (target == b && signal >= k) {
    return step_error(a, g, b, k,
                      "waits for its own thread block's " + msccl_step_name(a, g, b, signal) +
                          ", which comes after it: it would wait forever");
  }
  return signal;
}

// Resolves every dependency to the signalling step that ends its wait; nops pass theirs on.
Status resolve_dependencies(MscclAlgorithm& a) {
  for (int g = 0; g < a.ngpus; ++g) {
    auto& blocks = a.gpus[g].blocks;
    for (int b = 0; b < static_cast<int>(blocks.size()); ++b) {
      std::vector<std::pair<int, int>> pending;  // resolved waits of the nops so far
      for (int k = 0; k < static_cast<int>(blocks[b].steps.size()); ++k) {
        MscclStep& step = blocks[b].steps[k];
        if (step.depends_block >= 0) {
          Result<int> signal = signalling_step(a, g, b, k);
          if (!signal) return signal.error();
          if (step.depends_block != b) pending.emplace_back(step.depends_block, *signal);
        }
        if (step.op == MscclOp::Nop) continue;
        step.waits = std::move(pending);
        pending.clear();
      }
    }
  }
  return Ok{};
}

// The steps of one gpu left unordered wait on each other: follow waits among them to a cycle.
Error cycle_error(const MscclAlgorithm& a, int g, const std::vector<std::size_t>& next) {
  const auto& blocks = a.gpus[g].blocks;
  auto blocked = [&](int b) { return next[b] < blocks[b].steps.size(); };
  int b = 0;
  while (!blocked(b)) ++b;
  std::vector<std::pair<int, int>> path;
  std::map<std::pair<int, int>, std::size_t> seen;
  std::pair<int, int> at{b, static_cast<int>(next[b])};
  while (!seen.contains(at)) {
    seen[at] = path.size();
    path.push_back(at);
    const MscclStep& step = blocks[at.first].steps[at.second];
    for (const auto& [target, signal] : step.waits) {
      if (signal >= static_cast<int>(next[target])) {
        at = {target, static_cast<int>(next[target])};  // that block is stuck at its own head
        break;
      }
    }
  }
  std::string cycle;
  for (std::size_t i = seen[at]; i < path.size(); ++i) {
    cycle += (cycle.empty() ? "" : " waits for ") + msccl_step_name(a, g, path[i].first, path[i].second);
  }
  cycle += " waits for " + msccl_step_name(a, g, at.first, at.second);
  const MscclStep& first = blocks[at.first].steps[at.second];
  return Error{"", a.file + ":" + std::to_string(first.line) + ": gpu " + std::to_string(g) +
                       ": a cycle in dependencies: " + cycle};
}

Status flatten(MscclAlgorithm& a) {
  for (int g = 0; g < a.ngpus; ++g) {
    MscclGpu& gpu = a.gpus[g];
    const int nblocks = static_cast<int>(gpu.blocks.size());
    std::vector<std::size_t> next(static_cast<std::size_t>(nblocks), 0);
    gpu.order.clear();
    bool progress = true;
    while (progress) {
      progress = false;
      for (int b = 0; b < nblocks; ++b) {
        const auto& steps = gpu.blocks[b].steps;
        while (next[b] < steps.size()) {
          const MscclStep& step = steps[next[b]];
          const bool ready = std::all_of(step.waits.begin(), step.waits.end(), [&](const std::pair<int, int>& w) {
            return static_cast<int>(next[w.first]) > w.second;
          });
          if (!ready) break;
          if (step.op != MscclOp::Nop) gpu.order.emplace_back(b, static_cast<int>(next[b]));
          ++next[b];
          progress = true;
        }
      }
    }
    for (int b = 0; b < nblocks; ++b) {
      if (next[b] < gpu.blocks[b].steps.size()) return cycle_error(a, g, next);
    }
  }
  return Ok{};
}

}  // namespace

Status check_msccl(MscclAlgorithm& a) {
  Status links = check_one_block_per_link(a);
  if (!links) return links;
  Ends sent, received;
  collect_messages(a, sent, received);
  Status received_sent = check_receipts(a, sent, received);
  if (!received_sent) return received_sent;
  Status sent_received = check_sends(a, sent, received);
  if (!sent_received) return sent_received;
  Status resolved = resolve_dependencies(a);
  if (!resolved) return resolved;
  return flatten(a);
}

std::string msccl_step_name(const MscclAlgorithm& a, int gpu, int block, int step) {
  const MscclStep& s = a.gpus.at(gpu).blocks.at(block).steps.at(step);
  return "gpu " + std::to_string(gpu) + " tb " + std::to_string(block) + " step " + std::to_string(step) + " (" +
         std::string(name(s.op)) + ", line " + std::to_string(s.line) + ")";
}

}  // namespace collcheck
