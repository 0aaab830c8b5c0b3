// Input values as a pure function of (case, rank, index): the exact, real and special kinds
// described in inputs.h, all drawn from one splitmix64 stream per rank.
#include "reference/inputs.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "reference/counts.h"
#include "reference/dtype.h"
#include "reference/float_format.h"

namespace collcheck {
namespace {

// Salts that keep the streams of one seed apart.
constexpr std::uint64_t kRankSalt = 0x5eedc011c4ecull;
constexpr std::uint64_t kWindowSalt = 0x77a1d0e5ull;
constexpr std::uint64_t kScaleSalt = 0x5ca1eull;
constexpr std::uint64_t kEdgeSalt = 0xed6e5ull;
constexpr std::uint64_t kExactSalt = 0xe8ac7ull;

// Exact prod puts a factor of 2 or 1/2 on at most this many ranks per element.
constexpr int kProdScaledRanks = 4;

// Exact float sums draw k from their own 32-bit stream per rank where 32 bits are enough
// (every dtype but float64): a 32-bit Weyl sequence through a two-multiply integer hash
// ("lowbias32", Chris Wellons' hash-prospector), which vector units compute 8 or 16 lanes at a
// time, unlike mix64's 64-bit multiplies. Indices past 2^32 start a new sequence.
constexpr std::uint32_t kExactStride = 0x9e3779b9u;

constexpr std::uint32_t hash32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

// The hot loop of generating and checking exact sums: sums[i] += the top `bits` bits of the
// hash at position first + i of the sequence `key`. Written to vectorise, and compiled for
// AVX-512 and AVX2 too where GCC can, the processor choosing at run time (GCC vectorises it at
// -O2 only with its dynamic cost model). Not under the sanitizers: the clones' resolver runs while
// the program is being loaded, before a sanitizer's runtime is set up (ThreadSanitizer's crashed
// there, ending every test program of preset tsan before main).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), optimize("vect-cost-model=dynamic")))
#endif
void add_top_bits(std::uint32_t key, std::uint32_t first, int bits, std::span<std::uint32_t> sums) {
  const int shift = 32 - bits;
  std::uint32_t position = key + first * kExactStride;  // the Weyl sequence, stepped by adding
  for (std::size_t i = 0; i < sums.size(); ++i, position += kExactStride) sums[i] += hash32(position) >> shift;
}

std::uint64_t mask_of(DType dtype) {
  const std::size_t bits = size_of(dtype) * 8;
  return bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

std::vector<std::uint64_t> special_values(DType dtype) {
  std::vector<std::uint64_t> bits;
  if (!is_float(dtype)) {
    const std::uint64_t mask = mask_of(dtype);
    const std::uint64_t top = (mask >> 1) + 1;                      // the sign bit
    bits = {0, 1, mask};                                            // 0, 1, -1 (or the largest unsigned)
    if (is_signed(dtype)) bits.insert(bits.end(), {top, top - 1});  // smallest, largest
    return bits;
  }
  const FloatFormat& format = float_format(dtype);
  const double infinity = std::numeric_limits<double>::infinity();
  std::vector<double> values{std::numeric_limits<double>::quiet_NaN(),
                             -0.0,
                             0.0,
                             format.min_subnormal(),
                             format.min_normal() - format.min_subnormal(),
                             format.min_normal(),
                             format.max_finite(),
                             -format.max_finite()};
  if (format.has_infinity) values.insert(values.end(), {infinity, -infinity});
  for (double value : values) bits.push_back(encode(dtype, value));
  return bits;
}

// The elements either side of a cut at `start` (none at 0 or past the end).
void add_cut(std::vector<std::size_t>& edges, std::size_t elements, std::size_t start) {
  if (start == 0 || start >= elements) return;
  edges.push_back(start - 1);
  edges.push_back(start);
}

}  // namespace

std::vector<std::size_t> special_edges(const Case& c) {
  const std::size_t elements = input_elements(c);
  if (elements == 0) return {};
  std::vector<std::size_t> edges{0, elements - 1};
  const auto nranks = static_cast<std::size_t>(std::max(c.nranks, 1));
  const std::size_t base = elements / nranks, larger = elements % nranks;
  const std::size_t ceiling = (elements + nranks - 1) / nranks;
  for (std::size_t b = 1; b < nranks; ++b) {
    add_cut(edges, elements, b * base + std::min(b, larger));                                // larger first
    add_cut(edges, elements, b * base + (b > nranks - larger ? b - (nranks - larger) : 0));  // larger last
    add_cut(edges, elements, b * ceiling);
    if (elements == nranks * c.count) add_cut(edges, elements, b * c.count);
  }
  // v-collectives: every rank's own block boundaries (reducescatterv: where each rank's block
  // starts; alltoallv: where the blocks for each destination start, on every sender).
  if (c.collective == Collective::ReduceScatterV) {
    for (int rank = 1; rank < c.nranks; ++rank) add_cut(edges, elements, block_start(c, rank));
  }
  if (c.collective == Collective::AllToAllV) {
    for (int source = 0; source < c.nranks; ++source) {
      std::size_t start = 0;
      for (int destination = 0; destination + 1 < c.nranks; ++destination) {
        start += pair_count(c, source, destination);
        add_cut(edges, elements, start);
      }
    }
  }
  for (std::size_t power = 8; power < elements; power *= 2) add_cut(edges, elements, power);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  return edges;
}

void Inputs::fill(int rank, std::size_t first, std::span<std::byte> out) const {
  const DType dtype = which().dtype;
  for (std::size_t i = 0; i < out.size() / size_of(dtype); ++i) store_bits(dtype, out, i, bits(rank, first + i));
}

void Inputs::values(int rank, std::size_t first, std::span<double> out) const {
  const DType dtype = which().dtype;
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = decode(dtype, bits(rank, first + i));
}

InputTable::InputTable(const Case& c, std::vector<std::vector<std::uint64_t>> bits)
    : case_(c), bits_(std::move(bits)) {}

InputTable InputTable::from_values(const Case& c, const std::vector<std::vector<double>>& values) {
  std::vector<std::vector<std::uint64_t>> bits(values.size());
  for (std::size_t rank = 0; rank < values.size(); ++rank) {
    for (double value : values[rank]) bits[rank].push_back(encode(c.dtype, value));
  }
  return InputTable(c, std::move(bits));
}

std::uint64_t InputTable::bits(int rank, std::size_t index) const {
  return bits_.at(static_cast<std::size_t>(rank)).at(index);
}

InputGenerator::InputGenerator(const Case& c) : case_(c) {
  const std::uint64_t base = mix64(c.seed ^ kRankSalt);
  rank_keys_.resize(static_cast<std::size_t>(std::max(c.nranks, 1)));
  for (std::size_t rank = 0; rank < rank_keys_.size(); ++rank) rank_keys_[rank] = mix64(base + rank);
  window_key_ = mix64(c.seed ^ kWindowSalt);
  specials_ = special_values(c.dtype);

  const bool integer = !is_float(c.dtype);
  if (c.values == ValueKind::Special) {
    mode_ = Mode::Special;
    edges_ = special_edges(c);
    edge_key_ = mix64(c.seed ^ kEdgeSalt);
  } else if (integer) {
    mode_ = c.op == RedOp::Prod ? Mode::OddInteger : Mode::Integer;
  } else if (c.values == ValueKind::Real) {
    mode_ = Mode::Real;
  } else if (c.op == RedOp::Prod) {
    mode_ = Mode::ExactProd;
    contributors_ = std::min(c.nranks, kProdScaledRanks);
  } else {
    // contributors * magnitude <= 2^precision keeps every partial sum an exact integer.
    mode_ = Mode::ExactSum;
    const int precision = float_format(c.dtype).precision();
    contributors_ = static_cast<int>(std::min<std::int64_t>(c.nranks, std::int64_t{1} << (precision - 1)));
    magnitude_ = (std::int64_t{1} << precision) / contributors_;
    exact_bits_ = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(2 * magnitude_))) - 1;  // 2^bits <= 2M
    exact_half_ = std::int64_t{1} << (exact_bits_ - 1);
    scale_ = static_cast<int>(below(mix64(c.seed ^ kScaleSalt), 5)) - 2;  // -2..2: in range for fp8
    scale_factor_ = std::ldexp(1.0, scale_);
  }
}

bool InputGenerator::exact_contributor(int rank, std::size_t index) const {
  if (contributors_ >= case_.nranks) return true;
  // A window of `contributors_` consecutive ranks (cyclically), placed per element.
  const auto start = static_cast<int>(below(mix64(window_key_ + index), static_cast<std::uint64_t>(case_.nranks)));
  const int distance = rank >= start ? rank - start : rank - start + case_.nranks;
  return distance < contributors_;
}

std::uint32_t InputGenerator::exact_key(int rank, std::size_t index) const {
  return static_cast<std::uint32_t>(mix64((rank_keys_[static_cast<std::size_t>(rank)] ^ kExactSalt) + (index >> 32)));
}

std::int64_t InputGenerator::exact_integer(int rank, std::size_t index) const {
  if (!exact_contributor(rank, index)) return 0;
  if (exact_bits_ > 32) return static_cast<std::int64_t>(random(rank, index) >> (64 - exact_bits_)) - exact_half_;
  const std::uint32_t hash = hash32(exact_key(rank, index) + static_cast<std::uint32_t>(index) * kExactStride);
  return static_cast<std::int64_t>(hash >> (32 - exact_bits_)) - exact_half_;
}

double InputGenerator::raw_real(std::uint64_t r) const {
  // Built from the random bits directly: sign bit 63, 52 mantissa bits, and 3 (prod: 1)
  // bits that choose the binade, ±[2^-5, 8) (prod: ±[0.5, 2), so products wander slowly).
  constexpr std::uint64_t kSignAndMantissa = (std::uint64_t{1} << 63) | ((std::uint64_t{1} << 52) - 1);
  const std::uint64_t binade = case_.op == RedOp::Prod ? 1022 + ((r >> 52) & 1) : 1018 + ((r >> 52) & 7);
  return std::bit_cast<double>((r & kSignAndMantissa) | (binade << 52));
}

double InputGenerator::real_value(std::uint64_t r) const { return round_to(case_.dtype, raw_real(r)); }

std::uint64_t InputGenerator::bits(int rank, std::size_t index) const {
  const std::uint64_t r = random(rank, index);
  switch (mode_) {
    case Mode::Integer: return r & mask_of(case_.dtype);
    case Mode::OddInteger: return (r | 1) & mask_of(case_.dtype);
    case Mode::ExactSum: return encode(case_.dtype, static_cast<double>(exact_integer(rank, index)) * scale_factor_);
    case Mode::ExactProd: return encode(case_.dtype, exact_factor(rank, index, r));
    case Mode::Real: return encode(case_.dtype, raw_real(r));  // rounded once: real_value's bits
    case Mode::Special: return special_bits(rank, index, r, std::binary_search(edges_.begin(), edges_.end(), index));
  }
  return 0;
}

// An exact product's factor: +-1, or on a contributing rank +-1/2, +-1 or +-2.
double InputGenerator::exact_factor(int rank, std::size_t index, std::uint64_t r) const {
  static constexpr double kPowers[3] = {0.5, 1.0, 2.0};
  const double magnitude = exact_contributor(rank, index) ? kPowers[below(r, 3)] : 1.0;
  return (r >> 63) != 0 ? -magnitude : magnitude;
}

// One element in eight is special, the others real (or full-range integers); at an edge, one
// rank's element is special (NaN half the time) and every other rank's is not.
std::uint64_t InputGenerator::special_bits(int rank, std::size_t index, std::uint64_t r, bool at_edge) const {
  bool special = (r >> 61) == 0;
  if (at_edge) {
    const std::uint64_t edge = mix64(edge_key_ + index);
    special = below(edge, static_cast<std::uint64_t>(case_.nranks)) == static_cast<std::uint64_t>(rank);
    if (special && is_float(case_.dtype) && (mix64(edge) & 1) != 0) return specials_.front();  // NaN
  }
  if (special) return specials_[below(mix64(r), specials_.size())];
  return is_float(case_.dtype) ? encode(case_.dtype, raw_real(r)) : r & mask_of(case_.dtype);
}

double InputGenerator::value(int rank, std::size_t index) const {
  switch (mode_) {
    case Mode::ExactSum: return static_cast<double>(exact_integer(rank, index)) * scale_factor_;
    case Mode::Real: return real_value(random(rank, index));
    default: return decode(case_.dtype, bits(rank, index));
  }
}

void InputGenerator::add_exact_offsets(int rank, std::size_t first, std::span<std::uint32_t> sums) const {
  // One call per stretch of indices that shares its key (every 2^32 indices).
  for (std::size_t done = 0; done < sums.size();) {
    const std::size_t index = first + done;
    const std::size_t stretch = std::min(sums.size() - done, (std::size_t{1} << 32) - (index & 0xffffffffu));
    const std::span<std::uint32_t> part = sums.subspan(done, stretch);
    const auto low = static_cast<std::uint32_t>(index);
    if (rank >= 0) add_top_bits(exact_key(rank, index), low, exact_bits_, part);
    for (int each = 0; rank < 0 && each < case_.nranks; ++each)
      add_top_bits(exact_key(each, index), low, exact_bits_, part);
    done += stretch;
  }
}

// Blocks of the batch paths below: small enough for the cache, large enough for tight loops.
constexpr std::size_t kBatch = 4096;

bool Inputs::exact_sums(std::size_t, std::span<std::byte>) const { return false; }

bool InputGenerator::exact_sums(std::size_t first, std::span<std::byte> out) const {
  // Every rank's offsets together stay below 2 * 2^precision: 32 bits up to float32's precision.
  if (!every_rank_contributes() || float_format(case_.dtype).precision() > 24) return false;
  const std::size_t size = size_of(case_.dtype);
  const std::size_t count = out.size() / size;
  const auto bias = static_cast<std::int64_t>(exact_half_) * case_.nranks;
  std::uint32_t sums[kBatch];
  float narrowed[kBatch];
  for (std::size_t done = 0; done < count; done += kBatch) {
    const std::size_t length = std::min(kBatch, count - done);
    std::fill_n(sums, length, 0u);
    add_exact_offsets(-1, first + done, {sums, length});
    std::byte* to = out.data() + done * size;
    if (case_.dtype == DType::Float32) {  // exact in float: at most 2^24 in magnitude, times 2^scale
      const auto scale = static_cast<float>(scale_factor_);
      for (std::size_t i = 0; i < length; ++i) {
        narrowed[i] = static_cast<float>(static_cast<std::int64_t>(sums[i]) - bias) * scale;
      }
      std::memcpy(to, narrowed, length * size);
      continue;
    }
    for (std::size_t i = 0; i < length; ++i) {
      const std::uint64_t bits =
          encode(case_.dtype, static_cast<double>(static_cast<std::int64_t>(sums[i]) - bias) * scale_factor_);
      std::memcpy(to + i * size, &bits, size);  // little-endian: the low bytes
    }
  }
  return true;
}

void InputGenerator::values(int rank, std::size_t first, std::span<double> out) const {
  switch (mode_) {
    case Mode::ExactSum:
    case Mode::ExactProd: unrounded_values(rank, first, out); return;  // exact in the dtype: not rounded
    case Mode::Real:
      if (case_.dtype == DType::Float32) {  // the hot case, with its rounding inlined
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(raw_real(random(rank, first + i)));
        return;
      }
      if (values_kept(rank, first, out)) return;  // a narrow float's rounding costs more than decoding
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = real_value(random(rank, first + i));
      return;
    default:
      if (values_kept(rank, first, out)) return;
      Inputs::values(rank, first, out);
      return;
  }
}

// The float modes' values of elements [first, first + out.size()) as doubles that encode to their
// bits(): exact sums and products themselves, real values before they are rounded to the dtype.
void InputGenerator::unrounded_values(int rank, std::size_t first, std::span<double> out) const {
  switch (mode_) {
    case Mode::ExactSum: exact_values(rank, first, out); return;
    case Mode::ExactProd:
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = exact_factor(rank, first + i, random(rank, first + i));
      return;
    case Mode::Real:
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = raw_real(random(rank, first + i));
      return;
    default: return;  // not a float mode
  }
}

// Exact sums' values a batch at a time: the offsets of a batch made together (add_exact_offsets),
// those of ranks outside an element's window of contributors zero.
void InputGenerator::exact_values(int rank, std::size_t first, std::span<double> out) const {
  if (exact_bits_ > 32) {  // float64: 64-bit offsets, one at a time
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = static_cast<double>(exact_integer(rank, first + i)) * scale_factor_;
    }
    return;
  }
  std::uint32_t offsets[kBatch];
  const bool everyone = every_rank_contributes();
  for (std::size_t done = 0; done < out.size(); done += kBatch) {
    const std::size_t length = std::min(kBatch, out.size() - done);
    std::fill_n(offsets, length, 0u);
    add_exact_offsets(rank, first + done, {offsets, length});
    for (std::size_t i = 0; i < length; ++i) {
      const bool contributes = everyone || exact_contributor(rank, first + done + i);
      const std::int64_t offset = static_cast<std::int64_t>(offsets[i]) - exact_half_;
      out[done + i] = contributes ? static_cast<double>(offset) * scale_factor_ : 0.0;
    }
  }
}

std::span<const std::byte> InputGenerator::kept_part(int rank, std::size_t first, std::size_t count) const {
  const InputMemo* memo = InputMemo::current();
  if (memo == nullptr || count == 0) return {};
  const std::size_t size = size_of(case_.dtype);
  const std::span<const std::byte> kept = memo->find(case_, rank);
  if ((first + count) * size > kept.size()) return {};
  return kept.subspan(first * size, count * size);
}

// values() decoded from the kept input: decode(bits()) of each element, which is what a real value
// rounded to the dtype and every other mode's value are.
bool InputGenerator::values_kept(int rank, std::size_t first, std::span<double> out) const {
  const std::span<const std::byte> part = kept_part(rank, first, out.size());
  if (part.empty()) return false;
  decode_all(case_.dtype, part, out);
  return true;
}

void InputGenerator::fill(int rank, std::size_t first, std::span<std::byte> out) const {
  const std::size_t size = size_of(case_.dtype);
  if (const std::span<const std::byte> part = kept_part(rank, first, out.size() / size); !part.empty()) {
    std::memcpy(out.data(), part.data(), part.size());
    return;
  }
  generate(rank, first, out);
  InputMemo* memo = InputMemo::current();
  if (memo != nullptr && first == 0 && out.size() == input_elements(case_, rank) * size) memo->keep(case_, rank, out);
}

void InputGenerator::generate(int rank, std::size_t first, std::span<std::byte> out) const {
  const std::size_t size = size_of(case_.dtype);
  const std::size_t count = out.size() / size;
  if (every_rank_contributes() && case_.dtype == DType::Float32 && mode_ == Mode::ExactSum && exact_bits_ <= 24) {
    // The hottest case, written as floats straight from the offsets: an offset of at most 24
    // bits is exact in a float, and the scale is a power of two.
    std::uint32_t offsets[kBatch];
    float narrowed[kBatch];
    const auto scale = static_cast<float>(scale_factor_);
    const auto half = static_cast<std::int32_t>(exact_half_);
    for (std::size_t done = 0; done < count; done += kBatch) {
      const std::size_t length = std::min(kBatch, count - done);
      std::fill_n(offsets, length, 0u);
      add_exact_offsets(rank, first + done, {offsets, length});
      for (std::size_t i = 0; i < length; ++i) {
        narrowed[i] = static_cast<float>(static_cast<std::int32_t>(offsets[i]) - half) * scale;
      }
      std::memcpy(out.data() + done * size, narrowed, length * size);
    }
    return;
  }
  if (is_float(case_.dtype) && mode_ != Mode::Special) {  // the float modes: values, encoded a batch at a time
    double values[kBatch];
    for (std::size_t done = 0; done < count; done += kBatch) {
      const std::size_t length = std::min(kBatch, count - done);
      unrounded_values(rank, first + done, {values, length});
      encode_all(case_.dtype, {values, length}, out.subspan(done * size, length * size));
    }
    return;
  }
  std::uint64_t made[kBatch];
  for (std::size_t done = 0; done < count; done += kBatch) {
    const std::size_t length = std::min(kBatch, count - done);
    bits_batch(rank, first + done, {made, length});
    store_all_bits(case_.dtype, {made, length}, out.subspan(done * size, length * size));
  }
}

// bits() of elements [first, first + out.size()) for the modes made as bits (integers, specials),
// in one loop per mode: the edges of specials found by walking them along, not searched per element.
void InputGenerator::bits_batch(int rank, std::size_t first, std::span<std::uint64_t> out) const {
  if (mode_ == Mode::Special) {
    auto edge = std::lower_bound(edges_.begin(), edges_.end(), first);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const std::size_t index = first + i;
      const bool at_edge = edge != edges_.end() && *edge == index;
      if (at_edge) ++edge;
      out[i] = special_bits(rank, index, random(rank, index), at_edge);
    }
    return;
  }
  const std::uint64_t mask = mask_of(case_.dtype);
  const std::uint64_t odd = mode_ == Mode::OddInteger ? 1 : 0;
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = (random(rank, first + i) | odd) & mask;
}

std::uint64_t input(const Case& c, int rank, std::size_t index) { return InputGenerator(c).bits(rank, index); }

std::uint64_t input_bytes(const Case& c) {
  std::uint64_t elements = 0;
  if (per_rank_counts(c.collective)) {
    for (std::size_t inputs : rank_elements(c).inputs) elements += inputs;
  } else {
    elements = input_elements(c) * static_cast<std::uint64_t>(std::max(c.nranks, 0));
  }
  return elements * size_of(c.dtype);
}

}  // namespace collcheck
