// What the prover tracks per element: the set of (rank, index) input contributions it holds, as
// runs of consecutive ranks per index, and how two such sets combine (impls/prove only).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace collcheck::provenance {

// Contributions (r, index) for every rank r in [first, end).
struct Run {
  std::uint64_t index;
  std::uint32_t first;
  std::uint32_t end;

  friend bool operator==(const Run&, const Run&) = default;
};

// What one element holds: undefined (never written), or a set of contributions; and which
// step wrote it last, for the report. One run, the common case, is kept without allocating.
class Element {
 public:
  Element() = default;
  Element(std::uint64_t index, std::uint32_t rank) : count_(1), single_{index, rank, rank + 1} {}
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

// The set as text for a report: "{index 3: ranks 0..5}".
std::string show(std::span<const Run> runs);

// The union of two disjoint sets; `shared` names the first contribution they have in common.
struct Union {
  std::vector<Run> runs;
  std::optional<Run> shared;
};

Union combine(std::span<const Run> a, std::span<const Run> b);

}  // namespace collcheck::provenance
