// How big each algorithm's schedule will be, from its shape and knobs alone: the steps every
// generator writes per pipeline piece, counted from the loops of its file, as an upper bound.
#include <algorithm>
#include <bit>

#include "impls/algorithms/algorithms.h"
#include "impls/algorithms/generator_support.h"
#include "impls/algorithms/generators.h"
#include "reference/counts.h"

namespace collcheck {
namespace {

// The pieces generators::pieces() cuts a span of `length` into, without making them.
std::uint64_t piece_count(std::size_t length, const Knobs& knobs) {
  std::uint64_t pieces = 0;
  for (int channel = 0; channel < knobs.channels; ++channel) {
    const Slice part = slice(length, static_cast<std::size_t>(knobs.channels), static_cast<std::size_t>(channel));
    pieces += generators::chunk_count(part.count, knobs.chunk);
  }
  return pieces;
}

// Ring all-reduce runs its rounds over blocks of each channel's part and reserves four steps
// per round and step of the ring for every rank (ring.cc).
std::uint64_t ring_allreduce_steps(const Case& shape, const Knobs& knobs) {
  const auto n = static_cast<std::uint64_t>(shape.nranks);
  if (n == 1) return 1;
  std::uint64_t rounds = 0;
  for (int channel = 0; channel < knobs.channels; ++channel) {
    const Slice part = slice(shape.count, static_cast<std::size_t>(knobs.channels), static_cast<std::size_t>(channel));
    rounds += generators::chunk_count(slice(part.count, n, 0).count, knobs.chunk);
  }
  return saturating_product(saturating_product(rounds, 4 * (n - 1)), n);
}

// Switches of innet's aggregation tree: levels of at most fan_in children until one is left.
std::uint64_t switch_count(int nranks, int fan_in) {
  std::uint64_t switches = 0;
  auto level = static_cast<std::uint64_t>(nranks);
  do {
    level = (level + static_cast<std::uint64_t>(fan_in) - 1) / static_cast<std::uint64_t>(fan_in);
    switches += level;
  } while (level > 1);
  return switches;
}

// Steps of every participant together for one piece, and the scratch elements of one rank.
struct PerPiece {
  std::uint64_t steps;
  std::uint64_t scratch;
};

PerPiece per_piece(std::string_view algorithm, const Case& shape, const Knobs& knobs) {
  const auto n = static_cast<std::uint64_t>(shape.nranks);
  const auto log = static_cast<std::uint64_t>(generators::ceil_log2(shape.nranks));
  const std::uint64_t count = shape.count;
  const bool per_rank = shape.collective == Collective::AllGather || shape.collective == Collective::ReduceScatter;
  const std::uint64_t vector = per_rank || shape.collective == Collective::AllToAll ? n * count : count;
  if (algorithm == "ring") return {n * 2 * n, shape.collective == Collective::ReduceScatter ? n * count : 0};
  if (algorithm == "tree") return {7 * n, 0};  // up: 2 receives, a send, a copy; down: a receive, 2 sends
  // Folds in and out, and a send and a receive per level; a block collective's message may be
  // two ranges (the blocks of a group and of its extra ranks).
  if (algorithm == "rhd" && !per_rank) return {n * (4 + 4 * log), vector};
  if (algorithm == "rhd" || algorithm == "rd") return {n * (8 + 8 * log), vector};
  if (algorithm == "innet") return {6 * (n + switch_count(shape.nranks, knobs.fan_in)), vector};
  if (algorithm == "pairwise") return {n * (3 * n + 2), n * count};  // in place: a copy per step
  if (algorithm == "bruck") return {n * (2 * n + 2 * log + n * log), 2 * n * count};
  return {4 * n, count};  // chain, binomial: a send, a receive and copies per rank
}

// The v-collectives (ring allgatherv and reducescatterv, pairwise alltoallv) cut every block into
// pieces of its own: with P the pieces of all blocks together, a rank of the ring sends and
// receives at most every block once, and copies its own (2P + 2P steps per rank); pairwise
// sends, receives or copies every pair's pieces once at each end (2P in all). Reduce-scatter-v
// keeps a whole input of partials in scratch.
ScheduleSize vector_estimate(const Case& shape, const Knobs& knobs) {
  std::uint64_t pieces = 0;
  for (std::size_t count : shape.counts) pieces = saturating_sum(pieces, piece_count(count, knobs));
  const auto n = static_cast<std::uint64_t>(shape.nranks);
  ScheduleSize size;
  size.participants = n;
  const bool ring = shape.collective != Collective::AllToAllV;
  size.steps = saturating_sum(ring ? saturating_product(4 * n, pieces) : saturating_product(2, pieces), n);
  if (shape.collective == Collective::ReduceScatterV) {
    size.scratch_elements = saturating_product(n, counts_total(shape.counts));
  }
  return size;
}

// Distinct (sender, receiver, channel) of the sends, at most: pairwise sends from every rank to
// every other on each channel; every other algorithm's participant sends to a few peers per
// level of a tree or a doubling (2 (log2 P + 1) per channel bounds them).
std::uint64_t stream_link_bound(std::string_view algorithm, const Case& shape, std::uint64_t participants,
                                const Knobs& knobs) {
  const auto channels = static_cast<std::uint64_t>(std::max(knobs.channels, 1));
  const auto n = static_cast<std::uint64_t>(shape.nranks);
  if (algorithm == "pairwise") return saturating_product(saturating_product(n, n - 1), channels);
  const auto levels = static_cast<std::uint64_t>(std::bit_width(participants)) + 1;
  return saturating_product(saturating_product(participants, 2 * levels), channels);
}

}  // namespace

Result<ScheduleSize> estimate_schedule(std::string_view algorithm, const Case& shape, const Knobs& knobs) {
  const bool known = std::any_of(all_algorithms().begin(), all_algorithms().end(), [&](const Algorithm& entry) {
    return entry.name == algorithm && entry.collective == shape.collective;
  });
  if (!known)
    return Error{"algorithm", "'" + std::string(algorithm) + "' has no " + std::string(name(shape.collective))};
  if (per_rank_counts(shape.collective)) {
    ScheduleSize size = vector_estimate(shape, knobs);
    size.stream_links = stream_link_bound(algorithm, shape, size.participants, knobs);
    if (algorithm == "pairwise") size.cover_count = pairwise_alltoallv_cover(shape, knobs);
    return size;
  }
  ScheduleSize size;
  const PerPiece piece = per_piece(algorithm, shape, knobs);
  Knobs cut = knobs;
  if (algorithm == "tree") cut.channels *= 2;  // one pipeline per tree and channel
  // innet cuts its vector V (a block per rank for all-gather and reduce-scatter), the others the count.
  const bool per_rank = shape.collective == Collective::AllGather || shape.collective == Collective::ReduceScatter;
  const std::size_t length =
      algorithm == "innet" && per_rank ? shape.count * static_cast<std::size_t>(shape.nranks) : shape.count;
  size.participants =
      static_cast<std::uint64_t>(shape.nranks) + (algorithm == "innet" ? switch_count(shape.nranks, knobs.fan_in) : 0);
  size.steps = algorithm == "ring" && shape.collective == Collective::AllReduce
                   ? ring_allreduce_steps(shape, knobs)
                   : saturating_sum(saturating_product(piece_count(length, cut), piece.steps), size.participants);
  size.scratch_elements = saturating_product(piece.scratch, size.participants);
  size.stream_links = stream_link_bound(algorithm, shape, size.participants, knobs);
  if (algorithm == "ring" && shape.collective == Collective::AllReduce) {
    size.cover_count = ring_allreduce_cover(shape, knobs);
  }
  // Partial sums that stay one run: ring order, recursive halving on a power of two (its halves'
  // ranks a stride apart), and in-network aggregation (a switch sums its children in order, each
  // covering the ranks just after the one before). Folded-in extra ranks and trees make several.
  const bool power_of_two = (shape.nranks & (shape.nranks - 1)) == 0;
  if (algorithm == "ring" || algorithm == "innet" || (algorithm == "rhd" && power_of_two)) {
    size.runs_per_reduced_element = 1;
  }
  return size;
}

}  // namespace collcheck
