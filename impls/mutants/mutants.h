// Deliberately broken variants of the reference algorithms, each modelled on a real class of
// collective bug, selectable as `mutant:NAME@sim`, so that tests can show every property fail.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "impls/sim/sim_backend.h"

namespace collcheck {

struct Mutant {
  SimVariant variant;                      // variant.name is `mutant:NAME`
  std::vector<std::string_view> caught_by; // the properties expected to catch it, best first
  // The fault plan (faults/plan.h text) under which it shows, for bugs of the link protocol
  // that only faults reveal; empty: it shows on clean runs.
  std::string faults;
};

const std::vector<Mutant>& all_mutants();
const Mutant* find_mutant(std::string_view name);  // NAME or mutant:NAME

}  // namespace collcheck
