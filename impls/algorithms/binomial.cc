// The binomial-tree algorithms: broadcast from and reduce to any root in ceil(log2 n) levels,
// pipelined in chunks.
#include "impls/algorithms/generators.h"

#include <vector>

#include "impls/algorithms/generator_support.h"

namespace collcheck {

// The binomial tree works as follows. Ranks are relabelled by their `position` relative to the
// root (position 0 is the root), so the tree is the same for every root. Let `span` be the
// smallest power of two at least n. The parent of position v > 0 is v with its lowest set bit
// cleared; its children are v + m for every power of two m below that lowest bit (below `span`
// for the root) with v + m < n. A child v + m roots a subtree of the positions
// [v + m, v + 2m), so the subtrees of the root's children are halves, quarters, ... of the line.
//
// Broadcast: a rank receives a chunk from its parent (the root has it in its input) and sends it
// to its children, largest subtree first, so the chunk reaches every rank after ceil(log2 n)
// levels.
//
// Reduce: a rank receives from its children, smallest subtree first (it finishes first),
// reducing each into its partial (its input ⊕ the first child, then partial ⊕ the next), and
// sends the partial to its parent; a leaf sends its input. The root's partial is its output;
// other ranks keep theirs in scratch, having no output.
//
// Pipelining: the data is cut into chunks of at most knobs.chunk elements (each channel owning
// a slice, on its own stream), and the whole tree runs per chunk; sends are buffered, so a rank
// starts on chunk k+1 while deeper levels still carry chunk k.

namespace {

using generators::check;
using generators::input;
using generators::output;
using generators::Piece;
using generators::recv;
using generators::recv_reduce;
using generators::scratch;
using generators::send;

struct Tree {
  int n;
  int root;
  int span;  // smallest power of two at least n

  Tree(int nranks, int root_rank) : n(nranks), root(root_rank), span(1 << generators::ceil_log2(nranks)) {}

  int rank(int position) const { return generators::absolute(position, root, n); }
  static int lowest_bit(int v) { return v & -v; }
  int parent(int v) const { return v - lowest_bit(v); }
  // The children of v, largest subtree first.
  std::vector<int> children(int v) const {
    std::vector<int> out;
    const int limit = v == 0 ? span : lowest_bit(v);
    for (int m = limit / 2; m >= 1; m /= 2) {
      if (v + m < n) out.push_back(v + m);
    }
    for (int child : out) check(parent(child) == v, "a child's parent is the rank that lists it");
    return out;
  }
};

}  // namespace

Schedule binomial_broadcast(const Case& shape, const Knobs& knobs) {
  Schedule schedule = generators::start(shape, "binomial");
  const Tree tree(shape.nranks, shape.root);
  for (const Piece& piece : generators::pieces(shape.count, knobs)) {
    for (int v = 0; v < tree.n; ++v) {
      const int rank = tree.rank(v);
      if (v > 0) recv(schedule, rank, tree.rank(tree.parent(v)), output(piece), piece.channel);
      const Range held = v == 0 ? input(piece) : output(piece);
      for (int child : tree.children(v)) send(schedule, rank, tree.rank(child), held, piece.channel);
      if (v == 0 && !shape.in_place) generators::copy(schedule, rank, input(piece), output(piece), piece.channel);
    }
  }
  return schedule;
}

Schedule binomial_reduce(const Case& shape, const Knobs& knobs) {
  Schedule schedule = generators::start(shape, "binomial");
  const Tree tree(shape.nranks, shape.root);
  for (int v = 1; v < tree.n; ++v) {
    if (!tree.children(v).empty()) schedule.participants[static_cast<std::size_t>(tree.rank(v))].scratch = shape.count;
  }
  for (const Piece& piece : generators::pieces(shape.count, knobs)) {
    for (int v = 0; v < tree.n; ++v) {
      const int rank = tree.rank(v);
      std::vector<int> children = tree.children(v);
      const Range partial = v == 0 ? output(piece) : scratch(piece);
      bool reduced = false;  // whether `partial` holds anything yet
      for (auto child = children.rbegin(); child != children.rend(); ++child) {
        recv_reduce(schedule, rank, tree.rank(*child), reduced ? partial : input(piece), partial, piece.channel);
        reduced = true;
      }
      if (v > 0) {
        send(schedule, rank, tree.rank(tree.parent(v)), reduced ? partial : input(piece), piece.channel);
      } else if (!reduced && !shape.in_place) {
        generators::copy(schedule, rank, input(piece), output(piece), piece.channel);
      }
    }
  }
  return schedule;
}

}  // namespace collcheck
