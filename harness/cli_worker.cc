// PLACEHOLDER (being written): `collcheck worker`.
#include "harness/cli_worker.h"

namespace collcheck::cli {

int run_worker(std::span<const std::string_view>, std::ostream&, std::ostream& err) {
  err << "collcheck worker: not built yet\n";
  return 2;
}

}  // namespace collcheck::cli
