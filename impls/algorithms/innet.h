// In-network aggregation (SHARP style): switch nodes reduce or gather what the ranks send up
// a tree of switches and multicast the result back down. Switches are participants too.
#pragma once

#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/schedule/schedule.h"

namespace collcheck {

// The switch tree over nranks ranks with fan_in children per switch. Participants are the
// ranks 0..nranks-1, then the switches: leaf switches first, the root switch last. There is
// always at least one switch, also for a single rank.
struct AggregationTree {
  struct Ranks {
    int first;
    int end;
  };
  int root = 0;                            // the root switch's participant index
  std::vector<int> parent;                 // per participant; -1 at the root switch
  std::vector<std::vector<int>> children;  // per participant, in rank order; none for a rank
  std::vector<Ranks> below;                // per participant: the ranks [first, end) under it
};
AggregationTree aggregation_tree(int nranks, int fan_in);

// Each takes shape.collective as named, any nranks >= 1 and count >= 0, in place or not, and
// knobs.fan_in (2..64) children per switch, knobs.channels slices of the data each on its own
// channel and stream, knobs.chunk elements per pipelined chunk (0: one chunk per slice).
//   all-reduce:      ranks send up, switches reduce, the root switch multicasts the sum down;
//   reduce-scatter:  the same, but each participant is sent down only its ranks' blocks;
//   all-gather:      switches place their children's blocks side by side, then multicast;
//   broadcast:       the root rank's data goes up to the root switch, which multicasts it.
Schedule innet_allreduce(const Case& shape, const Knobs& knobs);
Schedule innet_reducescatter(const Case& shape, const Knobs& knobs);
Schedule innet_allgather(const Case& shape, const Knobs& knobs);
Schedule innet_broadcast(const Case& shape, const Knobs& knobs);

}  // namespace collcheck
