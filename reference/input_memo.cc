// The memo of a checked case's generated inputs (InputMemo, inputs.h) and what decides which
// cases share inputs (same_inputs).
#include <algorithm>

#include "reference/inputs.h"

namespace collcheck {

namespace {
thread_local InputMemo* memo_in_use = nullptr;
}  // namespace

InputMemo::Use::Use(InputMemo& memo) : previous_(memo_in_use) { memo_in_use = &memo; }
InputMemo::Use::~Use() { memo_in_use = previous_; }
InputMemo* InputMemo::current() { return memo_in_use; }

std::span<const std::byte> InputMemo::find(const Case& c, int rank) const {
  if (rank < 0) return {};
  for (auto kept = kept_.rbegin(); kept != kept_.rend(); ++kept) {  // the newest first
    if (!same_inputs(kept->key, c)) continue;
    const auto r = static_cast<std::size_t>(rank);
    return r < kept->ranks.size() ? std::span<const std::byte>(kept->ranks[r]) : std::span<const std::byte>();
  }
  return {};
}

std::uint64_t InputMemo::held() const {
  std::uint64_t bytes = 0;
  for (const KeptCase& kept : kept_) bytes += kept.bytes;
  return bytes;
}

void InputMemo::keep(const Case& c, int rank, std::span<const std::byte> input) {
  if (rank < 0 || rank >= c.nranks || input.empty() || input.size() > capacity_) return;
  std::size_t mine = 0;
  while (mine < kept_.size() && !same_inputs(kept_[mine].key, c)) ++mine;
  // Older cases go first; the case being kept is never let go for itself.
  while (held() + input.size() > capacity_) {
    const std::size_t oldest = mine == 0 ? 1 : 0;
    if (oldest >= kept_.size()) return;
    kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(oldest));
    if (oldest < mine) --mine;
  }
  if (mine == kept_.size()) {
    kept_.push_back(KeptCase{c, std::vector<std::vector<std::byte>>(static_cast<std::size_t>(c.nranks)), 0});
  }
  KeptCase& kept = kept_[mine];
  std::vector<std::byte>& slot = kept.ranks[static_cast<std::size_t>(rank)];
  kept.bytes -= slot.size();
  slot.assign(input.begin(), input.end());
  kept.bytes += slot.size();
}

bool same_inputs(const Case& a, const Case& b) {
  // Every field of Case is named here, so that one added later stops this from compiling until it
  // is sorted into those the inputs depend on (compared) or those they do not (ignored): a field
  // left out of the comparison would let one case's kept inputs serve another's.
  const auto& [collective, dtype, op, count, counts, nranks, root, in_place, offset, empty_as_null, values, seed] = a;
  static_cast<void>(root), static_cast<void>(in_place), static_cast<void>(offset), static_cast<void>(empty_as_null);
  return collective == b.collective && dtype == b.dtype && op == b.op && count == b.count && nranks == b.nranks &&
         values == b.values && seed == b.seed && counts == b.counts;
}

}  // namespace collcheck
