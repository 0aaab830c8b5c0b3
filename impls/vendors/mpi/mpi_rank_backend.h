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

// The predefined MPI datatype the case runs with (`MPI_LONG_LONG`), drawn from its seed among
// the spellings of its dtype's width on this platform; empty where MPI has none for the dtype.
std::string_view mpi_type_name(const Case&);

// The backend of this rank on `comm` (which it frees), named `name`; `world` is the control
// channel its timed runs start together on.
std::unique_ptr<RankBackend> make_mpi_rank_backend(std::string name, MPI_Comm comm, World& world);

}  // namespace collcheck
