// PLACEHOLDER (being written): Gloo under test.
#include "impls/rank_backend.h"

namespace collcheck {

Result<std::vector<RankBackendSpec>> gloo_backend_specs(std::string_view, std::string_view spec) {
  return Error{"--backend", "'" + std::string(spec) + "': the gloo backend is not built yet"};
}

}  // namespace collcheck
