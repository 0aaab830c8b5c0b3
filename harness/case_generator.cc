// The Case generator: each field from a list ordered simplest first (RapidCheck's element()
// shrinks toward the front), counts from shapes relative to the rank count.
#include "harness/case_generator.h"

#include <algorithm>

#include "reference/counts.h"

namespace collcheck {
namespace {

template <typename T>
std::vector<T> allowed(const std::vector<T>& supported, const std::vector<T>& wanted) {
  if (wanted.empty()) return supported;
  std::vector<T> both;
  for (T value : wanted) {
    if (std::find(supported.begin(), supported.end(), value) != supported.end()) both.push_back(value);
  }
  return both;
}

// Simplest first: what a shrunk failure should be stated in.
const std::vector<DType> kDtypeOrder{DType::Int32,   DType::Float32,  DType::Int8,       DType::UInt8,
                                     DType::UInt32,  DType::Int64,    DType::UInt64,     DType::Float64,
                                     DType::Float16, DType::BFloat16, DType::Float8E4M3, DType::Float8E5M2};

bool prime(int n) {
  if (n < 2) return false;
  for (int d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// A product of primes up to 7 with more than one distinct prime (6, 10, 12, 14, 15, 18, 24, 48,
// 96 …): where hierarchical and radix-k algorithms split unevenly.
bool smooth_composite(int n) {
  int distinct = 0;
  for (int p : {2, 3, 5, 7}) {
    if (n % p != 0) continue;
    ++distinct;
    while (n % p == 0) n /= p;
  }
  return n == 1 && distinct > 1;
}

// The rank counts a case may have: every count in [low, high] the backend's precondition admits
// (tried on an otherwise plain case of its first collective), ascending.
std::vector<int> admissible_rank_counts(const Capabilities& capabilities, int low, int high) {
  Case plain;
  if (!capabilities.collectives.empty()) plain.collective = capabilities.collectives.front();
  std::vector<int> counts;
  for (int n = low; n <= high; ++n) {
    plain.nranks = n;
    if (!capabilities.precondition || capabilities.precondition(plain)) counts.push_back(n);
  }
  return counts;
}

// Those weighted up: 1, 2, 3, primes, powers of two and their neighbours, smooth composites and
// the range's ends.
std::vector<int> interesting_rank_counts(const std::vector<int>& admissible) {
  std::vector<int> interesting;
  for (int n : admissible) {
    if (n <= 3 || prime(n) || power_of_two(n) || power_of_two(n - 1) || power_of_two(n + 1) || smooth_composite(n) ||
        n == admissible.front() || n == admissible.back())
      interesting.push_back(n);
  }
  return interesting;
}

// Every admissible count below `current`, smallest first, so that greedy shrinking reaches the
// smallest that still fails even when the failure skips counts (fails at 6 and 12, not 7..11);
// above 64 of them, the 32 smallest and the counts halfway, a quarter, … of the way down.
rc::Seq<int> smaller_rank_counts(const std::vector<int>& admissible, int current) {
  const auto end = std::lower_bound(admissible.begin(), admissible.end(), current);
  std::vector<int> smaller(admissible.begin(), end);
  if (smaller.size() > 64) {
    std::vector<int> some(smaller.begin(), smaller.begin() + 32);
    for (std::size_t gap = smaller.size() / 2; gap > 0 && gap + 32 <= smaller.size(); gap /= 2)
      some.push_back(smaller[smaller.size() - gap]);
    smaller = std::move(some);
  }
  return rc::seq::fromContainer(std::move(smaller));
}

// Rank counts: half the draws among the interesting ones, half among every admissible count, both
// within a reach that grows with RapidCheck's size (small worlds first, the whole range from size
// 100 on); shrinks through every smaller admissible count.
rc::Gen<int> rank_count_generator(std::vector<int> admissible) {
  std::vector<int> interesting = interesting_rank_counts(admissible);
  return rc::Gen<int>(
      [admissible = std::move(admissible), interesting = std::move(interesting)](const rc::Random& random, int size) {
        rc::Random draws = random;
        const std::size_t reach =
            std::max<std::size_t>(std::min<std::size_t>(admissible.size(), 8),
                                  admissible.size() * static_cast<std::size_t>(std::clamp(size, 0, 100)) / 100);
        const int largest = admissible[reach - 1];
        const auto within = std::upper_bound(interesting.begin(), interesting.end(), largest);
        const auto interesting_within = static_cast<std::size_t>(within - interesting.begin());
        const bool from_interesting = (draws.next() & 1) != 0 && interesting_within > 0;
        const std::uint64_t index = draws.next();
        const int n = from_interesting ? interesting[index % interesting_within] : admissible[index % reach];
        return rc::shrinkable::shrinkRecur(
            n, [admissible](int current) { return smaller_rank_counts(admissible, current); });
      });
}

// An element of `list`, shrinking toward its front (RapidCheck's element pickers do not shrink).
template <typename T>
rc::Gen<T> pick(std::vector<T> list) {
  return rc::gen::map(rc::gen::inRange<std::size_t>(0, list.size()), [list](std::size_t i) { return list[i]; });
}

// One of `weights.size()` kinds, the i-th drawn weights[i] times in sum(weights); shrinks to 0.
rc::Gen<std::size_t> kind(const std::vector<std::size_t>& weights) {
  std::size_t total = 0;
  for (std::size_t w : weights) total += w;
  return rc::gen::map(rc::gen::inRange<std::size_t>(0, total), [weights](std::size_t draw) {
    std::size_t k = 0;
    while (draw >= weights[k]) draw -= weights[k++];
    return k;
  });
}

// A count drawn next to one of the backend's byte edges: `bytes` (a multiple of the edge) and
// `step` (-1, 0, +1 elements), made a count once the dtype is drawn (bytes_at_edge).
struct ByteEdge {
  std::size_t bytes = 0;
  int step = 0;
};

std::size_t bytes_at_edge(const ByteEdge& edge, DType dtype, std::size_t low, std::size_t high) {
  const std::size_t elements = edge.bytes / size_of(dtype);
  const std::size_t count =
      edge.step < 0 ? (elements > 0 ? elements - 1 : 0) : elements + static_cast<std::size_t>(edge.step);
  return std::clamp(count, low, high);
}

// Counts relative to n, simplest kinds first: 0, 1, below n, n-1..n+1, k*n + k%n (a remainder
// unless k is a multiple of n), anything in the range, and — for a backend with a pipeline
// chunk or byte edges — one off either side of a multiple of the chunk, or of an edge's bytes
// (then `edge` is set, and the count is made once the dtype is known).
std::size_t count_for(int nranks, std::size_t chunk, const std::vector<std::size_t>& edge_bytes, std::size_t low,
                      std::size_t high, ByteEdge& edge) {
  const auto n = static_cast<std::size_t>(nranks);
  std::size_t count = 0;
  const bool edges = chunk > 0 || !edge_bytes.empty();
  switch (*kind({2, 2, 3, 3, 4, 2, edges ? std::size_t{4} : std::size_t{0}})) {
    case 0: count = 0; break;
    case 1: count = 1; break;
    case 2: count = *rc::gen::inRange<std::size_t>(0, std::max<std::size_t>(n, 1)); break;
    case 3: count = n - 1 + *rc::gen::inRange<std::size_t>(0, 3); break;
    case 4: {
      const std::size_t k = *rc::gen::inRange<std::size_t>(1, 64);
      count = k * n + k % n;
      break;
    }
    case 5: {
      // Anything in the range, within a reach that grows with the square of RapidCheck's size:
      // a hundredth of the range at size 10, all of it at 100.
      const int size = std::clamp(*rc::gen::withSize([](int given) { return rc::gen::just(given); }), 1, 100);
      const std::size_t reach =
          std::max<std::size_t>(1, static_cast<std::size_t>(static_cast<double>(high - low) * size * size / 10000.0));
      count = *rc::gen::inRange<std::size_t>(low, std::min(high, low + reach) + 1);
      break;
    }
    default: {
      // Which edge: the chunk, or one of the byte edges (no draw where the chunk is the only one).
      const std::size_t which =
          edge_bytes.empty() ? 0 : *rc::gen::inRange<std::size_t>(chunk > 0 ? 0 : 1, edge_bytes.size() + 1);
      if (which == 0) {
        count = *rc::gen::inRange<std::size_t>(1, 4 * n + 1) * chunk + *rc::gen::inRange<std::size_t>(0, 3) - 1;
        break;
      }
      edge.bytes = *rc::gen::inRange<std::size_t>(1, 5) * edge_bytes[which - 1];
      edge.step = *rc::gen::inRange(-1, 2);
      return low;
    }
  }
  return std::clamp(count, low, high);
}

// The per-rank counts of a v-collective around `base` (counts_needed() of them), simplest kinds
// first so that shrinking heads for them: uniform (every entry `base`), one entry nonzero, zeros
// on some entries (the rest `base`), all zero, uneven (each 1..2*base+1). Entries shrink toward
// the smallest allowed and the kinds toward uniform.
std::vector<std::size_t> counts_for(Collective collective, int nranks, std::size_t base) {
  const std::size_t entries = counts_needed(collective, nranks);
  std::vector<std::size_t> counts(entries, base);
  switch (*kind({2, 2, 3, 1, 4})) {
    case 0: break;
    case 1: {
      const std::size_t nonzero = *rc::gen::inRange<std::size_t>(0, entries);
      counts.assign(entries, 0);
      counts[nonzero] = std::max<std::size_t>(base, 1);
      break;
    }
    case 2: {
      const std::vector<bool> zero = *rc::gen::container<std::vector<bool>>(entries, rc::gen::arbitrary<bool>());
      for (std::size_t i = 0; i < entries; ++i) counts[i] = zero[i] ? 0 : base;
      break;
    }
    case 3: counts.assign(entries, 0); break;
    default:
      // Nonzero where base allows (the kinds above have the zeros), so that sizes differ rank by rank.
      counts = *rc::gen::container<std::vector<std::size_t>>(
          entries, rc::gen::inRange<std::size_t>(base > 0 ? 1 : 0, 2 * base + 2));
      break;
  }
  return counts;
}

// Whether the backend's precondition admits some rank count in the range (tried on an
// otherwise plain case of its first collective).
bool precondition_possible(const Capabilities& capabilities, const CaseLimits& limits) {
  if (!capabilities.precondition || capabilities.collectives.empty()) return true;
  return !admissible_rank_counts(capabilities, std::max(limits.min_ranks, capabilities.min_ranks),
                                 std::min(limits.max_ranks, capabilities.max_ranks))
              .empty();
}

// The multiple of `multiple` at or below `count`, or the next one up where that is below `low`
// and the next one fits under `high` (a backend that runs only multiples: check draws only those).
std::size_t multiple_within(std::size_t count, std::size_t multiple, std::size_t low, std::size_t high) {
  const std::size_t below = count / multiple * multiple;
  return below < low && below + multiple <= high ? below + multiple : below;
}

// Whether some rank's input or output holds no element.
bool has_empty_buffer(const Case& c) {
  for (int rank = 0; rank < c.nranks; ++rank) {
    if (input_elements(c, rank) == 0 || output_elements(c, rank) == 0) return true;
  }
  return false;
}

}  // namespace

bool any_case_possible(const Capabilities& capabilities, const CaseLimits& limits) {
  return precondition_possible(capabilities, limits) &&
         !allowed(capabilities.collectives, limits.collectives).empty() &&
         !allowed(capabilities.dtypes, limits.dtypes).empty() && !allowed(capabilities.ops, limits.ops).empty() &&
         std::max(limits.min_ranks, capabilities.min_ranks) <= std::min(limits.max_ranks, capabilities.max_ranks);
}

rc::Gen<Case> case_generator(const Capabilities& capabilities, const CaseLimits& limits) {
  const std::vector<Collective> collectives = allowed(capabilities.collectives, limits.collectives);
  const std::vector<DType> dtypes = allowed(allowed(kDtypeOrder, capabilities.dtypes), limits.dtypes);
  std::vector<RedOp> ops = allowed(capabilities.ops, limits.ops);
  const int fewest = std::max(limits.min_ranks, capabilities.min_ranks);
  std::vector<int> rank_counts =
      admissible_rank_counts(capabilities, fewest, std::min(limits.max_ranks, capabilities.max_ranks));
  if (rank_counts.empty()) rank_counts.push_back(fewest);  // no case possible: the caller asks first
  const rc::Gen<int> ranks = rank_count_generator(std::move(rank_counts));
  // Value kinds with their weights (exact 3, real 2, special 1), those the user allows.
  std::vector<ValueKind> values;
  std::vector<std::size_t> weights;
  for (const auto& [value, weight] : {std::pair{ValueKind::Exact, 3}, {ValueKind::Real, 2}, {ValueKind::Special, 1}}) {
    if (!limits.values.empty() && std::find(limits.values.begin(), limits.values.end(), value) == limits.values.end())
      continue;
    values.push_back(value);
    weights.push_back(static_cast<std::size_t>(weight));
  }
  const bool in_place = capabilities.in_place;
  const bool out_of_place = capabilities.out_of_place;
  const std::size_t count_multiple = capabilities.count_multiple;
  const std::size_t chunk = capabilities.chunk;
  const std::vector<std::size_t> edge_bytes = capabilities.edge_bytes;
  const std::size_t min_count = limits.min_count, max_count = limits.max_count;
  rc::Gen<Case> drawn = rc::gen::exec([=] {
    Case c;
    c.collective = *pick(collectives);
    c.nranks = *ranks;
    ByteEdge edge;
    c.count = count_for(c.nranks, chunk, edge_bytes, min_count, max_count, edge);
    c.dtype = *pick(dtypes);
    if (edge.bytes > 0) c.count = bytes_at_edge(edge, c.dtype, min_count, max_count);
    c.op = reduces(c.collective) ? *pick(ops) : RedOp::Sum;
    c.root = rooted(c.collective) ? *rc::gen::inRange(0, c.nranks) : 0;
    c.in_place = in_place && (!out_of_place || *kind({3, 1}) == 1);
    c.offset = *kind({3, 1}) == 1 ? *rc::gen::inRange<std::size_t>(1, 16) : 0;
    // Empty buffers as null pointers or valid ones, where a buffer is empty.
    c.empty_as_null = c.count == 0 && *kind({1, 1}) == 1;
    c.values = values[*kind(weights)];
    c.seed = *rc::gen::inRange<std::uint64_t>(0, 1000000);
    // Keep every buffer reasonable: all-gather, reduce-scatter and all-to-all hold nranks blocks.
    const std::size_t blocks =
        input_elements(c.collective, 1, c.nranks) + output_elements(c.collective, 1, c.nranks) - 1;
    if (blocks > 1) c.count = std::min(c.count, std::max(min_count, max_count / blocks));
    if (count_multiple > 1) c.count = multiple_within(c.count, count_multiple, min_count, max_count);
    // v-collectives: c.count so far is the typical count of one rank (or pair of ranks), from
    // which the counts are drawn; entries reach twice it, and they run out of place.
    if (per_rank_counts(c.collective)) {
      set_counts(c, counts_for(c.collective, c.nranks, (c.count + 1) / 2));
      c.in_place = false;
      c.empty_as_null = has_empty_buffer(c) && *kind({1, 1}) == 1;
    }
    return c;
  });
  if (!capabilities.precondition) return drawn;
  return rc::gen::suchThat(drawn,
                           [precondition = capabilities.precondition](const Case& c) { return precondition(c); });
}

}  // namespace collcheck
