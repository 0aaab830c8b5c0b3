// What the prover tracks per element: the set of (rank, index) input contributions it holds, as
// runs of consecutive ranks modulo the rank count per index, and how two such sets combine
// (impls/prove only).
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace collcheck::provenance {

// Contributions (r, index) for the `count` ranks first, first+1, ... taken modulo the rank
// count n: a run may wrap round rank n-1 to rank 0, so that every ring partial sum is one run.
// A run holds 1..n ranks; one of all n ranks starts at rank 0 (runs compare equal by fields).
struct Run {
  std::uint64_t index;
  std::uint32_t first;
  std::uint32_t count;

  friend bool operator==(const Run&, const Run&) = default;
};

// The run of `count` ranks from `first` modulo n, all n of them starting at rank 0.
inline Run make_run(std::uint64_t index, std::uint32_t first, std::uint32_t count, std::uint32_t nranks) {
  return Run{index, count == nranks ? 0 : first, count};
}

// What one element holds: undefined (never written), or a set of contributions. One run, the
// common case, is kept in place; more runs behind a pointer, which the place's index holds and
// a `count` of kMany marks, so that an Element is 16 bytes (the prover holds one per output
// element of every rank). Which step wrote it is not kept: a failed proof runs again to find it.
class Element {
 public:
  Element() = default;
  Element(std::uint64_t index, std::uint32_t rank) : single_{index, rank, 1} {}
  Element(const Element& other) : single_(other.single_) {
    if (other.many()) single_.index = own(*other.many());
  }
  Element(Element&& other) noexcept : single_(other.single_) { other.single_.count = 0; }
  Element& operator=(const Element& other) {
    if (this != &other) *this = Element(other);
    return *this;
  }
  Element& operator=(Element&& other) noexcept {
    if (this != &other) {
      release();
      single_ = other.single_;
      other.single_.count = 0;
    }
    return *this;
  }
  ~Element() { release(); }

  bool defined() const { return single_.count > 0; }  // a written element holds at least one run
  std::span<const Run> runs() const {
    if (many()) return *many();
    return std::span<const Run>(&single_, defined() ? 1 : 0);
  }

  void assign(std::vector<Run> runs) {
    if (runs.size() == 1) return assign_single(runs[0]);
    release();
    single_ = Run{};
    if (runs.size() > 1) {
      single_.index = own(std::move(runs));
      single_.count = kMany;
    }
  }
  void assign_single(const Run& run) {
    release();
    single_ = run;
  }

 private:
  static constexpr std::uint32_t kMany = 0xffffffff;  // no run holds that many ranks

  std::vector<Run>* many() const {
    return single_.count == kMany ? std::bit_cast<std::vector<Run>*>(single_.index) : nullptr;
  }
  static std::uint64_t own(std::vector<Run> runs) {
    return std::bit_cast<std::uint64_t>(
        new std::vector<Run>(std::move(runs)));  // NOLINT(cppcoreguidelines-owning-memory)
  }
  void release() {
    delete many();  // NOLINT(cppcoreguidelines-owning-memory)
    single_.count = 0;
  }

  Run single_{};
};
static_assert(sizeof(Element) == 16, "the prover holds an Element per output element of every rank");

// The set as text for a report: "{index 3: ranks 0..5}", "{index 3: ranks 4094..1}" (wrapping).
std::string show(std::span<const Run> runs, std::uint32_t nranks);

// The union of two disjoint sets of runs modulo n; `shared` names contributions they have in
// common (then `runs` is incomplete), which is how a contribution combined twice shows.
struct Union {
  std::vector<Run> runs;
  std::optional<Run> shared;
};

Union combine(std::span<const Run> a, std::span<const Run> b, std::uint32_t nranks);

// The common case without allocating: the union of two single runs of one index that meet end
// to end without overlapping, or nothing (then combine() decides).
std::optional<Run> join(const Run& a, const Run& b, std::uint32_t nranks);

// a[i] = a[i] ⊕ b[i] for every i (join() where it can, else combine()). Where a contribution would
// be combined twice the elements from there on are left as they were, and that element's index
// and the shared run are returned.
struct CombinedTwice {
  std::size_t index;
  Run shared;
};
std::optional<CombinedTwice> combine_all(std::vector<Element>& a, const std::vector<Element>& b, std::uint32_t nranks);

}  // namespace collcheck::provenance
