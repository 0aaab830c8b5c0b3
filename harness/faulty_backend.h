// A backend under faults (`collcheck check --faults PLAN|random`): every run of the wrapped
// backend, the properties' extra runs included, passes its sends through a FaultInjector.
#pragma once

#include <memory>

#include "faults/plan.h"
#include "impls/backend/backend.h"

namespace collcheck {

// Each run is under the plan its RunOptions::fault_plan names (the check loop's per-case plan,
// drawn by `--faults random`), or else under the fixed `plan`; RunOptions::without_faults runs
// it clean (the recovery property). The injector of each run is drawn from the run's schedule
// seed, so a replay with the same seed injects the same faults.
// Errors when the backend cannot honour a hook (Capabilities::hook), naming it and the ones
// that can: the @sim backends, launched @proc worlds, and vendor backends over sockets once the
// socket interposer is built.
Result<std::unique_ptr<Backend>> with_faults(std::unique_ptr<Backend>, FaultPlan);

}  // namespace collcheck
