// Deliberately broken variants of the reference algorithms, each modelled on a real class of
// collective bug, selectable as `mutant:NAME@sim`, so that tests can show every property fail.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "impls/sim/sim_backend.h"

namespace collcheck {

// What a process mutant does to the last rank of a world of two or more, inside its first call.
// Throw: an exception, as a broken invariant or a refused value would throw.
enum class ProcessSabotage { None, Hang, Crash, Throw };

struct Mutant {
  SimVariant variant;                       // variant.name is `mutant:NAME`
  std::vector<std::string_view> caught_by;  // the properties expected to catch it, best first
  // The fault plan (faults/plan.h text) under which it shows, for bugs of the link protocol
  // that only faults reveal; empty: it shows on clean runs.
  std::string faults;
  ProcessSabotage sabotage = ProcessSabotage::None;  // a process mutant's; the proc executor does it
};

const std::vector<Mutant>& all_mutants();
const Mutant* find_mutant(std::string_view name);  // NAME or mutant:NAME

// The mutants that break the process, not the data, and so only make sense across processes
// (`mutant:hang@proc`, `mutant:crash@proc`); not among all_mutants().
const std::vector<Mutant>& process_mutants();
const Mutant* find_process_mutant(std::string_view name);  // mutant:NAME

// Every mutant's name (`mutant:NAME`, comma-separated), the process mutants first where asked.
std::string mutant_names(bool process_mutants_too = false);

// An error in the backend spec `spec` (`--backend`), quoting it.
Error backend_spec_error(std::string_view spec, const std::string& message);

// What the front of a backend spec (before `@`) names, read once for every transport: `all`
// (every algorithm), `mutant:NAME` (the process mutants too where `process_mutants_too`: executors
// across processes), an algorithm or `schedule:FILE`; each variant with its name (the algorithm's or
// `what`, then `suffix`) and, for a process mutant, what it does to the process. Errors name the spec.
struct NamedVariant {
  SimVariant variant;
  std::string name;
  ProcessSabotage sabotage = ProcessSabotage::None;
};
Result<std::vector<NamedVariant>> named_variants(std::string_view spec, std::string_view what,
                                                 const std::string& suffix, bool process_mutants_too);

}  // namespace collcheck
