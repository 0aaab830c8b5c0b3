// What a collective requires of every output element (expected.h).
#include "impls/prove/expected.h"

#include <algorithm>

#include "reference/counts.h"

namespace collcheck::provenance {

VectorBlocks vector_blocks(const Case& c, int rank, const VectorBlocks* previous) {
  VectorBlocks blocks;
  const bool follows = previous != nullptr && rank > 0 && previous->rank == rank - 1;
  blocks.rank = rank;
  if (c.collective == Collective::ReduceScatterV) {
    blocks.own_start =
        follows ? previous->own_start + c.counts[static_cast<std::size_t>(rank - 1)] : block_start(c, rank);
  }
  if (c.collective != Collective::AllGatherV && c.collective != Collective::AllToAllV) return blocks;
  blocks.starts.push_back(0);
  for (int source = 0; source < c.nranks; ++source) {
    const bool gather = c.collective == Collective::AllGatherV;
    blocks.starts.push_back(blocks.starts.back() +
                            (gather ? c.counts[static_cast<std::size_t>(source)] : pair_count(c, source, rank)));
    std::size_t sent_from = 0;
    if (!gather) {
      sent_from = follows ? previous->sent_from[static_cast<std::size_t>(source)] + pair_count(c, source, rank - 1)
                          : send_start(c, source, rank);
    }
    blocks.sent_from.push_back(sent_from);
  }
  return blocks;
}

Run wanted(const Case& c, int rank, std::size_t i, const VectorBlocks& blocks) {
  const auto n = static_cast<std::uint32_t>(c.nranks);
  const auto r = static_cast<std::size_t>(rank);
  switch (c.collective) {
    case Collective::AllGatherV:   // block s of counts[s] elements is rank s's input
    case Collective::AllToAllV: {  // block s is what rank s sent this rank
      // The last block starting at or before i (empty blocks start where the next does).
      const auto after = std::upper_bound(blocks.starts.begin(), blocks.starts.end(), i);
      const auto source = static_cast<std::size_t>(after - blocks.starts.begin() - 1);
      const auto from = static_cast<std::uint32_t>(source);
      return Run{blocks.sent_from[source] + i - blocks.starts[source], from, 1};
    }
    case Collective::ReduceScatterV: return Run{blocks.own_start + i, 0, n};
    case Collective::AllGather: {
      const auto source = static_cast<std::uint32_t>(i / std::max<std::size_t>(c.count, 1));
      return Run{i % std::max<std::size_t>(c.count, 1), source, 1};
    }
    case Collective::AllToAll: {
      const auto source = static_cast<std::uint32_t>(i / std::max<std::size_t>(c.count, 1));
      return Run{r * c.count + i % std::max<std::size_t>(c.count, 1), source, 1};
    }
    case Collective::Broadcast: {
      const auto root = static_cast<std::uint32_t>(c.root);
      return Run{i, root, 1};
    }
    case Collective::ReduceScatter: return Run{r * c.count + i, 0, n};
    default: return Run{i, 0, n};  // all-reduce, reduce (root)
  }
}

std::size_t wanted_stretch(const Case& c, std::size_t i, std::size_t size, const VectorBlocks& blocks) {
  switch (c.collective) {
    case Collective::AllGatherV:
    case Collective::AllToAllV:  // to the next block's start
      return *std::upper_bound(blocks.starts.begin(), blocks.starts.end(), i) - i;
    case Collective::AllGather:
    case Collective::AllToAll: {  // to the next source's block
      const std::size_t count = std::max<std::size_t>(c.count, 1);
      return count - i % count;
    }
    default: return size - i;  // one source, or all of them, throughout
  }
}

}  // namespace collcheck::provenance
