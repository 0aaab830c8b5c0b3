// The knob generator: per knob a kind (default, edge, anywhere) that shrinks toward the default,
// and the spec a case's drawn knobs make.
#include "harness/knob_generator.h"

#include <algorithm>
#include <bit>
#include <cstdint>

namespace collcheck {
namespace {

// Any value of low..high: a bit length drawn uniformly, then a value of that length (within the
// range), so that 3 and 3,000,000 are both likely in 1..2^36.
std::uint64_t anywhere(std::uint64_t low, std::uint64_t high) {
  const int widest = static_cast<int>(std::bit_width(high));
  const int width = *rc::gen::inRange(static_cast<int>(std::bit_width(low)), widest + 1);
  const std::uint64_t from = std::max(low, width == 0 ? 0 : std::uint64_t{1} << (width - 1));
  const std::uint64_t to = width >= 64 ? high : std::min(high, (std::uint64_t{1} << width) - 1);
  if (from >= to) return from;
  return to == UINT64_MAX ? *rc::gen::inRange(from, to) : *rc::gen::inRange(from, to + 1);
}

std::optional<std::uint64_t> drawn_value(const KnobSpace& space) {
  const std::uint64_t high = space.choices.empty() ? space.high : space.choices.size() - 1;
  std::vector<std::uint64_t> edges;
  for (std::uint64_t edge : space.edges) {
    if (edge >= space.low && edge <= high && edge != space.fallback) edges.push_back(edge);
  }
  // 0..1: the default; 2: an edge; 3: anywhere. Shrinks toward 0.
  const int kind = *rc::gen::inRange(0, 4);
  if (kind < 2) return std::nullopt;
  if (kind == 2 && !edges.empty()) {
    return edges[*rc::gen::inRange<std::size_t>(0, edges.size())];
  }
  const std::uint64_t value = anywhere(space.low, high);
  if (value == space.fallback) return std::nullopt;
  return value;
}

}  // namespace

// Each knob is drawn by a generator of its own, from a Random of its own, and the values are
// paired up, so that shrinking one knob never changes what the others drew (one generator for all
// would hand a knob's draws to the next one when the first needs fewer).
rc::Gen<KnobValues> knob_generator(std::vector<KnobSpace> spaces) {
  std::vector<rc::Gen<std::optional<std::uint64_t>>> knobs;
  knobs.reserve(spaces.size());
  for (KnobSpace& space : spaces)
    knobs.push_back(rc::gen::exec([space = std::move(space)] { return drawn_value(space); }));
  return rc::Gen<KnobValues>([knobs = std::move(knobs)](const rc::Random& random, int size) {
    rc::Random draws = random;
    rc::Shrinkable<KnobValues> values = rc::shrinkable::just(KnobValues{});
    for (const auto& knob : knobs) {
      values = rc::shrinkable::map(rc::shrinkable::pair(std::move(values), knob(draws.split(), size)),
                                   [](std::pair<KnobValues, std::optional<std::uint64_t>> more) {
                                     more.first.push_back(more.second);
                                     return std::move(more.first);
                                   });
    }
    return values;
  });
}

std::string knob_settings(const std::vector<KnobSpace>& spaces, const KnobValues& values, const Case& c) {
  std::string settings;
  for (std::size_t k = 0; k < spaces.size() && k < values.size(); ++k) {
    const KnobSpace& space = spaces[k];
    if (!values[k] && !(space.fit && space.fit_default)) continue;
    const std::uint64_t drawn = values[k].value_or(space.fallback);
    const std::uint64_t value = space.fit ? space.fit(drawn, c) : drawn;
    if (value == space.fallback) continue;
    settings += (settings.empty() ? "" : ",") + space.setting(value);
  }
  return settings;
}

std::string spec_with_knobs(std::string_view spec, std::string_view settings) {
  if (settings.empty()) return std::string(spec);
  // Options follow the transport (`ring@sim:`; a mutant's name before it has a ':' of its own),
  // the family (`mpi:`), or Gloo's algorithm (`gloo:allreduce_bcube:`).
  const std::size_t at = spec.find('@');
  std::size_t from = at == std::string_view::npos ? 0 : at;
  if (at == std::string_view::npos && spec.starts_with("gloo:")) from = std::string_view("gloo:").size();
  const bool has_options = spec.find(':', from) != std::string_view::npos;
  return std::string(spec) + (has_options ? "," : ":") + std::string(settings);
}

}  // namespace collcheck
