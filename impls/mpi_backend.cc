// PLACEHOLDER (being written): Open MPI's collectives under test.
#include "impls/rank_backend.h"

namespace collcheck {

Result<std::vector<RankBackendSpec>> mpi_backend_specs(std::string_view, std::string_view spec) {
  return Error{"--backend", "'" + std::string(spec) + "': the mpi backend is not built yet"};
}

}  // namespace collcheck
