// The process mutants: ring's schedule with the last rank stopping forever inside the call (deaf
// to every deadline), aborting there, or throwing there, which only a world of processes can
// survive to report (a throw must come back as an error, never as the buffers' data).
#include "impls/mutants/mutants.h"

namespace collcheck {
namespace {

Mutant process_mutant(std::string_view name, std::string_view description, ProcessSabotage sabotage) {
  Mutant made;
  made.variant = algorithm_variant("ring").value();
  made.variant.name = "mutant:" + std::string(name);
  made.variant.description = std::string(description);
  made.caught_by = {"liveness"};
  made.sabotage = sabotage;
  return made;
}

}  // namespace

const std::vector<Mutant>& process_mutants() {
  static const std::vector<Mutant> registry = {
      process_mutant("hang", "ring whose last rank stops forever inside the call (deaf to deadlines)",
                     ProcessSabotage::Hang),
      process_mutant("crash", "ring whose last rank aborts inside the call", ProcessSabotage::Crash),
      process_mutant("throw", "ring whose last rank throws an exception inside the call", ProcessSabotage::Throw),
  };
  return registry;
}

const Mutant* find_process_mutant(std::string_view name) {
  for (const Mutant& mutant : process_mutants()) {
    if (mutant.variant.name == name) return &mutant;
  }
  return nullptr;
}

}  // namespace collcheck
