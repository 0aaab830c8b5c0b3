// How a symmetric schedule's offsets, contributions and messages turn from rank 0 to rank r
// (symmetry.h: Turning, Symmetry), by rotation or by XOR; finding and checking the symmetry is
// symmetry.cc's. By XOR a run of ranks is cut into dyadic pieces (2^k ranks from a multiple of
// 2^k), each of which XOR turns into another such piece, and joined again where the pieces meet;
// a range of 2^k whole blocks turns with its blocks XOR'd among themselves.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "impls/prove/provenance.h"
#include "impls/prove/symmetry.h"

namespace collcheck::provenance {

std::uint64_t Turning::offset(std::uint64_t offset, std::uint32_t by, std::uint32_t nranks) const {
  if (part == 0) return offset;
  const std::uint64_t base = offset / part * part, within = offset % part;
  return base + turned_rank(turn, static_cast<std::uint32_t>(within / block), by, nranks) * block + within % block;
}

std::uint64_t Turning::stretch(std::uint64_t offset) const {
  if (part == 0) return std::numeric_limits<std::uint64_t>::max();
  return block - offset % part % block;
}

std::optional<Range> Turning::range(const Range& range, std::uint32_t by, std::uint32_t nranks) const {
  Range turned = range;
  if (part == 0 || range.count == 0) return turned;  // an empty range's offset is never used
  const std::uint64_t within = range.offset % part;
  const std::uint64_t first = within / block;
  if (first == (within + range.count - 1) / block) {
    turned.offset = offset(range.offset, by, nranks);
    return turned;
  }
  const std::uint64_t blocks = range.count / block;
  const bool aligned = turn == Turn::Xor && within % block == 0 && range.count % block == 0 && blocks <= nranks &&
                       (blocks & (blocks - 1)) == 0 && first % blocks == 0;
  if (!aligned) return std::nullopt;
  turned.offset = range.offset - within + ((first ^ by) & ~(blocks - 1)) * block;
  return turned;
}

std::uint64_t Turning::source_of(std::uint64_t j, const Range& range, std::uint32_t by) const {
  if (turn != Turn::Xor || part == 0 || range.count <= block) return j;  // inside one block: in order
  const std::uint64_t blocks = range.count / block;
  return ((j / block) ^ (by & (blocks - 1))) * block + j % block;
}

namespace {

// The dyadic pieces of [low, high): aligned intervals of 2^k, each starting at a multiple of its
// length, as recursive doubling's groups are (at most 2 log2 of the length of them).
template <typename Visit>
void dyadic_pieces(std::uint64_t low, std::uint64_t high, Visit&& visit) {
  while (low < high) {
    std::uint64_t length = low == 0 ? std::uint64_t{1} << 63 : low & (~low + 1);  // the largest aligned at low
    while (low + length > high) length /= 2;
    visit(low, length);
    low += length;
  }
}

// A run of several ranks XOR `by` (n a power of two): with a stride of a power of two s, its ranks
// share their bits below s and hold consecutive places above (modulo n/s); the places split into
// dyadic pieces, each of which XOR turns into another such piece, and the pieces join again.
// Another stride (two single ranks joined end to end) goes rank by rank.
void xor_runs(const Run& run, std::uint64_t index, std::uint32_t by, std::uint32_t nranks, std::vector<Run>& into) {
  const auto stride = static_cast<std::uint32_t>(run.stride);
  std::vector<Piece> pieces;
  const auto merge_into = [&](const Places& places) {
    const std::vector<Run> runs = merge_pieces(pieces, places, nranks).runs;  // XOR'd pieces never overlap
    into.insert(into.end(), runs.begin(), runs.end());
  };
  if ((stride & (stride - 1)) != 0) {
    for (std::uint64_t k = 0; k < run.count; ++k) {
      const std::uint32_t rank = run.rank(k, nranks) ^ by;
      pieces.push_back(Piece{index, rank, std::uint64_t{rank} + 1});
    }
    return merge_into(Places{1, 0, nranks});
  }
  const std::uint64_t nplaces = nranks / stride;
  const std::uint64_t high = by / stride, start = run.first / stride, end = start + run.count;
  const auto turn_piece = [&](std::uint64_t begin, std::uint64_t length) {
    const std::uint64_t first = (begin ^ high) & ~(length - 1);
    pieces.push_back(Piece{index, first, first + length});
  };
  dyadic_pieces(start, std::min(end, nplaces), turn_piece);
  if (end > nplaces) dyadic_pieces(0, end - nplaces, turn_piece);
  merge_into(Places{stride, (run.first ^ by) & (stride - 1), nplaces});
}

}  // namespace

void Symmetry::contributions(const Run& run, std::uint32_t by, std::uint32_t nranks, std::vector<Run>& into) const {
  if (stays_one_run(run)) return into.push_back(turned_run(run, by, nranks));
  xor_runs(run, of(BufferKind::Input).offset(run.index, by, nranks), by, nranks, into);
}

bool Symmetry::turns_into(const Run& run, const Run& want, std::uint32_t by, std::uint32_t nranks) const {
  if (stays_one_run(run)) return turned_run(run, by, nranks) == want;
  std::vector<Run> turned;
  contributions(run, by, nranks, turned);
  return turned.size() == 1 && turned[0] == want;
}

void Symmetry::turn_element(Element& element, std::uint32_t by, std::uint32_t nranks) const {
  const std::span<const Run> runs = element.runs();
  if (runs.empty()) return;
  if (runs.size() == 1 && stays_one_run(runs[0])) return element.assign_single(turned_run(runs[0], by, nranks));
  std::vector<Run> turned;
  turned.reserve(runs.size());
  for (const Run& run : runs) contributions(run, by, nranks, turned);
  // By XOR the pieces of different runs may meet: joined again as a union joins them.
  if (turn == Turn::Xor && turned.size() > 1) turned = combine(turned, {}, nranks).runs;
  element.assign(std::move(turned));
}

void Symmetry::turn_message(std::vector<Element>& message, const Range& from, std::uint32_t by,
                            std::uint32_t nranks) const {
  const Turning turning = of(from.buffer);
  if (turning.part != 0 && from.count > turning.block) {
    // By XOR the blocks change places by a mask, pairwise (each order is its own inverse); by
    // rotation, and inside one block, none moves.
    const std::uint64_t block = turning.block;
    for (std::uint64_t b = 0; b * block < message.size(); ++b) {
      const std::uint64_t other = turning.source_of(b * block, from, by) / block;
      if (other <= b) continue;
      const auto at = [&](std::uint64_t k) { return message.begin() + static_cast<std::ptrdiff_t>(k * block); };
      std::swap_ranges(at(b), at(b + 1), at(other));
    }
  }
  for (Element& element : message) turn_element(element, by, nranks);
}

}  // namespace collcheck::provenance
