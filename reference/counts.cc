// The v-collectives' per-rank counts: sizes, block positions, text form and validation.
#include "reference/counts.h"

#include <algorithm>

#include "reference/key_values.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

std::size_t at(const Case& c, std::size_t index) { return index < c.counts.size() ? c.counts[index] : 0; }

std::size_t pair_index(const Case& c, int source, int destination) {
  return static_cast<std::size_t>(source) * static_cast<std::size_t>(c.nranks) + static_cast<std::size_t>(destination);
}

std::string counts_rule(Collective collective) {
  if (collective == Collective::AllToAllV) {
    return "ranks*ranks entries, row-major: counts[s*ranks+d] elements go from rank s to rank d";
  }
  return collective == Collective::AllGatherV ? "one entry per rank: the elements rank r contributes"
                                              : "one entry per rank: the elements rank r receives";
}

// A sum that saturates rather than wraps, so absurd counts fail the size check.
std::size_t add(std::size_t a, std::size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

}  // namespace

std::size_t counts_needed(Collective collective, int nranks) {
  if (!per_rank_counts(collective)) return 0;
  const auto ranks = static_cast<std::size_t>(std::max(nranks, 0));
  return collective == Collective::AllToAllV ? ranks * ranks : ranks;
}

std::size_t counts_total(std::span<const std::size_t> counts) {
  std::size_t total = 0;
  for (std::size_t count : counts) total = add(total, count);
  return total;
}

void set_counts(Case& c, std::vector<std::size_t> counts) {
  c.count = counts_total(counts);
  c.counts = std::move(counts);
}

std::vector<std::size_t> uniform_counts(Collective collective, int nranks, std::size_t count) {
  return std::vector<std::size_t>(counts_needed(collective, nranks), count);
}

std::vector<std::size_t> spread_counts(Collective collective, int nranks, std::size_t count) {
  std::vector<std::size_t> counts(counts_needed(collective, nranks));
  const std::size_t cycle[] = {count, 0, count + 1, count / 2};
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] = cycle[i % 4];
  return counts;
}

Case uniform_case(const Case& v_case, std::size_t count) {
  Case uniform;
  uniform.collective = uniform_form(v_case.collective);
  uniform.dtype = v_case.dtype;
  uniform.op = v_case.op;
  uniform.count = count;
  uniform.nranks = v_case.nranks;
  uniform.root = v_case.root;
  uniform.in_place = false;
  uniform.offset = v_case.offset;
  uniform.empty_as_null = v_case.empty_as_null;
  uniform.values = v_case.values;
  uniform.seed = v_case.seed;
  return uniform;
}

Case spread_case(Collective collective, std::size_t count, int nranks, int root, bool in_place) {
  Case c;
  c.collective = collective;
  c.count = count;
  c.nranks = nranks;
  c.root = root;
  c.in_place = in_place;
  if (per_rank_counts(collective)) set_counts(c, spread_counts(collective, nranks, count));
  return c;
}

std::size_t block_start(const Case& c, int rank) {
  std::size_t start = 0;
  for (int r = 0; r < rank; ++r) start += at(c, static_cast<std::size_t>(r));
  return start;
}

std::vector<std::size_t> block_starts(const Case& c) {
  std::vector<std::size_t> starts{0};
  for (std::size_t count : c.counts) starts.push_back(starts.back() + count);
  return starts;
}

std::size_t pair_count(const Case& c, int source, int destination) { return at(c, pair_index(c, source, destination)); }

std::size_t send_start(const Case& c, int source, int destination) {
  std::size_t start = 0;
  for (int d = 0; d < destination; ++d) start += pair_count(c, source, d);
  return start;
}

std::size_t receive_start(const Case& c, int destination, int source) {
  std::size_t start = 0;
  for (int s = 0; s < source; ++s) start += pair_count(c, s, destination);
  return start;
}

std::size_t input_elements(const Case& c, int rank) {
  switch (c.collective) {
    case Collective::AllGatherV: return at(c, static_cast<std::size_t>(rank));
    case Collective::ReduceScatterV: return c.count;
    case Collective::AllToAllV: {
      std::size_t total = 0;
      for (int d = 0; d < c.nranks; ++d) total = add(total, pair_count(c, rank, d));
      return total;
    }
    default: return input_elements(c.collective, c.count, c.nranks);
  }
}

std::size_t output_elements(const Case& c, int rank) {
  switch (c.collective) {
    case Collective::AllGatherV: return c.count;
    case Collective::ReduceScatterV: return at(c, static_cast<std::size_t>(rank));
    case Collective::AllToAllV: {
      std::size_t total = 0;
      for (int s = 0; s < c.nranks; ++s) total = add(total, pair_count(c, s, rank));
      return total;
    }
    case Collective::Reduce: return rank == c.root ? c.count : 0;
    default: return output_elements(c.collective, c.count, c.nranks);
  }
}

RankElements rank_elements(const Case& c) {
  const auto ranks = static_cast<std::size_t>(std::max(c.nranks, 0));
  RankElements elements{std::vector<std::size_t>(ranks, 0), std::vector<std::size_t>(ranks, 0)};
  if (c.collective != Collective::AllToAllV) {
    for (std::size_t rank = 0; rank < ranks; ++rank) {
      elements.inputs[rank] = input_elements(c, static_cast<int>(rank));
      elements.outputs[rank] = output_elements(c, static_cast<int>(rank));
    }
    return elements;
  }
  // Along the rows: no stride through n² counts. Plain sums (which the compiler vectorizes) where no
  // count reaches 2^40: n of them then sum well below 2^64; else sums that saturate.
  if (c.counts.size() == ranks * ranks && ranks <= (std::size_t{1} << 20)) {
    std::size_t high = 0;  // every count's bits, or-ed
    for (std::size_t source = 0; source < ranks; ++source) {
      const std::size_t* row = c.counts.data() + source * ranks;
      std::size_t sum = 0;
      for (std::size_t destination = 0; destination < ranks; ++destination) {
        sum += row[destination];
        elements.outputs[destination] += row[destination];
        high |= row[destination];
      }
      elements.inputs[source] = sum;
    }
    if (high < (std::size_t{1} << 40)) return elements;
    elements = RankElements{std::vector<std::size_t>(ranks, 0), std::vector<std::size_t>(ranks, 0)};
  }
  for (std::size_t source = 0; source < ranks; ++source) {
    for (std::size_t destination = 0; destination < ranks; ++destination) {
      const std::size_t count = at(c, source * ranks + destination);
      elements.inputs[source] = add(elements.inputs[source], count);
      elements.outputs[destination] = add(elements.outputs[destination], count);
    }
  }
  return elements;
}

NarrowCounts narrow_counts(const Case& c) {
  const auto ranks = static_cast<std::size_t>(std::max(c.nranks, 0));
  if (c.collective != Collective::AllToAllV || c.counts.size() != ranks * ranks) return {};
  if (std::any_of(c.counts.begin(), c.counts.end(), [](std::size_t count) { return count > UINT32_MAX; })) return {};
  NarrowCounts narrow{std::vector<std::uint32_t>(c.counts.begin(), c.counts.end()),
                      std::vector<std::uint32_t>(c.counts.size())};
  std::vector<std::uint32_t>& columns = narrow.columns;
  constexpr std::size_t kTile = 64;  // a tile of rows by a tile of columns at a time: both stay in the cache
  for (std::size_t rows = 0; rows < ranks; rows += kTile) {
    for (std::size_t cols = 0; cols < ranks; cols += kTile) {
      for (std::size_t source = rows; source < std::min(rows + kTile, ranks); ++source) {
        for (std::size_t destination = cols; destination < std::min(cols + kTile, ranks); ++destination) {
          columns[destination * ranks + source] = narrow.rows[source * ranks + destination];
        }
      }
    }
  }
  return narrow;
}

std::string format_counts(std::span<const std::size_t> counts) {
  std::string out;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(counts[i]);
  }
  return out;
}

Result<std::vector<std::size_t>> parse_counts(std::string_view text) {
  std::vector<std::size_t> counts;
  for (std::string_view item : split_list(text, ',')) {
    Result<std::uint64_t> count = parse_integer("counts", item, CountRange{0, kMaxCount, false, {}});
    if (!count) {
      return Error{"counts", quoted_input(text) + ": must be element counts separated by commas, each 0.." +
                                 std::to_string(kMaxCount) + " (counts=3,0,5)"};
    }
    counts.push_back(static_cast<std::size_t>(*count));
  }
  return counts;
}

Status validate_counts(const Case& c) {
  const std::string collective(name(c.collective));
  if (!per_rank_counts(c.collective)) {
    if (c.counts.empty()) return Ok{};
    return Error{"counts",
                 "only the v-collectives (allgatherv, reducescatterv, alltoallv) take counts, not " + collective};
  }
  const std::size_t needed = counts_needed(c.collective, c.nranks);
  if (c.counts.size() != needed) {
    return Error{"counts", std::to_string(c.counts.size()) + " entries: " + collective + " on " +
                               std::to_string(c.nranks) + " ranks takes " + std::to_string(needed) + " (" +
                               counts_rule(c.collective) + ")"};
  }
  if (c.in_place) {
    return Error{"inplace", collective +
                                " is checked out of place only (MPI's in-place forms of the v-collectives "
                                "lay buffers out differently from NCCL's; see docs/oracle.md)"};
  }
  const std::size_t total = counts_total(c.counts);
  if (c.count != total) {
    return Error{
        "n", std::to_string(c.count) + ": must be the sum of counts (" + std::to_string(total) + ") for " + collective};
  }
  const RankElements elements = rank_elements(c);
  for (int rank = 0; rank < c.nranks; ++rank) {
    const auto at_rank = static_cast<std::size_t>(rank);
    const std::size_t largest = std::max(elements.inputs[at_rank], elements.outputs[at_rank]);
    if (largest > kMaxBufferElements) {
      return Error{"counts", "rank " + std::to_string(rank) + "'s buffer would hold " + std::to_string(largest) +
                                 " elements: at most " + std::to_string(kMaxBufferElements) + " allowed"};
    }
  }
  return Ok{};
}

}  // namespace collcheck
