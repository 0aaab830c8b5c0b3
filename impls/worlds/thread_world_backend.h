// A backend that runs across processes (a RankBackendSpec) on worlds of threads of this process:
// one world per rank count, made on first use and kept; each run starts every rank on its own
// thread and combines their results as a launcher would. The conformance suite runs `@proc`,
// `gloo` and plugins this way, and a spec whose ranks must be threads of one process
// (`ALGORITHM@ib:verbs=loopback`) runs so where no launched world can serve it (registry.cc).
#pragma once

#include <memory>

#include "impls/backend/backend.h"
#include "impls/backend/rank_backend.h"

namespace collcheck {

std::unique_ptr<Backend> make_thread_world_backend(RankBackendSpec spec);

}  // namespace collcheck
