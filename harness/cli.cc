// The `collcheck` command line: a table of commands, the usage text made from it, and the
// dispatch that turns a wrong command or stray argument into a message and exit status 2.
#include "harness/cli.h"

#include "collcheck/config.h"

#include <string>

#include "harness/cli_bench.h"
#include "harness/cli_list.h"
#if COLLCHECK_HAVE_RAPIDCHECK
#include "harness/cli_check.h"
#endif
#include "harness/cli_prove.h"
#include "harness/cli_simulate.h"
#include "harness/cli_version.h"
#include "harness/cli_worker.h"
#include "harness/text_table.h"

namespace collcheck::cli {
namespace {

constexpr int kUsageError = 2;

int run_help(std::ostream& out);

// A command either takes no arguments (`simple`) or parses its own (`with_arguments`).
struct Command {
  std::string_view name;
  std::string_view summary;
  std::string_view options;  // printed under the table; empty for commands without any
  int (*simple)(std::ostream& out);
  int (*with_arguments)(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);
};

constexpr Command kCommands[] = {
    {"version", "print the version, the build and its optional parts", "", &run_version, nullptr},
    {"list", "print the collectives, dtypes, ops, algorithms, value kinds and optional parts", "", &run_list,
     nullptr},
    {"prove", "prove reference algorithms symbolically over ranges of shapes",
     "--algorithm A|all [--collective C] [--ranks 1..64] [--counts LIST] [--roots some|all]\n"
     "      [--layout both|inplace|outofplace] [--chunk N] [--channels N] [--fan-in N]",
     nullptr, &run_prove},
    {"simulate", "run an algorithm on the simulated fabric, check it, predict its time",
     "--algorithm A [--collective C] [--ranks N] [--counts LIST] [--dtype D] [--op O]\n"
     "      [--values exact|real|special] [--seed S] [--schedule-seed S] [--inplace] [--root R]\n"
     "      [--topology ring:N|dgx-h100|ib-fat-tree:NODES|FILE] [--chunk N] [--channels N] [--fan-in N]\n"
     "      [--faults 'PLAN']   (PLAN: drop:link=2->3:p=0.01;delay:rank=1:ms=5;corrupt:after=3, see docs/faults.md)",
     nullptr, &run_simulate},
#if COLLCHECK_HAVE_RAPIDCHECK
    {"check", "run random cases on backends, check every property, shrink failures",
     "[--backend B ...] [--collective C ...] [--dtype D ...] [--op O ...] [--values V ...]\n"
     "      [--ranks 1..64] [--count 0..64K] [--cases N] [--seed S] [--time-budget 60s] [--property P ...]\n"
     "      [--deadline SECONDS] [--mpirun-args 'ARGS'] [--faults 'PLAN'] [--json FILE] [--junit FILE]\n"
     "      (backends: all@sim, ALGORITHM@sim[:chunk=N,channels=N,fan-in=N], mutant:NAME@sim,\n"
     "      the same @proc[:...,transport=auto|shm|tcp], mpi[:COLL=ALG,...|:all-algorithms],\n"
     "      gloo[:NAME[:OPTIONS]|:all-algorithms]; under mpirun or srun every rank runs in lockstep)",
     nullptr, &run_check},
    {"replay", "rerun one case on one backend with per-rank detail",
     "--backend B [--schedule-seed S] [--property P] [--deadline SECONDS] [--mpirun-args 'ARGS']\n"
     "      [--faults 'PLAN'] 'CASE'",
     nullptr, &run_replay},
#endif
    {"bench", "time a backend with nccl-tests' flags and columns, optionally against another",
     "[--backend B] [--vs B] [-b MINBYTES] [-e MAXBYTES] [-f FACTOR | -i STEPBYTES] [-n ITERS] [-w WARMUP]\n"
     "      [-c 0|1] [-d DTYPE|all] [-o OP|all] [-r ROOT|all] [--collective C] [--ranks N] [--csv FILE]\n"
     "      [--svg FILE] [--deadline SECONDS]      (nccl-tests' long forms too: --minbytes, --iters, ...)",
     nullptr, &run_bench},
    {"worker", "one rank of a world launched by check or bench through mpirun (not run by hand)",
     "--backend B --connect HOST:PORT", nullptr, &run_worker},
    {"help", "print this help", "", &run_help, nullptr},
};

std::string command_names() {
  std::string names;
  for (const Command& command : kCommands) {
    names += (names.empty() ? "" : ", ") + std::string(command.name);
  }
  return names;
}

int run_help(std::ostream& out) {
  out << "usage: collcheck <command>\n\n"
         "Tests implementations of collective communication against a CPU oracle.\n\n"
         "commands:\n";
  TextTable table;
  for (const Command& command : kCommands) {
    table.add_row({std::string(command.name), std::string(command.summary)});
  }
  table.print(out);
  out << "\noptions (LIST: 1,2,8..16; counts take K, M, G):\n";
  for (const Command& command : kCommands) {
    if (!command.options.empty()) out << "  collcheck " << command.name << " " << command.options << "\n";
  }
  return 0;
}

const Command* find_command(std::string_view name) {
  if (name == "--help" || name == "-h") name = "help";
  for (const Command& command : kCommands) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

}  // namespace

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  if (args.empty()) return run_help(out);
  const Command* command = find_command(args[0]);
  if (command == nullptr) {
    err << "collcheck: unknown command '" << args[0] << "': allowed: " << command_names() << '\n';
    return kUsageError;
  }
  if (command->with_arguments != nullptr) return command->with_arguments(args.subspan(1), out, err);
  if (args.size() > 1) {
    err << "collcheck " << command->name << ": unexpected argument '" << args[1]
        << "': the command takes none\n";
    return kUsageError;
  }
  return command->simple(out);
}

}  // namespace collcheck::cli
