// Entry point of the `collcheck` tool: hands the arguments to the command line in cli.h and
// makes sure everything printed reaches the terminal before the exit status is returned; on
// SIGINT, SIGTERM or SIGHUP, every launched world is taken down first (impls/worlds/interrupts.h).
#include <iostream>
#include <string_view>
#include <vector>

#include "harness/cli.h"
#include "impls/worlds/interrupts.h"

int main(int argc, char** argv) {
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
