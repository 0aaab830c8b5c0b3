// The provenance sets' text form and their union, runs taken modulo the rank count
// (provenance.h). A union splits every run that wraps round rank n-1 into its two straight
// pieces (a run with a stride into its single ranks), merges the pieces in order (two pieces of one index that overlap
// are a contribution combined twice: exact, since no run holds more than n ranks), and joins again the pieces that end
// at rank n-1 and start at rank 0.
#include "impls/prove/provenance.h"

#include <algorithm>
#include <tuple>

namespace collcheck::provenance {

std::string show(std::span<const Run> runs, std::uint32_t nranks) {
  if (runs.empty()) return "{}";
  std::string out = "{";
  for (const Run& run : runs) {
    if (out.size() > 1) out += ", ";
    const std::uint32_t last = run.rank(run.count - 1, nranks);
    out += "index " + std::to_string(run.index) + ": rank" + (run.count > 1 ? "s " : " ") + std::to_string(run.first) +
           (run.count > 1 ? ".." + std::to_string(last) : "") +
           (run.stride > 1 ? " every " + std::to_string(run.stride) : "");
  }
  return out + "}";
}

namespace {

// `x` then `y` going on with x's stride (a single rank takes the other's, two single ranks the
// stride from x to y), where the whole still holds no rank twice.
std::optional<Run> end_to_end(const Run& x, const Run& y, std::uint32_t nranks) {
  std::uint64_t stride = x.stride;
  if (x.count == 1) stride = y.count > 1 ? y.stride : (std::uint64_t{y.first} + nranks - x.first) % nranks;
  if (stride == 0 || (y.count > 1 && y.stride != stride)) return std::nullopt;
  const std::uint64_t count = std::uint64_t{x.count} + y.count;
  if (count * stride > nranks || (x.first + x.count * stride) % nranks != y.first) return std::nullopt;
  return make_run(x.index, x.first, static_cast<std::uint32_t>(count), nranks, static_cast<std::uint32_t>(stride));
}

// `x` and `y` of one count and stride s, y starting s/2 after x: the run of stride s/2.
std::optional<Run> interleaved(const Run& x, const Run& y, std::uint32_t nranks) {
  if (x.count != y.count || x.stride != y.stride || x.stride % 2 != 0) return std::nullopt;
  if ((std::uint64_t{x.first} + x.stride / 2) % nranks != y.first) return std::nullopt;
  return make_run(x.index, x.first, 2 * x.count, nranks, static_cast<std::uint32_t>(x.stride / 2));
}

}  // namespace

std::optional<Run> join(const Run& a, const Run& b, std::uint32_t nranks) {
  if (a.index != b.index || std::uint64_t{a.count} + b.count > nranks) return std::nullopt;  // overlap: combine()
  for (const auto& [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    if (std::optional<Run> joined = end_to_end(*x, *y, nranks)) return joined;
    if (std::optional<Run> joined = interleaved(*x, *y, nranks)) return joined;
  }
  return std::nullopt;
}

namespace {

// A run as straight pieces [first, end) of ranks that do not wrap.
void add_pieces(std::span<const Run> runs, std::uint32_t nranks, std::vector<Piece>& pieces) {
  for (const Run& run : runs) {
    if (run.stride > 1) {
      for (std::uint64_t k = 0; k < run.count; ++k) {
        const std::uint32_t rank = run.rank(k, nranks);
        pieces.push_back(Piece{run.index, rank, std::uint64_t{rank} + 1});
      }
      continue;
    }
    const std::uint64_t end = std::uint64_t{run.first} + run.count;
    pieces.push_back(Piece{run.index, run.first, std::min<std::uint64_t>(end, nranks)});
    if (end > nranks) pieces.push_back(Piece{run.index, 0, end - nranks});
  }
}

}  // namespace

Union merge_pieces(std::vector<Piece>& pieces, const Places& places, std::uint32_t nranks) {
  std::sort(pieces.begin(), pieces.end(),
            [](const Piece& x, const Piece& y) { return std::tie(x.index, x.first) < std::tie(y.index, y.first); });
  const auto rank_of = [&](std::uint64_t place) {
    return static_cast<std::uint32_t>(place * places.stride + places.low_bits);
  };
  std::vector<Piece> merged;
  Union u;
  for (const Piece& next : pieces) {
    if (!merged.empty() && merged.back().index == next.index && next.first <= merged.back().end) {
      Piece& last = merged.back();
      if (next.first < last.end) {
        u.shared =
            make_run(next.index, rank_of(next.first),
                     static_cast<std::uint32_t>(std::min(last.end, next.end) - next.first), nranks, places.stride);
        return u;
      }
      last.end = next.end;
      continue;
    }
    merged.push_back(next);
  }
  // Join each index's piece ending at the last place with its piece starting at place 0.
  u.runs.reserve(merged.size());
  for (std::size_t begin = 0; begin < merged.size();) {
    std::size_t end = begin;
    while (end < merged.size() && merged[end].index == merged[begin].index) ++end;
    const bool wraps = end - begin > 1 && merged[begin].first == 0 && merged[end - 1].end == places.count;
    for (std::size_t i = begin + (wraps ? 1 : 0); i < end; ++i) {
      const Piece& piece = merged[i];
      const std::uint64_t extra = wraps && i == end - 1 ? merged[begin].end : 0;
      u.runs.push_back(make_run(piece.index, rank_of(piece.first),
                                static_cast<std::uint32_t>(piece.end - piece.first + extra), nranks, places.stride));
    }
    begin = end;
  }
  return u;
}

Union combine(std::span<const Run> a, std::span<const Run> b, std::uint32_t nranks) {
  std::vector<Piece> pieces;
  pieces.reserve(2 * (a.size() + b.size()));
  add_pieces(a, nranks, pieces);
  add_pieces(b, nranks, pieces);
  return merge_pieces(pieces, Places{1, 0, nranks}, nranks);
}

std::optional<CombinedTwice> combine_all(std::vector<Element>& a, const std::vector<Element>& b, std::uint32_t nranks) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].runs().size() == 1 && b[i].runs().size() == 1) {
      if (const std::optional<Run> joined = join(a[i].runs()[0], b[i].runs()[0], nranks)) {
        a[i].assign_single(*joined);
        continue;
      }
    }
    Union u = combine(a[i].runs(), b[i].runs(), nranks);
    if (u.shared) return CombinedTwice{i, *u.shared};
    a[i].assign(std::move(u.runs));
  }
  return std::nullopt;
}

}  // namespace collcheck::provenance
