// The pipelined double binary tree all-reduce (NCCL's `tree`): two complementary binary trees
// over the ranks, each reducing half of the data up to its root and broadcasting it back down.
#pragma once

#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/schedule/schedule.h"

namespace collcheck {

// One of the two trees over ranks 0..nranks-1 (see tree.cc for how they are built).
struct BinaryTree {
  int root = 0;
  std::vector<int> parent;                 // per rank; -1 at the root
  std::vector<std::vector<int>> children;  // per rank; at most two, left before right
};

// Tree 0 or tree 1 of the double binary tree. Every rank is interior (has children) in at
// most one of them, except, for odd nranks, rank nranks-1, the root of tree 1.
BinaryTree double_binary_tree(int nranks, int tree);

// All-reduce for any nranks >= 1 and count >= 0, in place or out of place. Pipeline c of
// 2*knobs.channels runs on channel (and stream) c over tree c % 2 and slice c of the data,
// in chunks of knobs.chunk elements (0: one chunk per slice).
Schedule tree_allreduce(const Case& shape, const Knobs& knobs);

}  // namespace collcheck
