// The help of one command, rendered from its option table: usage line, options with defaults,
// notes and an example, so help and parsing read the same rows.
#include "harness/command_help.h"

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

namespace collcheck::cli {
namespace {

constexpr std::size_t kWidth = 100;        // of a usage line
constexpr std::size_t kOptionColumn = 28;  // where options' descriptions start, less the indent

// Every way to write the option, the long name first: "--minbytes", "-b".
std::vector<std::string> spellings_of(const Option& option) {
  std::vector<std::string> all{"--" + std::string(option.name)};
  for (std::string_view spelling : other_spellings(option)) all.emplace_back(spelling);
  return all;
}

// The spelling a usage line shows: a short one (`-b`) where there is one, else `--name`.
std::string shortest(const Option& option) {
  for (const std::string& spelling : spellings_of(option)) {
    if (!spelling.starts_with("--")) return spelling;
  }
  return "--" + std::string(option.name);
}

std::string usage_item(const Option& option) {
  std::string item = shortest(option);
  if (!option.value.empty()) item += " " + std::string(option.value);
  if (option.use == Use::Repeatable) item += " ...";
  return option.use == Use::Required ? item : "[" + item + "]";
}

std::string option_cell(const Option& option) {
  std::string cell;
  const std::vector<std::string> spellings = spellings_of(option);
  // Short spellings first, as nccl-tests prints them: "-b, --minbytes BYTES".
  for (const std::string& spelling : spellings) {
    if (!spelling.starts_with("--")) cell += spelling + ", ";
  }
  for (const std::string& spelling : spellings) {
    if (spelling.starts_with("--")) cell += spelling + ", ";
  }
  cell.resize(cell.size() - 2);
  if (!option.value.empty()) cell += " " + std::string(option.value);
  return cell;
}

std::string description(const Option& option) {
  std::string text(option.help);
  if (option.use == Use::Required) text += " (required)";
  if (option.use == Use::Repeatable) text += " (repeatable)";
  if (!option.fallback.empty()) text += " (default " + std::string(option.fallback) + ")";
  return text;
}

// The items joined by spaces in lines of at most `width` (a longer item stands alone), each line
// after the first starting with `indent` spaces.
std::string wrapped(const std::vector<std::string>& items, std::size_t width, std::size_t indent) {
  std::string out, line;
  for (const std::string& item : items) {
    if (!line.empty() && line.size() + 1 + item.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + item;
  }
  return out + line;
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream stream(text);
  std::vector<std::string> all;
  for (std::string word; stream >> word;) all.push_back(word);
  return all;
}

}  // namespace

std::string synopsis(const CommandHelp& command, std::size_t indent) {
  std::vector<std::string> items{"collcheck " + std::string(command.name)};
  for (const Option& option : command.options) items.push_back(usage_item(option));
  if (!command.operands.empty()) items.emplace_back(command.operands);
  return wrapped(items, kWidth, indent);
}

void print_command_help(const CommandHelp& command, std::ostream& out) {
  out << "usage: " << synopsis(command, 6) << "\n\n" << command.summary << "\n\n";
  // Descriptions start in one column; an option written longer than it has its own line.
  std::vector<std::pair<std::string, std::string>> rows;
  for (const Option& option : command.options) rows.emplace_back(option_cell(option), description(option));
  rows.emplace_back("-h, --help", "print this help");
  std::size_t column = 0;
  for (const auto& [cell, text] : rows) column = std::max(column, std::min(cell.size(), kOptionColumn));
  out << "options:\n";
  for (const auto& [cell, text] : rows) {
    out << "  " << cell;
    if (cell.size() > column) out << "\n  " << std::string(column, ' ');
    else out << std::string(column - cell.size(), ' ');
    out << "  " << wrapped(words(text), kWidth - column - 4, column + 4) << '\n';
  }
  if (!command.notes.empty()) out << '\n' << command.notes << (command.notes.ends_with('\n') ? "" : "\n");
  out << "\nexample:\n";
  std::istringstream examples{std::string(command.example)};
  for (std::string line; std::getline(examples, line);) out << "  " << line << '\n';
}

bool asks_for_help(std::span<const std::string_view> args, std::span<const Option> options) {
  auto takes_value = [&](std::string_view arg) {
    for (const Option& option : options) {
      if (option.value.empty()) continue;
      for (const std::string& spelling : spellings_of(option)) {
        if (arg == spelling) return true;
      }
    }
    return false;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") return true;
    if (takes_value(args[i])) ++i;  // the next word is the value, whatever it looks like
  }
  return false;
}

}  // namespace collcheck::cli
