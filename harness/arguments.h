// Command-line options of the form `--flag value` and `--switch`, checked against the table of
// options a command knows (the same table its help is printed from), and the number grammars
// they use (`1..1024`, `0,1,7`, `64K`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reference/result.h"

namespace collcheck::cli {

// How often an option may be given.
enum class Use { Once, Repeatable, Required };

// One option of a command: its parser and its help (harness/command_help.h) read the same row,
// so what `--help` says and what the command accepts cannot drift apart.
struct Option {
  std::string_view name;      // the long name without `--`: "ranks"
  std::string_view value;     // what the value is, for help: "LIST", "0|1"; empty for a switch
  std::string_view fallback;  // what Arguments::get returns when the option is absent; empty: none
  std::string_view help;      // one line; says the default in words where it is not one value
  Use use = Use::Once;
  std::string_view spellings{};  // other spellings, space-separated: "-b", "-w --warmup-iters"
};

// The option's spellings besides `--name`: {"-w", "--warmup-iters"}.
std::vector<std::string_view> other_spellings(const Option& option);

class Arguments {
 public:
  // `flags` take a value (`--ranks 8`, also `--ranks=8`), `switches` do not (`--verbose`).
  // Errors name the flag and list the ones the command knows.
  static Result<Arguments> parse(std::span<const std::string_view> args, std::span<const std::string_view> flags,
                                 std::span<const std::string_view> switches);
  // The options of a command's table, by their long names; get() falls back to the table's defaults.
  static Result<Arguments> parse(std::span<const std::string_view> args, std::span<const Option> options);

  bool has(std::string_view flag) const { return values_.contains(std::string(flag)); }
  // Every value given for a repeatable flag, in order; empty when absent.
  std::vector<std::string> all(std::string_view flag) const;
  // The last value given, else `fallback` (a default computed from other options), else the
  // default of the table the arguments were parsed with.
  std::string get(std::string_view flag, std::string_view fallback = "") const;

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::map<std::string, std::string, std::less<>> defaults_;
};

// An integer with an optional K/M/G suffix (powers of 1024) within [low, high].
Result<std::uint64_t> parse_count(std::string_view field, std::string_view text, std::uint64_t low, std::uint64_t high);

// --jobs N (1..256) where given, else `absent`; the cores of this machine are cores().
Result<unsigned> jobs_option(const Arguments& args, unsigned absent);
unsigned cores();  // 1..256, 1 where the machine does not say

// The row of --progress in the option table of every command whose runs may take minutes.
inline constexpr Option kProgressOption{
    "progress", "T|never|auto", "auto",
    "a line on stderr every T of wall time while a long run goes on (30s, 1m); auto: 10s where stderr is a terminal"};
// The file a FILE option names (`--csv FILE`, `--json FILE`), opened for writing before anything
// runs, so that a long run never ends in "cannot write"; null where the option is not given, an
// error naming the option where the file cannot be opened.
Result<std::unique_ptr<std::ofstream>> open_output(const Arguments& args, std::string_view flag);

// --progress: seconds between lines: a duration, `never` (0), or `auto` (10 where stderr is a
// terminal, else 0).
Result<double> progress_option(const Arguments& args);

// `A..B` or `N` (the range N..N), each end a parse_count within [low, high], A <= B.
Result<std::pair<std::uint64_t, std::uint64_t>> parse_range(std::string_view flag, const std::string& text,
                                                            std::uint64_t low, std::uint64_t high);

// A set of integers: comma-separated items, each `N` or `A..B` (inclusive), within [low, high],
// returned sorted without repeats: `1..4,8,16` -> {1, 2, 3, 4, 8, 16}. At most a million values in
// all (items counted with their repeats).
Result<std::vector<std::uint64_t>> parse_set(std::string_view field, std::string_view text, std::uint64_t low,
                                             std::uint64_t high);

}  // namespace collcheck::cli
