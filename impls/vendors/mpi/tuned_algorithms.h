// Open MPI's coll/tuned algorithms by name: the table of every collective's algorithms, what one
// `mpi:COLL=ALG,...` spec selects (its grammar), and how a process is made to run a selection.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reference/case.h"
#include "reference/result.h"

namespace collcheck::tuned {

// Open MPI 4.1.4's coll/tuned algorithms, as `ompi_info --param coll tuned --level 9` lists them
// for coll_tuned_<mca>_algorithm: algorithm k's MCA value is k + 1 (0, "ignore", leaves the
// choice to Open MPI). Later versions append to these lists.
struct TunedCollective {
  Collective collective;
  std::string_view mca;                        // the name in coll_tuned_<mca>_algorithm
  std::string_view alias;                      // another spelling users type ("" where none)
  std::array<std::string_view, 9> algorithms;  // algorithm k + 1; "" past the end
  std::string_view key = {};                   // what specs say where it is not `mca`
  bool segmented = true;                       // Open MPI has coll_tuned_<mca>_algorithm_segmentsize
  bool run_time = true;                        // MPI_T may write the choice (4.1's allgatherv: no)

  // The name in `mpi:KEY=ALG` and `KEY_segsize`.
  std::string_view spec_key() const { return key.empty() ? mca : key; }
};

// MPI_Reduce_scatter (the v form) is Open MPI's `reduce_scatter`; the name has long meant the
// uniform MPI_Reduce_scatter_block in specs, so the v form is `reducescatterv` there.
inline constexpr std::array<TunedCollective, 9> kTuned{{
    {Collective::AllReduce,
     "allreduce",
     "",
     {"basic_linear", "nonoverlapping", "recursive_doubling", "ring", "segmented_ring", "rabenseifner"}},
    {Collective::AllGather, "allgather", "", {"linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc"}},
    {Collective::ReduceScatter,
     "reduce_scatter_block",
     "reduce_scatter",
     {"basic_linear", "recursive_doubling", "recursive_halving", "butterfly"}},
    {Collective::AllToAll, "alltoall", "", {"linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"}},
    {Collective::Broadcast,
     "bcast",
     "",
     {"basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree", "binomial", "knomial",
      "scatter_allgather", "scatter_allgather_ring"}},
    {Collective::Reduce,
     "reduce",
     "",
     {"linear", "chain", "pipeline", "binary", "binomial", "in-order_binary", "rabenseifner"}},
    {Collective::AllGatherV, "allgatherv", "", {"default", "bruck", "ring", "neighbor", "two_proc"}, {}, true, false},
    {Collective::ReduceScatterV,
     "reduce_scatter",
     "",
     {"non-overlapping", "recursive_halving", "ring", "butterfly"},
     "reducescatterv"},
    {Collective::AllToAllV, "alltoallv", "", {"basic_linear", "pairwise"}, {}, false},
}};

int algorithm_count(const TunedCollective& collective);
// Whether Open MPI 4.1's algorithm (1-based, as kTuned numbers it) cuts its messages into
// segments of coll_tuned_<mca>_algorithm_segmentsize bytes (its *_intra_do_this passes the
// segment size on): every bcast but basic_linear, reduce's chain, pipeline and tree algorithms,
// allreduce's segmented_ring.
bool uses_segments(const TunedCollective& collective, int algorithm);
// `1 basic_linear, 2 nonoverlapping, ...`
std::string algorithm_choices(const TunedCollective& collective);

// What one backend forces: per collective (kTuned's order) an algorithm (0: Open MPI decides)
// and a segment size in bytes (0: none).
struct Selection {
  std::array<int, kTuned.size()> algorithm{};
  std::array<int, kTuned.size()> segment_bytes{};
  bool any() const {
    return std::any_of(algorithm.begin(), algorithm.end(), [](int a) { return a != 0; });
  }
};

// The environment that makes Open MPI run the selection from MPI_Init on: dynamic rules on, then
// the forced algorithm (and segment size) of each selected collective.
std::vector<std::pair<std::string, std::string>> environment_of(const Selection& selection);

// The options of `mpi:OPTIONS` (`COLL=ALG` and `COLL_segsize=BYTES`, comma-separated); errors name
// `spec` and list the choices.
Result<Selection> parse_selection(std::string_view options, std::string_view spec);

// tuned_selection.cc: makes this process run the selection on the communicators it creates from
// now on, through MPI_T where Open MPI allows it, else by checking that the environment holds it.
Status select_algorithms(const Selection& selection, const std::string& spec);

}  // namespace collcheck::tuned
