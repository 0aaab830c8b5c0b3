// What the prover tracks per element: the set of (rank, index) input contributions it holds, as
// runs of consecutive ranks modulo the rank count per index, and how two such sets combine
// (impls/prove only).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace collcheck::provenance {

// Contributions (r, index) for the `count` ranks first, first + stride, first + 2 stride, ...
// taken modulo the rank count n: a run may wrap round rank n-1 to rank 0, so that every ring
// partial sum is one run, and a stride keeps recursive halving's partial sums one run too (ranks
// v, v + n/2 after its first round; v, v + n/4, v + n/2, v + 3n/4 after its second). A run
// holds 1..n ranks, count x stride <= n (so no rank is in it twice), and is kept in one canonical
// form so that runs compare equal by fields exactly when they hold the same ranks: one rank has
// stride 1, and a run that goes all the way round (count x stride = n) starts at its smallest
// rank (all n ranks at rank 0). The index has 40 bits and the stride 24 (ranks are at most
// kMaxRanks), so that a run is 16 bytes.
struct Run {
  static constexpr std::uint64_t kIndexLimit = std::uint64_t{1} << 40;

  std::uint64_t index : 40 = 0;
  std::uint64_t stride : 24 = 1;
  std::uint32_t first = 0;
  std::uint32_t count = 0;

  constexpr Run() = default;
  constexpr Run(std::uint64_t index_, std::uint32_t first_, std::uint32_t count_, std::uint32_t stride_ = 1)
      : index(index_), stride(stride_), first(first_), count(count_) {}

  // The rank k strides along the run (k < count; k = count: where the run would go on).
  std::uint32_t rank(std::uint64_t k, std::uint32_t nranks) const {
    return static_cast<std::uint32_t>((first + k * stride) % nranks);
  }

  friend bool operator==(const Run&, const Run&) = default;
};
static_assert(sizeof(Run) == 16);
inline constexpr const char* kBeyondIndexLimit = "the prover numbers a rank's input elements in 40 bits: too many here";

// The run of `count` ranks from `first` modulo n, `stride` apart, in its canonical form.
inline Run make_run(std::uint64_t index, std::uint32_t first, std::uint32_t count, std::uint32_t nranks,
                    std::uint32_t stride = 1) {
  if (count == 1) stride = 1;
  if (std::uint64_t{count} * stride == nranks) first %= stride;
  return Run{index, first, count, stride};
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
    if (other.many()) own(*other.many());
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
    if (runs.size() > 1) own(std::move(runs));
  }
  void assign_single(const Run& run) {
    release();
    single_ = run;
  }

 private:
  static constexpr std::uint32_t kMany = 0xffffffff;  // no run holds that many ranks

  // Several runs live behind a pointer kept in the bytes of the single run's index and stride.
  std::vector<Run>* many() const {
    if (single_.count != kMany) return nullptr;
    std::vector<Run>* runs = nullptr;
    std::memcpy(static_cast<void*>(&runs), static_cast<const void*>(&single_), sizeof(void*));
    return runs;
  }
  void own(std::vector<Run> runs) {
    auto* kept = new std::vector<Run>(std::move(runs));  // NOLINT(cppcoreguidelines-owning-memory)
    std::memcpy(static_cast<void*>(&single_), static_cast<const void*>(&kept), sizeof(void*));
    single_.count = kMany;
  }
  void release() {
    delete many();  // NOLINT(cppcoreguidelines-owning-memory)
    single_.count = 0;
  }

  Run single_{};
};
static_assert(sizeof(Element) == 16, "the prover holds an Element per output element of every rank");
static_assert(sizeof(void*) <= sizeof(std::uint64_t), "several runs live behind a pointer in a run's first word");

// The set as text for a report: "{index 3: ranks 0..5}", "{index 3: ranks 4094..1}" (wrapping),
// "{index 3: ranks 1..13 every 4}".
std::string show(std::span<const Run> runs, std::uint32_t nranks);

// The union of two disjoint sets of runs modulo n; `shared` names contributions they have in
// common (then `runs` is incomplete), which is how a contribution combined twice shows.
struct Union {
  std::vector<Run> runs;
  std::optional<Run> shared;
};

Union combine(std::span<const Run> a, std::span<const Run> b, std::uint32_t nranks);

// Where the places of merge_pieces() lie among the ranks: place p is rank p * stride + low_bits,
// for p below `count` (a stride of 1 and no low bits: the ranks themselves).
struct Places {
  std::uint32_t stride = 1;
  std::uint32_t low_bits = 0;
  std::uint64_t count = 0;
};

// Places [first, end) of one index, straight (not wrapping round the last place).
struct Piece {
  std::uint64_t index;
  std::uint64_t first;
  std::uint64_t end;
};

// The union of `pieces` as runs: sorted, merged where they touch, and each index's piece ending
// at the last place joined with its piece starting at place 0 (a run that wraps). Two pieces that
// share places are a contribution combined twice: `shared` names the first such places. combine()
// merges ranks this way, and the XOR turn (turning.cc) places along a stride.
Union merge_pieces(std::vector<Piece>& pieces, const Places& places, std::uint32_t nranks);

// The common case without allocating: the union of two single runs of one index, or nothing
// (then combine() decides). Two runs join where they meet end to end with one stride (two single
// ranks with the stride between them), or where they interleave: runs of one count and stride
// s, the second starting s/2 after the first, make one run of twice the count and stride s/2.
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
