// Entry point of the `collcheck` tool: hands the arguments to the command line in cli.h and
// makes sure everything printed reaches the terminal before the exit status is returned; on
// SIGINT, SIGTERM or SIGHUP, every launched world is taken down first (impls/worlds/interrupts.h).
// Blocks of 4 MiB and more go back to the system as soon as they are freed (below).
#include <iostream>
#include <string_view>
#include <vector>

#include "harness/cli.h"
#include "impls/worlds/interrupts.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

int main(int argc, char** argv) {
#ifdef __GLIBC__
  // glibc raises its threshold for mapping a block on its own (up to 32 MiB) each time a mapped
  // block is freed, and then keeps the freed blocks of the next proofs, runs or cases in its heap,
  // where a larger one cannot reuse a smaller one's room: a sweep of proofs that each need 70 MB
  // by the estimate (--memory-limit 75M) stood at 101 MB resident. A fixed threshold maps every
  // block of 4 MiB or more on its own and unmaps it when freed, so memory stays where the
  // estimates say (81 MB for that sweep).
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
#endif
  std::vector<std::string_view> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  collcheck::take_down_on_signals(/*quiet=*/!args.empty() && args.front() == "worker");
  const int status = collcheck::cli::run(args, std::cout, std::cerr);
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "collcheck: could not write the output\n";
    return 1;
  }
  return status;
}
