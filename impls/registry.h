// The registry, the front door of impls/: the backends a --backend spec names, in this process
// (`ring@sim`) or across processes (`ring@proc`, `mpi[...]`, `gloo[...]`).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "impls/backend/backend.h"
#include "impls/backend/rank_backend.h"
#include "reference/result.h"

namespace collcheck {

// The backends the grammar names (`ring@sim`, `ring@sim:chunk=4096,channels=2`,
// `mutant:NAME@sim`, `all@sim`; across processes `ring@proc`, `mpi:allreduce=ring`,
// `gloo:allreduce_ring`, see rank_backend.h): one spec may stand for several backends
// (`all@sim`). Backends across processes run in lockstep when this process was started by
// mpirun or srun, and otherwise launch their own worlds through mpirun.
// Errors name the part that is wrong and list what is allowed.
Result<std::vector<std::unique_ptr<Backend>>> make_backends(std::string_view spec, const BackendOptions& = {});
// The one backend a spec names; an error, saying how many, where it names several (`all@sim`).
Result<std::unique_ptr<Backend>> make_one_backend(std::string_view spec, const BackendOptions& = {});
std::string backend_names();  // every name `all@sim` expands to, for help and errors

// The specs one --backend names (`all@proc`, `mpi:all-algorithms` stand for several). Errors
// name the part that is wrong and list what is allowed, or say the build lacks MPI or Gloo.
Result<std::vector<RankBackendSpec>> rank_backend_specs(std::string_view spec);

}  // namespace collcheck
