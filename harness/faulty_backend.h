// A backend under a fault plan (`collcheck check --faults PLAN`): every run of the wrapped
// backend, the properties' extra runs included, passes its sends through a FaultInjector.
#pragma once

#include <memory>

#include "faults/plan.h"
#include "impls/backend.h"

namespace collcheck {

// The injector of each run is drawn from the run's schedule seed, so a replay with the same
// seed injects the same faults. Errors when the backend cannot honour a hook (not yet: proc,
// mpi, gloo), naming it.
Result<std::unique_ptr<Backend>> with_faults(std::unique_ptr<Backend>, FaultPlan);

}  // namespace collcheck
