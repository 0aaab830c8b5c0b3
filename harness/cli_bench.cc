// PLACEHOLDER (being written): `collcheck bench`.
#include "harness/cli_bench.h"

namespace collcheck::cli {

int run_bench(std::span<const std::string_view>, std::ostream&, std::ostream& err) {
  err << "collcheck bench: not built yet\n";
  return 2;
}

}  // namespace collcheck::cli
