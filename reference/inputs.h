// Rank r's input element i is a pure function of the case and (r, i), so any rank can
// compute any rank's input, and so the expected output, without talking to the others.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "reference/case.h"
#include "reference/random.h"

namespace collcheck {

// The step between one index and the next in a rank's stream of random inputs (a Weyl sequence
// fed to mix64).
constexpr std::uint64_t kIndexStride = 0xd1b54a32d192ed03ull;

// Where the oracle reads every rank's input from: the generator below, or a table of given
// values (hand-written tests, inputs captured from a run).
class Inputs {
 public:
  virtual ~Inputs() = default;
  virtual const Case& which() const = 0;
  // The element's bits, little-endian in the low size_of(dtype) bytes.
  virtual std::uint64_t bits(int rank, std::size_t index) const = 0;
  // The elements [first, first + out.size()) of rank's input as doubles (exact for every
  // float dtype, and for integers that fit).
  virtual void values(int rank, std::size_t first, std::span<double> out) const;
  // Writes elements [first, first + out.size() / size_of(dtype)) of rank's input, packed: each
  // element's bits() in its low bytes (little-endian).
  virtual void fill(int rank, std::size_t first, std::span<std::byte> out) const;
  // The sum over every rank of elements [first, first + out.size() / size_of(dtype)), packed as
  // the dtype's elements, where the inputs know it to be exact in every order (exact float
  // sums, computed in batches without the general path); false where they cannot say.
  virtual bool exact_sums(std::size_t first, std::span<std::byte> out) const;
};

// Given inputs: bits[rank][index]. With values=exact the caller promises what the exact
// kind promises (see InputGenerator): the oracle then checks bit for bit.
class InputTable final : public Inputs {
 public:
  InputTable(const Case&, std::vector<std::vector<std::uint64_t>> bits);
  // The same from doubles, each rounded to the dtype (integers must fit).
  static InputTable from_values(const Case&, const std::vector<std::vector<double>>& values);

  const Case& which() const override { return case_; }
  std::uint64_t bits(int rank, std::size_t index) const override;

 private:
  Case case_;
  std::vector<std::vector<std::uint64_t>> bits_;
};

// Everything about one case's inputs that does not depend on (rank, index), computed once.
//
// Exact values (see docs/oracle.md):
//   integers, any op but prod: uniform over the whole type (sums wrap around);
//   integers, prod: odd values over the whole type (a product of odd numbers is never
//     zero, and any missing or doubled factor other than 1 changes it);
//   floats, sum and avg: k * 2^scale with |k| <= magnitude, where at most `contributors`
//     ranks per element are nonzero and contributors * magnitude <= 2^precision, so every
//     partial sum in every order is an exactly representable integer times 2^scale;
//   floats, prod: ±1, and ±2 or ±1/2 on at most four ranks per element (a power of two);
//   floats, min and max: as for sum.
// Real values: ±(0.5 .. 1) * 2^e with e uniform in -4..3, so ±[2^-5, 8) (for prod:
// ±[0.5, 2)), rounded to the dtype. Special values: real values with one element in eight, per rank, replaced
// by NaN, ±inf, -0, +0, the smallest and largest subnormal, the smallest normal or ±the
// largest finite value (integers: 0, ±1, the smallest and largest value); and at every edge
// (special_edges()) exactly one rank, drawn per element, holds a special value, NaN half the
// time, the others real ones, so that a bug needing one NaN at a block's edge shows on a small case.
class InputGenerator final : public Inputs {
 public:
  explicit InputGenerator(const Case&);

  const Case& which() const override { return case_; }
  std::uint64_t bits(int rank, std::size_t index) const override;
  void values(int rank, std::size_t first, std::span<double> out) const override;
  bool exact_sums(std::size_t first, std::span<std::byte> out) const override;
  // The element as a double (exact for every float dtype, for integers when they fit).
  double value(int rank, std::size_t index) const;
  // For exact floats: the element is exact_integer(rank, index) * 2^scale().
  std::int64_t exact_integer(int rank, std::size_t index) const;
  int scale() const { return scale_; }

  // A batch at a time; from this thread's InputMemo where it keeps the rank's input.
  void fill(int rank, std::size_t first, std::span<std::byte> out) const override;

 private:
  enum class Mode { Integer, OddInteger, ExactSum, ExactProd, Real, Special };

  std::uint64_t random(int rank, std::size_t index) const {
    return mix64(rank_keys_[static_cast<std::size_t>(rank)] + index * kIndexStride);
  }
  bool exact_contributor(int rank, std::size_t index) const;
  // Exact floats with every rank contributing: the offsets k + exact_half_ of elements
  // [first, first + sums.size()), added to sums, for `rank`, or for every rank (-1).
  bool every_rank_contributes() const { return mode_ == Mode::ExactSum && contributors_ >= case_.nranks; }
  void add_exact_offsets(int rank, std::size_t first, std::span<std::uint32_t> sums) const;
  // The key of rank's 32-bit stream of exact values for the 2^32 indices around `index`.
  std::uint32_t exact_key(int rank, std::size_t index) const;
  // A special input's bits; `at_edge`: the index is one of special_edges().
  std::uint64_t special_bits(int rank, std::size_t index, std::uint64_t random, bool at_edge) const;
  double exact_factor(int rank, std::size_t index, std::uint64_t random) const;     // ExactProd's value
  void unrounded_values(int rank, std::size_t first, std::span<double> out) const;  // the float modes'
  void exact_values(int rank, std::size_t first, std::span<double> out) const;      // ExactSum's
  void generate(int rank, std::size_t first, std::span<std::byte> out) const;       // fill, made here
  // The bytes of elements [first, first + count) of rank's input where this thread's InputMemo
  // keeps it; empty otherwise.
  std::span<const std::byte> kept_part(int rank, std::size_t first, std::size_t count) const;
  bool values_kept(int rank, std::size_t first, std::span<double> out) const;  // values() from kept_part
  // bits() of elements [first, first + out.size()), at most a batch (inputs.cc's kBatch) of them,
  // for the modes made as bits (integers, specials).
  void bits_batch(int rank, std::size_t first, std::span<std::uint64_t> out) const;
  double raw_real(std::uint64_t random) const;  // before rounding to the dtype
  double real_value(std::uint64_t random) const;

  Case case_;
  Mode mode_ = Mode::Integer;
  std::vector<std::uint64_t> rank_keys_;  // one random stream per rank
  std::uint64_t window_key_ = 0;          // exact floats: which ranks are nonzero per element
  int scale_ = 0;
  double scale_factor_ = 1;              // 2^scale_
  std::int64_t magnitude_ = 1;           // exact floats: |k| <= magnitude
  int exact_bits_ = 1;                   // exact floats: k is `exact_bits_` random bits less exact_half_
  std::int64_t exact_half_ = 1;          // 2^(exact_bits_ - 1) <= magnitude
  int contributors_ = 1;                 // exact floats: nonzero ranks per element
  std::vector<std::uint64_t> specials_;  // special values of the dtype, as bits
  std::vector<std::size_t> edges_;       // special values: special_edges(case_), sorted
  std::uint64_t edge_key_ = 0;           // special values: which rank holds an edge's special
};

// Generated inputs kept while one case is checked. Checking a case makes the same inputs again
// and again: every run of it (the first, a property's second under another interleaving, the
// in-place one, the repeat's calls, each call's inputs) and the oracle's copies of them. The memo
// works as follows. While one is in use on a thread (InputMemo::Use), InputGenerator::fill on
// that thread keeps every whole rank input it makes, up to the memo's capacity in bytes, letting
// the oldest case's go first, and serves any part of one it keeps by a copy. Inputs are a pure
// function of the case's collective, dtype, op, count(s), ranks, value kind and seed, not of its
// root, layout, offset or null buffers (same_inputs): a kept rank input serves every case that
// agrees on those. A memo is not shared between threads.
//
// What else a backend makes once for all of a case's runs (a `@sim` backend's schedules) it may
// keep in the memo too, under a key of its own (`kept_for_case`): it lives as long as the memo,
// the checked case, and goes with it.
class InputMemo {
 public:
  explicit InputMemo(std::uint64_t capacity) : capacity_(capacity) {}
  InputMemo(const InputMemo&) = delete;
  InputMemo& operator=(const InputMemo&) = delete;

  // Makes `memo` the one in use on this thread for the Use's life (the one before comes back after).
  class Use {
   public:
    explicit Use(InputMemo& memo);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    InputMemo* previous_;
  };
  static InputMemo* current();  // this thread's, or null

  // rank's whole input of `c`, packed, where kept; empty otherwise.
  std::span<const std::byte> find(const Case& c, int rank) const;
  // Keeps a copy of rank's whole input of `c` where it fits the capacity (older cases' let go).
  void keep(const Case& c, int rank, std::span<const std::byte> input);
  std::uint64_t held() const;  // bytes kept, every case's
  // The slot kept under `key` for the case (empty at first), whatever its maker keeps in it.
  std::shared_ptr<void>& kept_for_case(const std::string& key) { return owned_[key]; }

 private:
  struct KeptCase {
    Case key;                                   // the first case kept: the others have the same_inputs
    std::vector<std::vector<std::byte>> ranks;  // empty where not kept
    std::uint64_t bytes = 0;
  };
  std::vector<KeptCase> kept_;  // oldest first
  std::uint64_t capacity_ = 0;
  std::map<std::string, std::shared_ptr<void>> owned_;
};

// Whether two cases have the same inputs: they agree on every field but the root, the layout, the
// offset and null buffers, which the inputs do not depend on (compared in place: a v-collective's
// counts are not copied to be compared). It names every field of Case: one added to Case does not
// compile until it is sorted into one kind or the other.
bool same_inputs(const Case& a, const Case& b);
// Every rank's whole input of `c`, in bytes.
std::uint64_t input_bytes(const Case& c);

// Where implementations cut a rank's input of `c` (input_elements(c) elements): its first and
// last elements; the last and first element on either side of every cut into nranks blocks
// (sizes differing by at most one, the larger first or last, or all of ceil(n/nranks) but the
// last; for reduce-scatter and all-to-all, blocks of `count`); and either side of every power of
// two from 8 (chunk and piece sizes). Sorted, without repeats.
std::vector<std::size_t> special_edges(const Case& c);

// The same as InputGenerator(c).bits(rank, index): the pure function of design idea 1.
std::uint64_t input(const Case& c, int rank, std::size_t index);

}  // namespace collcheck
