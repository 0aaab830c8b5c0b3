// The suite's backends (backends.h): a spec expanded to one test per backend, and the backend of
// one, across processes on worlds of threads (impls/worlds/thread_world_backend.h) or in
// lockstep under a launcher. Support code; tests/conformance/support_test.cc makes it fail.
#include "tests/conformance/backends.h"

#include <utility>

#include "impls/backend/rank_backend.h"
#include "impls/registry.h"
#include "impls/worlds/mpi_world.h"
#include "impls/worlds/thread_world_backend.h"

namespace collcheck::conformance {

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
    for (RankBackendSpec& one : *specs) backends.push_back(make_thread_world_backend(std::move(one)));
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
