// The pipelined double binary tree all-reduce, built as a schedule.
//
// The trees. Lay the ranks out as positions 0..n-1. Tree 0 roots every interval of positions
// at the position in it with the most trailing zero bits (position 0 counting as having the
// most of all), and hangs the parts of the interval left and right of that position below it
// as its left and right subtrees. The whole row [0, n) is therefore rooted at position 0,
// whose only child is the largest power of two below n; an odd position is alone in its
// interval, so odd positions are leaves and the interior nodes are even, and the tree is
// about log2(n) deep. Tree 1 has the same shape with positions renamed to ranks so that its
// interior nodes are tree 0's leaves: mirrored (position p is rank n-1-p) when n is even,
// shifted by one (position p is rank p-1, position 0 is rank n-1) when n is odd. With n odd,
// rank n-1 is the one rank that can be interior in both trees. Each rank thus forwards data
// in one tree and only sends and receives its own in the other, so both trees together load
// every rank about equally.
//
// The data. The count is cut into 2*channels slices (slice() in algorithms.h); pipeline c
// moves slice c over tree c % 2 on channel c (and stream c), so each tree carries half of the
// data. A slice is cut further into chunks of knobs.chunk elements (0: one chunk), which flow
// one after another (generators::pieces).
//
// Up: for every chunk, a leaf sends its input chunk to its parent. An interior node receives
// its first child's chunk reduced with its own input chunk into its output chunk (RecvReduce
// from input into output: an out-of-place input is never written, and in place it is the
// same buffer), reduces its second child's chunk into that output chunk, and sends it to its
// parent. The root keeps it: the root's output chunk holds the sum over all ranks.
// Down: for every chunk, the root sends its output chunk to its children; every other node
// receives its output chunk from its parent and sends it on to its children.
// A node runs all its up steps, chunk by chunk, before its down steps (NCCL's "up then down"
// tree): a chunk leaves a node as soon as its children's have arrived, so the chunks of a
// slice sit at different heights of the tree at once. Every receive waits only for a child
// (up) or the parent (down), whose matching send comes earlier in its own script, and sends
// are buffered, so nothing deadlocks. A single rank is a root without children, which only
// copies its input chunk to its output (nothing at all in place).
#include "impls/algorithms/tree.h"

#include <algorithm>
#include <bit>

#include "impls/algorithms/generator_support.h"

namespace collcheck {
namespace {

using generators::check;

// The position in [low, high], 1 <= low <= high, with the most trailing zero bits: all of them
// share the bits above the highest bit where low and high differ; high has that bit set, and
// clearing the bits below it gives the one position with most trailing zeros.
int most_trailing_zeros(int low, int high) {
  if (low == high) return low;
  const auto differ = std::bit_floor(static_cast<unsigned>(low ^ high));
  return static_cast<int>(static_cast<unsigned>(high) & ~(differ - 1));
}

// Hangs the positions [low, high) below rank `parent` (-1: they are the whole tree).
void hang(BinaryTree& tree, const std::vector<int>& rank_at, int low, int high, int parent) {
  if (low >= high) return;
  const int position = low == 0 ? 0 : most_trailing_zeros(low, high - 1);
  const int rank = rank_at[static_cast<std::size_t>(position)];
  if (parent < 0) {
    tree.root = rank;
  } else {
    tree.parent[static_cast<std::size_t>(rank)] = parent;
    tree.children[static_cast<std::size_t>(parent)].push_back(rank);
  }
  hang(tree, rank_at, low, position, rank);
  hang(tree, rank_at, position + 1, high, rank);
}

// The ranks of `tree` with every child before its parent; checks the tree spans all ranks.
std::vector<int> bottom_up(const BinaryTree& tree) {
  std::vector<int> order;
  std::vector<int> pending{tree.root};
  while (!pending.empty()) {  // parents before children, reversed at the end
    const int node = pending.back();
    pending.pop_back();
    order.push_back(node);
    for (int child : tree.children[static_cast<std::size_t>(node)]) pending.push_back(child);
  }
  std::reverse(order.begin(), order.end());
  check(order.size() == tree.parent.size(), "tree: the tree reaches every rank");
  return order;
}

// One of the two trees, with its ranks in bottom_up() order.
struct Pipeline {
  const BinaryTree& tree;
  const std::vector<int>& order;
};

// Up: every node reduces its children's chunks into its output chunk and sends it to its parent.
void reduce_up(Schedule& schedule, const Pipeline& pipeline, const generators::Piece& chunk) {
  const Range input{BufferKind::Input, chunk.offset, chunk.count};
  const Range output{BufferKind::Output, chunk.offset, chunk.count};
  const auto& children = pipeline.tree.children;
  for (int node : pipeline.order) {
    const auto& below = children[static_cast<std::size_t>(node)];
    for (std::size_t i = 0; i < below.size(); ++i) {
      const int child = below[i];
      // A leaf sends its input; an interior child has reduced into its output, step by step
      // earlier in its script, because the bottom-up order visits it before `node`.
      const Range sent = children[static_cast<std::size_t>(child)].empty() ? input : output;
      schedule.send_recv_reduce(child, sent, node, i == 0 ? input : output, output, chunk.channel);
    }
    if (below.empty() && node == pipeline.tree.root && !schedule.shape.in_place) {
      schedule.copy(node, input, output, chunk.channel);
    }
  }
}

// Down: every node forwards the root's output chunk to its children.
void broadcast_down(Schedule& schedule, const Pipeline& pipeline, const generators::Piece& chunk) {
  const Range output{BufferKind::Output, chunk.offset, chunk.count};
  for (auto node = pipeline.order.rbegin(); node != pipeline.order.rend(); ++node) {
    for (int child : pipeline.tree.children[static_cast<std::size_t>(*node)]) {
      schedule.send_recv(*node, output, child, output, chunk.channel);
    }
  }
}

}  // namespace

BinaryTree double_binary_tree(int nranks, int tree) {
  check(nranks >= 1 && (tree == 0 || tree == 1), "tree: a double binary tree has trees 0 and 1 over at least one rank");
  const auto n = static_cast<std::size_t>(nranks);
  std::vector<int> rank_at(n);
  for (int position = 0; position < nranks; ++position) {
    int rank = position;
    if (tree == 1) rank = nranks % 2 == 0 ? nranks - 1 - position : (position + nranks - 1) % nranks;
    rank_at[static_cast<std::size_t>(position)] = rank;
  }
  BinaryTree result{0, std::vector<int>(n, -1), std::vector<std::vector<int>>(n)};
  hang(result, rank_at, 0, nranks, -1);
  for (std::size_t rank = 0; rank < n; ++rank) {
    check(result.children[rank].size() <= 2, "tree: a binary tree node has at most two children");
    check((result.parent[rank] < 0) == (static_cast<int>(rank) == result.root), "tree: only the root has no parent");
  }
  return result;
}

Schedule tree_allreduce(const Case& shape, const Knobs& knobs) {
  check(shape.collective == Collective::AllReduce, "tree implements all-reduce only");
  check(shape.nranks >= 1 && knobs.channels >= 1, "tree needs at least one rank and one channel");
  Schedule schedule = generators::start(shape, "tree");
  const BinaryTree trees[2] = {double_binary_tree(shape.nranks, 0), double_binary_tree(shape.nranks, 1)};
  const std::vector<int> orders[2] = {bottom_up(trees[0]), bottom_up(trees[1])};
  const Pipeline pipelines[2] = {{trees[0], orders[0]}, {trees[1], orders[1]}};
  Knobs both_trees = knobs;
  both_trees.channels = 2 * knobs.channels;
  // Every channel is its own stream, so running all chunks up before all down orders each
  // stream's steps as the prose says whatever the channels.
  const std::vector<generators::Piece> chunks = generators::pieces(shape.count, both_trees);
  for (const generators::Piece& chunk : chunks) reduce_up(schedule, pipelines[chunk.channel % 2], chunk);
  for (const generators::Piece& chunk : chunks) broadcast_down(schedule, pipelines[chunk.channel % 2], chunk);
  return schedule;
}

}  // namespace collcheck
