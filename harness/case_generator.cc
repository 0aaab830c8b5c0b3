// The Case generator: each field from a list ordered simplest first (RapidCheck's element()
// shrinks toward the front), counts from shapes relative to the rank count.
#include "harness/case_generator.h"

#include <algorithm>

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

std::vector<int> rank_counts(int low, int high) {
  const std::vector<int> interesting{1, 2, 3, 4, 5, 7, 8, 9, 11, 13, 15, 16, 17, 31, 32, 33, 63, 64};
  std::vector<int> counts;
  for (int n : interesting) {
    if (n >= low && n <= high) counts.push_back(n);
  }
  if (counts.empty()) counts.push_back(low);
  return counts;
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

// Counts relative to n, simplest kinds first: 0, 1, below n, n-1..n+1, k*n + k%n (a remainder
// unless k is a multiple of n), anything in the range, and — for a backend with a pipeline
// chunk — one off either side of a multiple of the chunk.
std::size_t count_for(int nranks, std::size_t chunk, std::size_t low, std::size_t high) {
  const auto n = static_cast<std::size_t>(nranks);
  std::size_t count = 0;
  switch (*kind({2, 2, 3, 3, 4, 2, chunk > 0 ? std::size_t{4} : std::size_t{0}})) {
    case 0: count = 0; break;
    case 1: count = 1; break;
    case 2: count = *rc::gen::inRange<std::size_t>(0, std::max<std::size_t>(n, 1)); break;
    case 3: count = n - 1 + *rc::gen::inRange<std::size_t>(0, 3); break;
    case 4: {
      const std::size_t k = *rc::gen::inRange<std::size_t>(1, 64);
      count = k * n + k % n;
      break;
    }
    case 5: count = *rc::gen::inRange<std::size_t>(low, high + 1); break;
    default:
      count = *rc::gen::inRange<std::size_t>(1, 4 * n + 1) * chunk + *rc::gen::inRange<std::size_t>(0, 3) - 1;
      break;
  }
  return std::clamp(count, low, high);
}

// Whether the backend's precondition admits some rank count in the range (tried on an
// otherwise plain case of its first collective).
bool precondition_possible(const Capabilities& capabilities, const CaseLimits& limits) {
  if (!capabilities.precondition || capabilities.collectives.empty()) return true;
  Case c;
  c.collective = capabilities.collectives.front();
  for (int n : rank_counts(std::max(limits.min_ranks, capabilities.min_ranks),
                           std::min(limits.max_ranks, capabilities.max_ranks))) {
    c.nranks = n;
    if (capabilities.precondition(c)) return true;
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
  const std::vector<int> ranks = rank_counts(std::max(limits.min_ranks, capabilities.min_ranks),
                                             std::min(limits.max_ranks, capabilities.max_ranks));
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
  const std::size_t chunk = capabilities.chunk;
  const std::size_t min_count = limits.min_count, max_count = limits.max_count;
  rc::Gen<Case> drawn = rc::gen::exec([=] {
    Case c;
    c.collective = *pick(collectives);
    c.nranks = *pick(ranks);
    c.count = count_for(c.nranks, chunk, min_count, max_count);
    c.dtype = *pick(dtypes);
    c.op = reduces(c.collective) ? *pick(ops) : RedOp::Sum;
    c.root = rooted(c.collective) ? *rc::gen::inRange(0, c.nranks) : 0;
    c.in_place = in_place && *kind({3, 1}) == 1;
    c.offset = *kind({3, 1}) == 1 ? *rc::gen::inRange<std::size_t>(1, 16) : 0;
    c.values = values[*kind(weights)];
    c.seed = *rc::gen::inRange<std::uint64_t>(0, 1000000);
    // Keep every buffer reasonable: all-gather, reduce-scatter and all-to-all hold nranks blocks.
    const std::size_t blocks =
        input_elements(c.collective, 1, c.nranks) + output_elements(c.collective, 1, c.nranks) - 1;
    if (blocks > 1) c.count = std::min(c.count, std::max(min_count, max_count / blocks));
    return c;
  });
  if (!capabilities.precondition) return drawn;
  return rc::gen::suchThat(drawn,
                           [precondition = capabilities.precondition](const Case& c) { return precondition(c); });
}

}  // namespace collcheck
