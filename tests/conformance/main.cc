// The conformance executables' main: `--backend SPEC` (taken out before GoogleTest reads the rest)
// names the backend where the build did not write one in, as in the installed
// `collcheck-conformance`; under a launcher (mpiexec) only rank 0 lists the tests, so that ctest
// discovers each once; the tests start MPI themselves, on first use. It is no test itself: what it
// does is held by the ctest entries conformance.program_* (tests/conformance/CMakeLists.txt): a
// missing --backend or one without a value is a usage error (status 2, the message), both
// spellings reach the suite, and the suite then fails on a mutant and passes on ring@sim.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "impls/worlds/mpi_world.h"
#include "tests/conformance/spec_under_test.h"

namespace collcheck::conformance {

extern const char* const kSpec;  // written by collcheck_add_conformance

namespace {
std::string given_spec;
}  // namespace

std::string_view spec_under_test() { return given_spec.empty() ? std::string_view(kSpec) : given_spec; }

}  // namespace collcheck::conformance

namespace {

// Takes `--backend SPEC` or `--backend=SPEC` out of argv; false (with a message) when it is malformed.
bool take_backend(int& argc, char** argv, std::string& spec) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument == "--backend") {
      if (i + 1 == argc) {
        std::fprintf(stderr, "--backend: expected a backend spec after it (e.g. plugin:./libmine.so)\n");
        return false;
      }
      spec = argv[++i];
    } else if (argument.starts_with("--backend=")) {
      spec = std::string(argument.substr(std::strlen("--backend=")));
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (!take_backend(argc, argv, collcheck::conformance::given_spec)) return 2;
  if (collcheck::conformance::spec_under_test().empty()) {
    std::fprintf(stderr,
                 "--backend: required, the backend the conformance suite runs on (e.g. plugin:./libmine.so:k=v, "
                 "ring@sim; `collcheck list` names them)\n");
    return 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  if (GTEST_FLAG_GET(list_tests) && collcheck::launched_by_launcher()) {
    const collcheck::Result<collcheck::World*> world = collcheck::launched_world();
    if (world.ok() && (*world)->rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) return 1;
  }
  return RUN_ALL_TESTS();
}
