// PLACEHOLDER (being written): `ALGORITHM@proc` backends.
#include "impls/rank_backend.h"

namespace collcheck {

Result<std::vector<RankBackendSpec>> proc_backend_specs(std::string_view, std::string_view, std::string_view spec) {
  return Error{"--backend", "'" + std::string(spec) + "': the proc transport is not built yet"};
}

}  // namespace collcheck
