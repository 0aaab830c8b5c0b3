// The conformance executables' main: the backend the suite runs on (`--backend SPEC` taken out of
// the command line, else the one the build wrote in: take_backend_argument, tested in
// backend_argument_test.cc), GoogleTest on the rest; under a launcher (mpiexec) only rank 0 lists
// the tests, so that ctest discovers each once. The tests start MPI themselves, on first use. The
// whole program is run by the ctest entries conformance.program_* (a usage error without a spec,
// the suite failing on a mutant and passing on ring@sim).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "impls/worlds/mpi_world.h"
#include "tests/conformance/backend_argument.h"
#include "tests/conformance/spec_under_test.h"

namespace collcheck::conformance {

extern const char* const kSpec;  // written by collcheck_add_conformance

namespace {
std::string standing_spec;
}  // namespace

std::string_view spec_under_test() { return standing_spec; }

}  // namespace collcheck::conformance

int main(int argc, char** argv) {
  using collcheck::conformance::kSpec;
  const collcheck::Result<std::string> spec = collcheck::conformance::take_backend_argument(argc, argv, kSpec);
  if (!spec) {
    std::fprintf(stderr, "%s: %s\n", spec.error().field.c_str(), spec.error().message.c_str());
    return 2;
  }
  collcheck::conformance::standing_spec = spec.value();
  ::testing::InitGoogleTest(&argc, argv);
  if (GTEST_FLAG_GET(list_tests) && collcheck::launched_by_launcher()) {
    const collcheck::Result<collcheck::World*> world = collcheck::launched_world();
    if (world.ok() && (*world)->rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) return 1;
  }
  return RUN_ALL_TESTS();
}
