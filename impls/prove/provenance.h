// What the prover tracks per element: the set of (rank, index) input contributions it holds, as
// runs of consecutive ranks modulo the rank count per index, and how two such sets combine
// (impls/prove only).
#pragma once

#include <cstdint>
#include <memory>
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

// What one element holds: undefined (never written), or a set of contributions; and which
// step wrote it last, for the report. One run, the common case, is kept without allocating.
class Element {
 public:
  Element() = default;
  Element(std::uint64_t index, std::uint32_t rank) : count_(1), single_{index, rank, 1} {}
  Element(const Element& other)
      : writer_(other.writer_), count_(other.count_), single_(other.single_),
        many_(other.many_ ? std::make_unique<std::vector<Run>>(*other.many_) : nullptr) {}
  Element(Element&&) noexcept = default;
  Element& operator=(const Element& other) {
    if (this != &other) *this = Element(other);
    return *this;
  }
  Element& operator=(Element&&) noexcept = default;
  ~Element() = default;

  bool defined() const { return count_ > 0; }  // a written element holds at least one run
  int writer() const { return writer_; }
  void set_writer(int step) { writer_ = step; }
  std::span<const Run> runs() const {
    return count_ <= 1 ? std::span<const Run>(&single_, count_) : std::span<const Run>(*many_);
  }

  void assign(std::vector<Run> runs) {
    count_ = static_cast<std::uint32_t>(runs.size());
    if (count_ == 1) single_ = runs[0];
    if (count_ > 1) many_ = std::make_unique<std::vector<Run>>(std::move(runs));
    else many_.reset();
  }
  void assign_single(const Run& run) {
    count_ = 1;
    single_ = run;
    many_.reset();
  }

 private:
  int writer_ = -1;  // step index of the owning participant; -1: initial contents
  std::uint32_t count_ = 0;
  Run single_{};
  std::unique_ptr<std::vector<Run>> many_;  // more than one run: a pointer keeps Element at 32 bytes
};
static_assert(sizeof(Element) <= 32, "the prover holds an Element per output element of every rank");

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

}  // namespace collcheck::provenance
