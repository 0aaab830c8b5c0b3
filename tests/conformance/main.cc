// The conformance executables' main: under a launcher (mpiexec) only rank 0 lists the tests, so
// that ctest discovers each once; the tests start MPI themselves, on first use.
#include <gtest/gtest.h>

#include <cstdio>

#include "impls/worlds/mpi_world.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (GTEST_FLAG_GET(list_tests) && collcheck::launched_by_launcher()) {
    const collcheck::Result<collcheck::World*> world = collcheck::launched_world();
    if (world.ok() && (*world)->rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) return 1;
  }
  return RUN_ALL_TESTS();
}
