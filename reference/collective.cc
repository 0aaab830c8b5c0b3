// Names, spellings and buffer sizes of the collectives and reduction ops.
#include "reference/collective.h"
#include "reference/numbers.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace collcheck {
namespace {

constexpr std::array<Collective, 9> kCollectives{
    Collective::AllReduce,  Collective::AllGather,      Collective::ReduceScatter,
    Collective::AllToAll,   Collective::Broadcast,      Collective::Reduce,
    Collective::AllGatherV, Collective::ReduceScatterV, Collective::AllToAllV};
constexpr std::array<RedOp, 5> kOps{RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max, RedOp::Avg};

constexpr std::array<std::string_view, 9> kCollectiveNames{"allreduce",  "allgather",      "reducescatter",
                                                           "alltoall",   "broadcast",      "reduce",
                                                           "allgatherv", "reducescatterv", "alltoallv"};
constexpr std::array<std::string_view, 5> kOpNames{"sum", "prod", "min", "max", "avg"};

// Lower case, without '-', '_' and a trailing "_perf" (nccl-tests' binary names).
std::string normalize(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '-' || c == '_' || c == ' ') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  constexpr std::string_view kPerf = "perf";
  if (out.size() > kPerf.size() && out.ends_with(kPerf)) out.resize(out.size() - kPerf.size());
  return out;
}

struct CollectiveAlias {
  std::string_view text;
  Collective collective;
};
constexpr std::array<CollectiveAlias, 11> kCollectiveAliases{{
    {"ar", Collective::AllReduce},
    {"ag", Collective::AllGather},
    {"rs", Collective::ReduceScatter},
    {"reducescatterblock", Collective::ReduceScatter},
    {"a2a", Collective::AllToAll},
    {"agv", Collective::AllGatherV},
    {"rsv", Collective::ReduceScatterV},
    {"a2av", Collective::AllToAllV},
    {"bcast", Collective::Broadcast},
    {"bc", Collective::Broadcast},
    {"red", Collective::Reduce},
}};

}  // namespace

std::span<const Collective> all_collectives() { return kCollectives; }
std::span<const RedOp> all_ops() { return kOps; }

std::string_view name(Collective collective) { return kCollectiveNames[static_cast<std::size_t>(collective)]; }
std::string_view name(RedOp op) { return kOpNames[static_cast<std::size_t>(op)]; }

Result<Collective> parse_collective(std::string_view text) {
  const std::string key = normalize(text);
  for (Collective collective : kCollectives) {
    if (key == name(collective)) return collective;
  }
  for (const CollectiveAlias& alias : kCollectiveAliases) {
    if (key == alias.text) return alias.collective;
  }
  return Error{"collective", quoted_input(text) + ": must be one of " + collective_choices()};
}

Result<RedOp> parse_op(std::string_view text) {
  std::string key = normalize(text);
  if (key.starts_with("nccl")) key = key.substr(4);
  if (key == "mpisum") key = "sum";
  if (key == "mpiprod" || key == "product") key = "prod";
  if (key == "mpimin") key = "min";
  if (key == "mpimax") key = "max";
  if (key == "mean" || key == "average") key = "avg";
  for (RedOp op : kOps) {
    if (key == name(op)) return op;
  }
  return Error{"op", quoted_input(text) + ": must be one of " + op_choices()};
}

std::string collective_choices() {
  std::string out;
  for (Collective collective : kCollectives) {
    if (!out.empty()) out += ", ";
    out += name(collective);
  }
  return out;
}

std::string op_choices() {
  std::string out;
  for (RedOp op : kOps) {
    if (!out.empty()) out += ", ";
    out += name(op);
  }
  return out;
}

bool reduces(Collective collective) {
  collective = uniform_form(collective);
  return collective == Collective::AllReduce || collective == Collective::ReduceScatter ||
         collective == Collective::Reduce;
}

bool rank_identical(Collective collective) {
  collective = uniform_form(collective);
  return collective == Collective::AllReduce || collective == Collective::AllGather ||
         collective == Collective::Broadcast;
}

bool rooted(Collective collective) { return collective == Collective::Broadcast || collective == Collective::Reduce; }

bool per_rank_counts(Collective collective) { return uniform_form(collective) != collective; }

Collective uniform_form(Collective collective) {
  switch (collective) {
    case Collective::AllGatherV: return Collective::AllGather;
    case Collective::ReduceScatterV: return Collective::ReduceScatter;
    case Collective::AllToAllV: return Collective::AllToAll;
    default: return collective;
  }
}

std::size_t input_elements(Collective collective, std::size_t count, int nranks) {
  const auto ranks = static_cast<std::size_t>(nranks);
  switch (uniform_form(collective)) {
    case Collective::ReduceScatter:
    case Collective::AllToAll: return ranks * count;
    default: return count;
  }
}

std::size_t output_elements(Collective collective, std::size_t count, int nranks) {
  const auto ranks = static_cast<std::size_t>(nranks);
  switch (uniform_form(collective)) {
    case Collective::AllGather:
    case Collective::AllToAll: return ranks * count;
    default: return count;
  }
}

InPlaceLayout in_place_layout(Collective collective, std::size_t count, int rank, int root) {
  const std::size_t slice = static_cast<std::size_t>(rank) * count;
  switch (collective) {
    case Collective::AllGather: return {true, slice};
    case Collective::ReduceScatter: return {false, slice};
    case Collective::Reduce: return {rank == root, 0};
    default: return {true, 0};
  }
}

}  // namespace collcheck
