// The collectives and reduction operations, their names, and how big each rank's buffers are.
// Counts follow NCCL: all-gather counts elements sent per rank, reduce-scatter elements received;
// the v-collectives (allgatherv, reducescatterv, alltoallv) take a count per rank (case.h).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "reference/result.h"

namespace collcheck {

enum class Collective {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast,
  Reduce,
  AllGatherV,      // MPI_Allgatherv: rank r contributes counts[r] elements
  ReduceScatterV,  // MPI_Reduce_scatter: rank r receives counts[r] reduced elements
  AllToAllV,       // MPI_Alltoallv: rank s sends counts[s * nranks + d] elements to rank d
};
enum class RedOp { Sum, Prod, Min, Max, Avg };

std::span<const Collective> all_collectives();
std::span<const RedOp> all_ops();

// allreduce allgather reducescatter alltoall broadcast reduce allgatherv reducescatterv alltoallv
std::string_view name(Collective);
std::string_view name(RedOp);  // sum prod min max avg

// Accepts `allreduce`, `all-reduce`, `all_reduce`, `AllReduce`, nccl-tests' binary names
// (`all_reduce_perf`), `bcast`, `a2a`, `ar`, `ag`, `rs`; the v-collectives also as `all_gather_v`,
// `reduce_scatter_v`, `alltoall_v`, `agv`, `rsv`, `a2av`. Case-insensitive.
Result<Collective> parse_collective(std::string_view text);
Result<RedOp> parse_op(std::string_view text);
std::string collective_choices();
std::string op_choices();

// True for the collectives that combine values with a RedOp (all-reduce, reduce-scatter,
// reduce); the others only move data and ignore the op.
bool reduces(Collective);
// True where the collective gives every rank the same output (all-reduce, all-gather,
// broadcast).
bool rank_identical(Collective);
// True where the root matters (broadcast, reduce).
bool rooted(Collective);
// True for the v-collectives, whose Case carries a count per rank (allgatherv, reducescatterv)
// or per pair of ranks (alltoallv).
bool per_rank_counts(Collective);
// The collective a v-collective generalizes (allgatherv: allgather); the others themselves.
Collective uniform_form(Collective);

// Elements in one rank's input and output buffers for `count` (NCCL's convention; for
// all-to-all, `count` is what each rank sends to each rank, as MPI_Alltoall's sendcount).
//   all-reduce  count / count          all-gather      count / nranks*count
//   broadcast   count / count          reduce-scatter  nranks*count / count
//   reduce      count / count (root)   all-to-all      nranks*count / nranks*count
// A v-collective's sizes depend on its counts (case.h); here it has those of its uniform form,
// as if every rank's count were `count`.
std::size_t input_elements(Collective, std::size_t count, int nranks);
std::size_t output_elements(Collective, std::size_t count, int nranks);

// NCCL's in-place layout: where one of a rank's buffers lies inside the other when a call runs
// in place. All-gather reads its input from output + rank*count; reduce-scatter writes its
// output to input + rank*count; the others use one buffer for both (offset 0). A reduce's
// non-root ranks have no output: their empty output is said to lie inside the input, so that
// one rule holds everywhere: the outer buffer is stored, the inner one maps into it. The
// v-collectives never run in place (validate() refuses it).
struct InPlaceLayout {
  bool input_inside = true;  // the input lies inside the output (else the output inside the input)
  std::size_t offset = 0;    // where the inner buffer starts in the outer one, in elements
};
InPlaceLayout in_place_layout(Collective, std::size_t count, int rank, int root);

}  // namespace collcheck
