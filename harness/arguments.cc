// Parsing `--flag value` options and the integer grammars of the command line.
#include "harness/arguments.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "reference/key_values.h"
#include "reference/numbers.h"

namespace collcheck::cli {
namespace {

std::string join(std::span<const std::string_view> names, std::string_view prefix) {
  std::string out;
  for (std::string_view name : names) out += (out.empty() ? "" : ", ") + std::string(prefix) + std::string(name);
  return out;
}

bool contains(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

Result<Arguments> Arguments::parse(std::span<const std::string_view> args, std::span<const std::string_view> flags,
                                   std::span<const std::string_view> switches) {
  Arguments parsed;
  const std::string known = join(flags, "--") + (switches.empty() ? "" : ", " + join(switches, "--"));
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (!arg.starts_with("--")) return Error{escaped_input(arg), "is not an option: options are " + known};
    arg.remove_prefix(2);
    std::string_view inline_value;
    const bool has_inline = arg.find('=') != std::string_view::npos;
    if (has_inline) {
      inline_value = arg.substr(arg.find('=') + 1);
      arg = arg.substr(0, arg.find('='));
    }
    if (contains(switches, arg) && !has_inline) {
      parsed.values_[std::string(arg)].emplace_back("true");
      continue;
    }
    if (!contains(flags, arg)) return Error{"--" + escaped_input(arg), "is not an option: options are " + known};
    if (!has_inline) {
      if (i + 1 == args.size()) return Error{"--" + std::string(arg), "needs a value"};
      inline_value = args[++i];
    }
    parsed.values_[std::string(arg)].emplace_back(inline_value);
  }
  return parsed;
}

std::vector<std::string> Arguments::all(std::string_view flag) const {
  const auto found = values_.find(std::string(flag));
  return found == values_.end() ? std::vector<std::string>{} : found->second;
}

std::string Arguments::get(std::string_view flag, std::string_view fallback) const {
  const auto found = values_.find(std::string(flag));
  if (found != values_.end()) return found->second.back();
  const auto table_default = defaults_.find(flag);
  return fallback.empty() && table_default != defaults_.end() ? table_default->second : std::string(fallback);
}

std::vector<std::string_view> other_spellings(const Option& option) {
  std::vector<std::string_view> spellings;
  for (std::string_view rest = option.spellings; !rest.empty();) {
    const std::size_t space = std::min(rest.find(' '), rest.size());
    if (space > 0) spellings.push_back(rest.substr(0, space));
    rest.remove_prefix(std::min(space + 1, rest.size()));
  }
  return spellings;
}

Result<Arguments> Arguments::parse(std::span<const std::string_view> args, std::span<const Option> options) {
  std::vector<std::string_view> flags, switches;
  for (const Option& option : options) (option.value.empty() ? switches : flags).push_back(option.name);
  Result<Arguments> parsed = parse(args, flags, switches);
  if (!parsed) return parsed;
  for (const Option& option : options) {
    if (!option.fallback.empty()) parsed->defaults_.emplace(option.name, option.fallback);
  }
  return parsed;
}

Result<std::uint64_t> parse_count(std::string_view field, std::string_view text, std::uint64_t low,
                                  std::uint64_t high) {
  return parse_integer(field, text, CountRange{low, high, true, {}});
}

Result<unsigned> jobs_option(const Arguments& args, unsigned absent) {
  if (!args.has("jobs")) return absent;
  Result<std::uint64_t> jobs = parse_count("--jobs", args.get("jobs"), 1, 256);
  if (!jobs) return jobs.error();
  return static_cast<unsigned>(*jobs);
}

Result<std::unique_ptr<std::ofstream>> open_output(const Arguments& args, std::string_view flag) {
  if (!args.has(flag)) return std::unique_ptr<std::ofstream>{};
  const std::string path = args.get(flag);
  auto file = std::make_unique<std::ofstream>(path);
  if (!*file) return Error{"--" + std::string(flag), quoted_input(path) + ": cannot be opened for writing"};
  return file;
}

Result<double> progress_option(const Arguments& args) {
  const std::string text = args.get("progress");
  if (text == "never") return 0.0;
  if (text == "auto") return isatty(STDERR_FILENO) != 0 ? 10.0 : 0.0;
  Result<double> every = parse_duration("--progress", text, DurationRange{0, true, 86400});
  if (!every) return Error{"--progress", every.error().message + "; or never, or auto"};
  return every;
}

unsigned cores() { return std::clamp(std::thread::hardware_concurrency(), 1U, 256U); }  // 0 where it is not known

// The most values a set may hold: more would be a typo, and memory spent before anything runs.
constexpr std::uint64_t kMostSetValues = 1'000'000;

Result<std::vector<std::uint64_t>> parse_set(std::string_view field, std::string_view text, std::uint64_t low,
                                             std::uint64_t high) {
  std::vector<std::uint64_t> values;
  for (std::string_view item : split_list(text)) {
    const std::size_t dots = item.find("..");
    Result<std::uint64_t> first = parse_count(field, item.substr(0, dots), low, high);
    if (!first) return first.error();
    Result<std::uint64_t> last =
        dots == std::string_view::npos ? first : parse_count(field, item.substr(dots + 2), low, high);
    if (!last) return last.error();
    if (*last < *first) return Error{std::string(field), quoted_input(item) + ": the range is empty"};
    // A million values in all, however many items carry them (each item alone, or many small ones).
    if (*last - *first >= kMostSetValues - values.size())
      return Error{std::string(field), quoted_input(item) + ": more than a million values in the set"};
    for (std::uint64_t value = *first;; ++value) {  // counts up to `last` even when it is the type's largest
      values.push_back(value);
      if (value == *last) break;
    }
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// `A..B` or `N` (the range N..N), each end within [low, high].
Result<std::pair<std::uint64_t, std::uint64_t>> parse_range(std::string_view flag, const std::string& text,
                                                            std::uint64_t low, std::uint64_t high) {
  const std::size_t dots = text.find("..");
  Result<std::uint64_t> first = parse_count(flag, text.substr(0, dots), low, high);
  if (!first) return first.error();
  Result<std::uint64_t> last = dots == std::string::npos ? first : parse_count(flag, text.substr(dots + 2), low, high);
  if (!last) return last.error();
  if (*last < *first) return Error{std::string(flag), quoted_input(text) + ": the range is empty"};
  return std::pair{*first, *last};
}

}  // namespace collcheck::cli
