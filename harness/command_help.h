// What `collcheck COMMAND --help` and `collcheck help COMMAND` print: a command's usage line,
// its options with their defaults (from the table its parser reads), notes and an example.
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "harness/arguments.h"

namespace collcheck::cli {

struct CommandHelp {
  std::string_view name;
  std::string_view summary;
  std::span<const Option> options;  // empty for commands without any
  std::string_view operands;        // after the options in the usage line: "'CASE'", "[COMMAND]"
  std::string_view notes;           // lines printed after the options: grammars, where the docs are
  std::string_view example;         // one command line, or several on their own lines
};

// `collcheck prove --algorithm A|all [--collective C ...] [--ranks LIST] ...`, wrapped to fit a
// terminal, continued lines indented by `indent` spaces.
std::string synopsis(const CommandHelp& command, std::size_t indent);

// The whole help of one command.
void print_command_help(const CommandHelp& command, std::ostream& out);

// Whether `--help` or `-h` stands where an option may (not as the value of the option before it).
bool asks_for_help(std::span<const std::string_view> args, std::span<const Option> options);

}  // namespace collcheck::cli
