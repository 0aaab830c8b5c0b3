// The backends a spec names, as the conformance suite runs them: in this process (`ring@sim`),
// on worlds of threads (`ring@proc`, `gloo:NAME`), or in lockstep when mpiexec started it (`mpi`).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "impls/backend/backend.h"
#include "impls/backend/rank_backend.h"
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

// A backend that runs across processes, on worlds of threads of this process: one world per
// rank count, made on first use; a run fails as a launcher's would when any rank's part fails.
std::unique_ptr<Backend> on_thread_worlds(RankBackendSpec spec);

}  // namespace collcheck::conformance
