// The registry of reference algorithms: every (algorithm, collective) pair with its generator,
// the lookup that validates names and knobs, and slice().
#include "impls/algorithms/algorithms.h"

#include <algorithm>
#include <array>

#include "impls/algorithms/generators.h"
#include "impls/algorithms/innet.h"
#include "impls/algorithms/tree.h"

namespace collcheck {
namespace {

constexpr int kMaxChannels = 64;
constexpr int kMinFanIn = 2;
constexpr int kMaxFanIn = 64;

// Grouped by algorithm, in the order algorithm_names() lists them.
constexpr std::array kAlgorithms = {
    Algorithm{"ring", Collective::AllReduce, "reduce-scatter then all-gather around a ring, pipelined in chunks",
              ring_allreduce, ring_allreduce_on_demand},
    Algorithm{"ring", Collective::AllGather, "n-1 steps around a ring, pipelined in chunks", ring_allgather,
              ring_allgather_on_demand},
    Algorithm{"ring", Collective::ReduceScatter, "n-1 reducing steps around a ring, pipelined in chunks",
              ring_reducescatter, ring_reducescatter_on_demand},
    Algorithm{"ring", Collective::AllGatherV, "n-1 steps around a ring, each block of its rank's count",
              ring_allgatherv, ring_allgatherv_on_demand},
    Algorithm{"ring", Collective::ReduceScatterV, "n-1 reducing steps around a ring, each block of its rank's count",
              ring_reducescatterv, ring_reducescatterv_on_demand},
    Algorithm{"tree", Collective::AllReduce, "double binary tree: reduce up, broadcast down, pipelined",
              tree_allreduce},
    Algorithm{"rhd", Collective::AllReduce, "Rabenseifner: recursive halving then doubling, extra ranks folded in",
              rhd_allreduce},
    Algorithm{"rhd", Collective::ReduceScatter, "recursive halving, extra ranks folded in", rhd_reducescatter},
    Algorithm{"innet", Collective::AllReduce, "switches reduce up a tree and multicast down", innet_allreduce},
    Algorithm{"innet", Collective::AllGather, "switches gather up a tree and multicast down", innet_allgather},
    Algorithm{"innet", Collective::ReduceScatter, "switches reduce up a tree and send each rank its block",
              innet_reducescatter},
    Algorithm{"innet", Collective::Broadcast, "the root's data up to the root switch, multicast down", innet_broadcast},
    Algorithm{"pairwise", Collective::AllToAll, "n-1 steps, each exchanging one block with one peer", pairwise_alltoall,
              pairwise_alltoall_on_demand},
    Algorithm{"pairwise", Collective::AllToAllV, "n-1 steps, each exchanging one block of the pair's count",
              pairwise_alltoallv, pairwise_alltoallv_on_demand},
    Algorithm{"bruck", Collective::AllToAll, "ceil(log2 n) rounds of packed blocks through a rotated copy",
              bruck_alltoall, bruck_alltoall_on_demand},
    Algorithm{"chain", Collective::Broadcast, "a pipelined chain from the root", chain_broadcast},
    Algorithm{"chain", Collective::Reduce, "a pipelined chain ending at the root", chain_reduce},
    Algorithm{"binomial", Collective::Broadcast, "a binomial tree from the root, pipelined", binomial_broadcast},
    Algorithm{"binomial", Collective::Reduce, "a binomial tree into the root, pipelined", binomial_reduce},
    Algorithm{"rd", Collective::AllGather, "recursive doubling, extra ranks folded in", rd_allgather},
};

std::string implemented_by(std::string_view algorithm) {
  std::string out;
  for (const Algorithm& entry : kAlgorithms) {
    if (entry.name != algorithm) continue;
    if (!out.empty()) out += ", ";
    out += name(entry.collective);
  }
  return out;
}

Status validate(const Knobs& knobs) {
  if (knobs.channels < 1 || knobs.channels > kMaxChannels) {
    return Error{"channels", std::to_string(knobs.channels) + ": must be 1.." + std::to_string(kMaxChannels)};
  }
  if (knobs.fan_in < kMinFanIn || knobs.fan_in > kMaxFanIn) {
    return Error{"fan_in", std::to_string(knobs.fan_in) + ": must be " + std::to_string(kMinFanIn) + ".." +
                               std::to_string(kMaxFanIn)};
  }
  return Ok{};
}

}  // namespace

std::span<const Algorithm> all_algorithms() { return kAlgorithms; }

std::string algorithm_names() {
  std::string out;
  std::string_view previous;
  for (const Algorithm& entry : kAlgorithms) {
    if (entry.name == previous) continue;
    if (!out.empty()) out += ", ";
    out += entry.name;
    previous = entry.name;
  }
  return out;
}

Result<Schedule> make_schedule(std::string_view algorithm, const Case& shape, const Knobs& knobs, Form form) {
  if (implemented_by(algorithm).empty()) {
    return Error{"algorithm", "'" + std::string(algorithm) + "': must be one of " + algorithm_names()};
  }
  Status valid_case = validate(shape);
  if (!valid_case) return valid_case.error();
  Status valid_knobs = validate(knobs);
  if (!valid_knobs) return valid_knobs.error();
  for (const Algorithm& entry : kAlgorithms) {
    if (entry.name != algorithm || entry.collective != shape.collective) continue;
    if (form == Form::OnDemand && entry.on_demand != nullptr) return entry.on_demand(shape, knobs);
    return entry.generate(shape, knobs);
  }
  return Error{"algorithm", "'" + std::string(algorithm) + "' has no " + std::string(name(shape.collective)) +
                                "; it implements " + implemented_by(algorithm)};
}

bool has_on_demand_form(std::string_view algorithm, Collective collective) {
  return std::any_of(std::begin(kAlgorithms), std::end(kAlgorithms), [&](const Algorithm& entry) {
    return entry.name == algorithm && entry.collective == collective && entry.on_demand != nullptr;
  });
}

Form form_for(std::string_view algorithm, const Case& shape, const Knobs& knobs) {
  if (!has_on_demand_form(algorithm, shape.collective)) return Form::Stored;
  Result<ScheduleSize> size = estimate_schedule(algorithm, shape, knobs);
  return size && size->steps > kStoredStepsAtMost ? Form::OnDemand : Form::Stored;
}

}  // namespace collcheck
