// The backends a spec names, as the conformance suite runs them: in this process (`ring@sim`),
// on worlds of threads (`ring@proc`, `gloo:NAME`: impls/worlds/thread_world_backend.h), or in
// lockstep when mpiexec started it (`mpi`). Support code: support_test.cc makes it fail.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "impls/backend/backend.h"
#include "reference/result.h"

namespace collcheck::conformance {

// The spec the suite runs on: the program's `--backend SPEC` (main.cc), else the one its build
// wrote in (collcheck_add_conformance's kSpec; empty in the installed collcheck-conformance).
std::string_view spec_under_test();

// The single-backend specs `spec` expands to through the registry (`all@sim` gives `ring@sim`,
// `tree@sim`, ...; `gloo` every Gloo algorithm); on an error, `spec` itself, so that the test
// made from it reports the error instead of vanishing.
std::vector<std::string> expand(std::string_view spec);

// The one backend a single-backend spec names. Backends across processes run on worlds of
// threads of this process, unless a launcher started it: then in lockstep on the launched world.
Result<std::unique_ptr<Backend>> make_backend(std::string_view spec);

}  // namespace collcheck::conformance
