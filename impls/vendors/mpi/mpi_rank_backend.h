// One rank of Open MPI under test: runs a case's collective on its communicator, in NCCL's
// buffer layout between guard zones, as often or as timed as the run asks.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <string_view>

#include "impls/backend/rank_backend.h"
#include "impls/backend/world.h"

namespace collcheck {

// `function: what MPI says of code`.
std::string mpi_error(std::string_view function, int code);

// The backend of this rank on `comm` (which it frees), named `name`; `world` is the control
// channel its timed runs start together on.
std::unique_ptr<RankBackend> make_mpi_rank_backend(std::string name, MPI_Comm comm, World& world);

}  // namespace collcheck
