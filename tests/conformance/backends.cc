// The suite's backends. A rank backend on worlds of threads: one world per rank count, made on
// first use and kept; each run starts every rank on its own thread and combines their results
// as a launcher would, so the suite sees one Backend whatever runs underneath.
#include "tests/conformance/backends.h"

#include <map>
#include <utility>

#include "impls/backend/rank_backend.h"
#include "impls/backend/world.h"
#include "impls/registry.h"
#include "impls/worlds/launched_backend.h"
#include "impls/worlds/mpi_world.h"
#include "impls/worlds/thread_world_backend.h"
#include "impls/worlds/wire.h"

namespace collcheck::conformance {

std::unique_ptr<Backend> on_thread_worlds(RankBackendSpec spec) { return make_thread_world_backend(std::move(spec)); }

std::vector<std::string> expand(std::string_view spec) {
  std::vector<std::string> names;
  if (runs_across_processes(spec)) {
    Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(spec);
    if (specs) {
      names.reserve(specs->size());
      for (const RankBackendSpec& one : *specs) names.push_back(one.name);
    }
  } else if (Result<std::vector<std::unique_ptr<Backend>>> backends = make_backends(spec)) {
    names.reserve(backends->size());
    for (const std::unique_ptr<Backend>& backend : *backends) names.push_back(backend->name());
  }
  if (names.empty()) names.emplace_back(spec);
  return names;
}

Result<std::unique_ptr<Backend>> make_backend(std::string_view spec) {
  std::vector<std::unique_ptr<Backend>> backends;
  if (runs_across_processes(spec) && !launched_by_launcher()) {
    Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(spec);
    if (!specs) return specs.error();
    backends.reserve(specs->size());
    for (RankBackendSpec& one : *specs) backends.push_back(on_thread_worlds(std::move(one)));
  } else {
    Result<std::vector<std::unique_ptr<Backend>>> made = make_backends(spec);
    if (!made) return made.error();
    backends = std::move(*made);
  }
  if (backends.size() != 1) {
    return Error{"backend",
                 "'" + std::string(spec) + "' names " + std::to_string(backends.size()) + " backends, not one"};
  }
  return std::move(backends.front());
}

}  // namespace collcheck::conformance
