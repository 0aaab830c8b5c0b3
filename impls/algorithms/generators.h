// The generators of our reference algorithms other than tree and innet: one function per
// (algorithm, collective), each turning a shape and knobs into a Schedule (see algorithms.h).
#pragma once

#include "impls/algorithms/algorithms.h"
#include "impls/schedule/schedule.h"

namespace collcheck {

// ring.cc: reduce-scatter then all-gather around the ranks, pipelined in chunks, per channel.
Schedule ring_allreduce(const Case& shape, const Knobs& knobs);
Schedule ring_allgather(const Case& shape, const Knobs& knobs);
Schedule ring_reducescatter(const Case& shape, const Knobs& knobs);
Schedule ring_allgatherv(const Case& shape, const Knobs& knobs);
Schedule ring_reducescatterv(const Case& shape, const Knobs& knobs);
// The same schedules made on demand, rank by rank (the stored ones are these made to the end).
Schedule ring_allreduce_on_demand(const Case& shape, const Knobs& knobs);
// The count of the cover the ring all-reduce offers (Schedule::cover: every block as long as the
// longest), 0 where its blocks are equal and it offers none.
std::size_t ring_allreduce_cover(const Case& shape, const Knobs& knobs);
Schedule ring_allgather_on_demand(const Case& shape, const Knobs& knobs);
Schedule ring_reducescatter_on_demand(const Case& shape, const Knobs& knobs);
Schedule ring_allgatherv_on_demand(const Case& shape, const Knobs& knobs);
Schedule ring_reducescatterv_on_demand(const Case& shape, const Knobs& knobs);

// chain.cc: a pipelined chain starting at (broadcast) or ending at (reduce) the root.
Schedule chain_broadcast(const Case& shape, const Knobs& knobs);
Schedule chain_reduce(const Case& shape, const Knobs& knobs);

// binomial.cc: a binomial tree rooted at the root.
Schedule binomial_broadcast(const Case& shape, const Knobs& knobs);
Schedule binomial_reduce(const Case& shape, const Knobs& knobs);

// rd.cc: recursive doubling, the ranks above a power of two folded in and out.
Schedule rd_allgather(const Case& shape, const Knobs& knobs);

// rhd.cc: recursive halving (and doubling), the ranks above a power of two folded in and out.
Schedule rhd_allreduce(const Case& shape, const Knobs& knobs);
Schedule rhd_reducescatter(const Case& shape, const Knobs& knobs);

// pairwise.cc: n-1 pairwise exchanges.
Schedule pairwise_alltoall(const Case& shape, const Knobs& knobs);
Schedule pairwise_alltoall_on_demand(const Case& shape, const Knobs& knobs);
Schedule pairwise_alltoallv(const Case& shape, const Knobs& knobs);
Schedule pairwise_alltoallv_on_demand(const Case& shape, const Knobs& knobs);
// The count of the cover pairwise all-to-all-v offers (Schedule::cover: all-to-all on the longest
// pair's count), 0 where it offers none.
std::size_t pairwise_alltoallv_cover(const Case& shape, const Knobs& knobs);

// bruck.cc: Bruck's ceil(log2 n) rounds through scratch.
Schedule bruck_alltoall(const Case& shape, const Knobs& knobs);
Schedule bruck_alltoall_on_demand(const Case& shape, const Knobs& knobs);

}  // namespace collcheck
