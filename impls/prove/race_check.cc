// RaceCheck (race_check.h): vector clocks over the schedule's streams, and each element's
// last write and reads since.
#include "impls/prove/race_check.h"

#include <algorithm>

namespace collcheck::provenance {

void RaceCheck::begin(std::uint32_t stream, int p, int step, std::span<const int> after, const Clock* message,
                      bool keep) {
  Clock& own = stream_clocks_[stream];
  const auto join = [&own](const Clock& other) {
    for (std::size_t s = 0; s < own.size(); ++s) own[s] = std::max(own[s], other[s]);
  };
  for (int earlier : after) join(kept_.at({p, earlier}));
  if (message != nullptr) join(*message);
  ++own[stream];
  current_ = &own;  // unchanged until this stream's next step begins
  now_ = Access{stream, own[stream], step};
  if (keep) kept_[{p, step}] = own;
}

std::optional<RaceCheck::Access> RaceCheck::read(const Element* element) {
  History& history = elements_[element];
  if (history.write && history.write->stream != now_.stream && !ordered(*history.write)) return history.write;
  const auto same = std::find_if(history.reads.begin(), history.reads.end(),
                                 [&](const Access& read) { return read.stream == now_.stream; });
  if (same != history.reads.end()) *same = now_;
  else history.reads.push_back(now_);
  return std::nullopt;
}

std::optional<RaceCheck::Access> RaceCheck::write(const Element* element) {
  History& history = elements_[element];
  if (history.write && history.write->stream != now_.stream && !ordered(*history.write)) return history.write;
  for (const Access& read : history.reads) {
    if (read.stream != now_.stream && !ordered(read)) return read;
  }
  history.write = now_;
  history.reads.clear();
  return std::nullopt;
}

}  // namespace collcheck::provenance
