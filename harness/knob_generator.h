// Backend knobs drawn as part of a case (`collcheck check`): for each knob a backend leaves free
// (Capabilities::knobs), its default, one of its edges or any value in its range, shrinking
// toward the default; the drawn values become the spec of the backend the case runs on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidcheck.h>

#include "impls/backend/backend.h"

namespace collcheck {

// One value per knob space, in its order; nullopt: the knob's default.
using KnobValues = std::vector<std::optional<std::uint64_t>>;

// Half the draws the default, a quarter one of the edges, a quarter any value of the range (its
// bit length uniform, so small and large values both come); shrinks toward the default, then
// toward the simpler edges.
rc::Gen<KnobValues> knob_generator(std::vector<KnobSpace> spaces);

// `chunk=64,channels=3`: the values fitted to the case (KnobSpace::fit; a default too where
// KnobSpace::fit_default), those at their default left out; empty when every knob is at its default.
std::string knob_settings(const std::vector<KnobSpace>& spaces, const KnobValues& values, const Case& c);

// The spec with the settings added to its options: `ring@sim` + `chunk=64` gives
// `ring@sim:chunk=64`, `ring@sim:reliable=on` gives `ring@sim:reliable=on,chunk=64`,
// `gloo:allreduce_bcube` + `base=3` gives `gloo:allreduce_bcube:base=3`.
std::string spec_with_knobs(std::string_view spec, std::string_view settings);

}  // namespace collcheck
