// In-network aggregation (SHARP, NVLink SHARP) built as schedules: the switches reduce or
// gather, the ranks only send their data up and receive the result.
//
// The fabric. Ranks attach to leaf switches, fan_in consecutive ranks per switch (the last
// switch of a level may have fewer); switches attach to parent switches, fan_in consecutive
// switches each, level by level, until a level has a single switch: the root switch. So
// nranks <= fan_in gives exactly one switch, and a single rank gets one switch too, so that
// every call crosses the network. Switches are the participants after the ranks, leaf level
// first and the root switch last, and every participant covers a contiguous run of ranks
// below it. A switch owns only scratch, laid out like the vector V below, so a piece of V
// sits at the same offset in every switch.
//
// The vector V. Each collective moves one vector V through the fabric: up, from the ranks to
// the root switch, then down, from the root switch to the ranks. A participant takes part in
// the pieces of V that it covers on the way up and on the way down:
//                    V          up cover                        down cover
//   all-reduce       count      all of V                        all of V
//   reduce-scatter   n*count    all of V                        the blocks of its ranks
//   all-gather       n*count    the blocks of its ranks         all of V
//   broadcast        count      all of V if the root is below   all of V
// where the block of rank r is [r*count, (r+1)*count). A rank sends from its input (for
// all-gather, block r lies at input offset 0) and receives into its output (for
// reduce-scatter, block r lies at output offset 0).
//
// The steps. V is cut into `channels` slices (slice() in algorithms.h), slice c on channel
// and stream c, and every slice into chunks of knobs.chunk elements (0: one chunk), which
// flow one after another (generators::pieces). Up, for every chunk K, switch by
// switch from the leaves to the root: every child whose up cover meets K sends that part of
// K. Reducing collectives (all-reduce, reduce-scatter), where every child covers all of K:
// the switch receives the first child's part into its scratch with Recv and reduces the
// others into the same scratch with RecvReduce. All-gather and broadcast, where the children's
// parts are disjoint: each part is a Recv into its own place. The switch then holds K within
// its own up cover and sends that to its parent; the root switch ends with all of K.
// Down, for every chunk K, switch by switch from the root to the leaves: a switch sends every
// child the part of K within the child's down cover; a child switch receives it into scratch
// (and sends it on), a rank into its output.
// As in the tree, every participant runs all its up steps before its down steps. Sends are
// buffered and every receive waits only for the participant directly above or below, whose
// send comes earlier in its own script, so nothing deadlocks. In place, a rank's sends read
// its input before any of its receives of the same channel write its output; other channels
// touch other elements.
#include "impls/algorithms/innet.h"

#include <algorithm>

#include "impls/algorithms/generator_support.h"

namespace collcheck {
namespace {

using generators::check;
using generators::Piece;

Slice intersect(Slice a, Slice b) {
  const std::size_t first = std::max(a.offset, b.offset);
  const std::size_t end = std::min(a.offset + a.count, b.offset + b.count);
  return first < end ? Slice{first, end - first} : Slice{first, 0};
}

bool same(Slice a, Slice b) { return a.offset == b.offset && a.count == b.count; }

// What one collective moves through one fabric: V and every participant's covers.
class Plan {
 public:
  Plan(const Case& shape, const AggregationTree& tree) : shape_(shape), tree_(tree) {}

  const AggregationTree& tree() const { return tree_; }
  bool reduces() const { return collcheck::reduces(shape_.collective); }

  std::size_t vector() const {
    const bool blocks = shape_.collective == Collective::ReduceScatter || shape_.collective == Collective::AllGather;
    return blocks ? static_cast<std::size_t>(shape_.nranks) * shape_.count : shape_.count;
  }

  Slice up_cover(int p) const {
    switch (shape_.collective) {
      case Collective::AllGather: return blocks(p);
      case Collective::Broadcast: return covers_root(p) ? all() : Slice{0, 0};
      default: return all();
    }
  }

  Slice down_cover(int p) const { return shape_.collective == Collective::ReduceScatter ? blocks(p) : all(); }

  // Where participant p keeps `piece` of V: a switch in scratch, a rank in its input on the
  // way up and in its output on the way down.
  Range up_source(int p, Slice piece) const {
    if (is_switch(p)) return scratch(piece);
    const bool own_block = shape_.collective == Collective::AllGather;
    return Range{BufferKind::Input, piece.offset - (own_block ? block_offset(p) : 0), piece.count};
  }
  Range down_destination(int p, Slice piece) const {
    if (is_switch(p)) return scratch(piece);
    const bool own_block = shape_.collective == Collective::ReduceScatter;
    return Range{BufferKind::Output, piece.offset - (own_block ? block_offset(p) : 0), piece.count};
  }
  static Range scratch(Slice piece) { return Range{BufferKind::Scratch, piece.offset, piece.count}; }

 private:
  bool is_switch(int p) const { return p >= shape_.nranks; }
  Slice all() const { return Slice{0, vector()}; }
  std::size_t block_offset(int p) const { return static_cast<std::size_t>(p) * shape_.count; }
  Slice blocks(int p) const {
    const AggregationTree::Ranks ranks = tree_.below[static_cast<std::size_t>(p)];
    return Slice{static_cast<std::size_t>(ranks.first) * shape_.count,
                 static_cast<std::size_t>(ranks.end - ranks.first) * shape_.count};
  }
  bool covers_root(int p) const {
    const AggregationTree::Ranks ranks = tree_.below[static_cast<std::size_t>(p)];
    return ranks.first <= shape_.root && shape_.root < ranks.end;
  }

  const Case& shape_;
  const AggregationTree& tree_;
};

// Up: every switch, leaves first, collects its children's parts of the chunk into scratch.
void gather_up(Schedule& schedule, const Plan& plan, Slice chunk, int channel) {
  const AggregationTree& tree = plan.tree();
  for (int s = schedule.nranks(); s < schedule.nparticipants(); ++s) {
    const Slice held = intersect(chunk, plan.up_cover(s));
    std::size_t parts = 0, received = 0;
    for (int child : tree.children[static_cast<std::size_t>(s)]) {
      const Slice piece = intersect(chunk, plan.up_cover(child));
      if (piece.count == 0) continue;
      const Range into = Plan::scratch(piece);
      if (parts == 0 || !plan.reduces()) {
        schedule.send_recv(child, plan.up_source(child, piece), s, into, channel);
      } else {
        schedule.send_recv_reduce(child, plan.up_source(child, piece), s, into, into, channel);
      }
      check(!plan.reduces() || same(piece, held), "innet: a switch reduces whole chunks");
      ++parts;
      received += piece.count;
    }
    // Reducing, every child brings all the switch covers; otherwise the parts tile it.
    const std::size_t wanted =
        plan.reduces() ? held.count * tree.children[static_cast<std::size_t>(s)].size() : held.count;
    check(received == wanted, "innet: a switch receives exactly the part of a chunk it covers");
  }
}

// Down: every switch, the root first, sends each child its part of the chunk.
void multicast_down(Schedule& schedule, const Plan& plan, Slice chunk, int channel) {
  const AggregationTree& tree = plan.tree();
  for (int s = schedule.nparticipants() - 1; s >= schedule.nranks(); --s) {
    const Slice held = s == tree.root ? intersect(chunk, plan.up_cover(s)) : intersect(chunk, plan.down_cover(s));
    for (int child : tree.children[static_cast<std::size_t>(s)]) {
      const Slice piece = intersect(chunk, plan.down_cover(child));
      if (piece.count == 0) continue;
      check(same(intersect(piece, held), piece), "innet: a switch sends down only what it holds");
      schedule.send_recv(s, Plan::scratch(piece), child, plan.down_destination(child, piece), channel);
    }
  }
}

Schedule innet(const Case& shape, const Knobs& knobs, Collective collective) {
  check(shape.collective == collective, "innet: the generator of the shape's collective");
  check(shape.nranks >= 1 && knobs.channels >= 1 && shape.root >= 0 && shape.root < shape.nranks,
        "innet: at least one rank and one channel, and a root among the ranks");
  const AggregationTree tree = aggregation_tree(shape.nranks, knobs.fan_in);
  const Plan plan(shape, tree);
  Schedule schedule = generators::start(shape, "innet");
  schedule.participants.resize(tree.parent.size(), Participant{true, plan.vector(), {}, {}});
  // Every channel is its own stream, so running all chunks up before all down orders each
  // stream's steps as the prose says whatever the channels.
  const std::vector<Piece> chunks = generators::pieces(plan.vector(), knobs);
  for (const Piece& chunk : chunks) gather_up(schedule, plan, {chunk.offset, chunk.count}, chunk.channel);
  for (const Piece& chunk : chunks) multicast_down(schedule, plan, {chunk.offset, chunk.count}, chunk.channel);
  return schedule;
}

}  // namespace

AggregationTree aggregation_tree(int nranks, int fan_in) {
  check(nranks >= 1 && fan_in >= 2, "innet: at least one rank and two children per switch");
  AggregationTree tree;
  std::vector<int> level;  // the participants still without a parent, in rank order
  for (int rank = 0; rank < nranks; ++rank) {
    tree.parent.push_back(-1);
    tree.children.emplace_back();
    tree.below.push_back({rank, rank + 1});
    level.push_back(rank);
  }
  do {
    std::vector<int> above;
    for (std::size_t first = 0; first < level.size(); first += static_cast<std::size_t>(fan_in)) {
      const std::size_t end = std::min(level.size(), first + static_cast<std::size_t>(fan_in));
      const int s = static_cast<int>(tree.parent.size());
      tree.parent.push_back(-1);
      tree.children.emplace_back(level.begin() + static_cast<std::ptrdiff_t>(first),
                                 level.begin() + static_cast<std::ptrdiff_t>(end));
      tree.below.push_back({tree.below[static_cast<std::size_t>(level[first])].first,
                            tree.below[static_cast<std::size_t>(level[end - 1])].end});
      for (std::size_t i = first; i < end; ++i) {
        tree.parent[static_cast<std::size_t>(level[i])] = s;
        // The children's ranks follow one another, so the switch covers one run of ranks.
        if (i > first) {
          check(tree.below[static_cast<std::size_t>(level[i - 1])].end ==
                    tree.below[static_cast<std::size_t>(level[i])].first,
                "innet: a switch covers one run of ranks");
        }
      }
      above.push_back(s);
    }
    level = std::move(above);
  } while (level.size() > 1);
  tree.root = level.front();
  check(tree.root == static_cast<int>(tree.parent.size()) - 1 &&
            tree.below[static_cast<std::size_t>(tree.root)].first == 0 &&
            tree.below[static_cast<std::size_t>(tree.root)].end == nranks,
        "innet: the root switch is the last participant and covers every rank");
  return tree;
}

Schedule innet_allreduce(const Case& shape, const Knobs& knobs) { return innet(shape, knobs, Collective::AllReduce); }
Schedule innet_reducescatter(const Case& shape, const Knobs& knobs) {
  return innet(shape, knobs, Collective::ReduceScatter);
}
Schedule innet_allgather(const Case& shape, const Knobs& knobs) { return innet(shape, knobs, Collective::AllGather); }
Schedule innet_broadcast(const Case& shape, const Knobs& knobs) { return innet(shape, knobs, Collective::Broadcast); }

}  // namespace collcheck
