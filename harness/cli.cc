// The `collcheck` command line: a table of commands, the usage text and each command's help made
// from it, and the dispatch that turns a wrong command or stray argument into a message and exit
// status 2.
#include "harness/cli.h"

#include "collcheck/config.h"

#include <string>

#include "harness/cli_bench.h"
#include "harness/cli_list.h"
#if COLLCHECK_HAVE_RAPIDCHECK
#include "harness/cli_check.h"
#endif
#include "harness/cli_export.h"
#include "harness/cli_prove.h"
#include "harness/cli_simulate.h"
#include "harness/cli_version.h"
#include "harness/cli_worker.h"
#include "harness/command_help.h"
#include "harness/text_table.h"
#include "reference/numbers.h"

namespace collcheck::cli {
namespace {

constexpr int kUsageError = 2;

int run_help(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

const CommandHelp& help_help() {
  static constexpr CommandHelp help{"help",
                                    "print the commands, or one command's options, defaults and an example",
                                    {},
                                    "[COMMAND]",
                                    "collcheck COMMAND --help (or -h) prints the same as collcheck help COMMAND.",
                                    "collcheck help prove"};
  return help;
}

// A command either takes no arguments (`simple`) or parses its own (`with_arguments`); its help
// comes from the table of options it parses with.
struct Command {
  const CommandHelp& (*help)();
  int (*simple)(std::ostream& out);
  int (*with_arguments)(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);
};

constexpr Command kCommands[] = {
    {&version_help, &run_version, nullptr},   {&list_help, &run_list, nullptr},     {&prove_help, nullptr, &run_prove},
    {&simulate_help, nullptr, &run_simulate}, {&export_help, nullptr, &run_export},
#if COLLCHECK_HAVE_RAPIDCHECK
    {&check_help, nullptr, &run_check},       {&replay_help, nullptr, &run_replay},
#endif
    {&bench_help, nullptr, &run_bench},       {&worker_help, nullptr, &run_worker}, {&guard_help, nullptr, &run_guard},
    {&help_help, nullptr, &run_help},
};

std::string command_names() {
  std::string names;
  for (const Command& command : kCommands) {
    names += (names.empty() ? "" : ", ") + std::string(command.help().name);
  }
  return names;
}

int print_overview(std::ostream& out) {
  out << "usage: collcheck <command>\n\n"
         "Tests implementations of collective communication against a CPU oracle.\n\n"
         "commands:\n";
  TextTable table;
  for (const Command& command : kCommands) {
    table.add_row({std::string(command.help().name), std::string(command.help().summary)});
  }
  table.print(out);
  out << "\noptions (LIST: 1,2,8..16; counts take K, M, G):\n";
  for (const Command& command : kCommands) {
    if (!command.help().options.empty()) out << "  " << synopsis(command.help(), 6) << "\n";
  }
  out << "\ncollcheck help COMMAND (or collcheck COMMAND --help) prints a command's options, defaults and an "
         "example.\n";
  return 0;
}

const Command* find_command(std::string_view name) {
  if (name == "--help" || name == "-h") name = "help";
  for (const Command& command : kCommands) {
    if (command.help().name == name) return &command;
  }
  return nullptr;
}

// `collcheck help` alone is the overview; `collcheck help COMMAND` that command's help.
int run_help(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  if (args.empty()) return print_overview(out);
  if (args.size() > 1) {
    err << "collcheck help: unexpected argument '" << args[1] << "': help takes one command\n";
    return kUsageError;
  }
  const Command* command = find_command(args[0]);
  if (command == nullptr) {
    err << "collcheck help: unknown command " << quoted_input(args[0]) << ": allowed: " << command_names() << '\n';
    return kUsageError;
  }
  print_command_help(command->help(), out);
  return 0;
}

}  // namespace

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  if (args.empty()) return print_overview(out);
  const Command* command = find_command(args[0]);
  if (command == nullptr) {
    err << "collcheck: unknown command " << quoted_input(args[0]) << ": allowed: " << command_names() << '\n';
    return kUsageError;
  }
  const std::span<const std::string_view> rest = args.subspan(1);
  if (asks_for_help(rest, command->help().options)) {
    print_command_help(command->help(), out);
    return 0;
  }
  if (command->with_arguments != nullptr) return command->with_arguments(rest, out, err);
  if (!rest.empty()) {
    err << "collcheck " << command->help().name << ": unexpected argument '" << rest[0]
        << "': the command takes none\n";
    return kUsageError;
  }
  return command->simple(out);
}

}  // namespace collcheck::cli
