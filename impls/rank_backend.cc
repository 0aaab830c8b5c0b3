// The registry of backends that run across processes: which family a --backend names, and
// what this build says when it lacks the library a family needs.
#include "impls/rank_backend.h"

#include "collcheck/config.h"

namespace collcheck {
namespace {

bool names_family(std::string_view spec, std::string_view family) {
  return spec == family || (spec.starts_with(family) && spec.size() > family.size() && spec[family.size()] == ':');
}

std::string_view options_of(std::string_view spec, std::string_view family) {
  return spec.size() > family.size() ? spec.substr(family.size() + 1) : std::string_view{};
}

}  // namespace

bool runs_across_processes(std::string_view spec) {
  if (names_family(spec, "mpi") || names_family(spec, "gloo")) return true;
  const std::size_t at = spec.rfind('@');
  if (at == std::string_view::npos) return false;
  const std::string_view transport = spec.substr(at + 1);
  return transport == "proc" || transport.starts_with("proc:");
}

bool is_vendor_backend(std::string_view spec) { return names_family(spec, "mpi") || names_family(spec, "gloo"); }

Result<std::vector<RankBackendSpec>> rank_backend_specs(std::string_view spec) {
  if (names_family(spec, "mpi")) return mpi_backend_specs(options_of(spec, "mpi"), spec);
  if (names_family(spec, "gloo")) return gloo_backend_specs(options_of(spec, "gloo"), spec);
  const std::size_t at = spec.rfind('@');
  if (at == std::string_view::npos || !runs_across_processes(spec)) {
    return Error{"--backend", "'" + std::string(spec) + "' does not run across processes: use ALGORITHM@proc, mpi or gloo"};
  }
  const std::string_view transport = spec.substr(at + 1);
  const std::string_view options = transport.size() > 4 ? transport.substr(5) : std::string_view{};
  return proc_backend_specs(spec.substr(0, at), options, spec);
}

#if !COLLCHECK_HAVE_MPI
Result<std::vector<RankBackendSpec>> mpi_backend_specs(std::string_view, std::string_view spec) {
  return Error{"--backend", "'" + std::string(spec) + "': this build has no MPI: " COLLCHECK_MPI_REASON};
}
#endif

#if !COLLCHECK_HAVE_GLOO
Result<std::vector<RankBackendSpec>> gloo_backend_specs(std::string_view, std::string_view spec) {
  return Error{"--backend", "'" + std::string(spec) + "': this build has no Gloo: " COLLCHECK_GLOO_REASON};
}
#endif

}  // namespace collcheck
