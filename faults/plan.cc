// Fault plans: the kind names, the text form (print and parse), range checks against a world,
// and the shrinker's simpler candidates.
#include "faults/plan.h"

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reference/key_values.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

constexpr std::array<std::string_view, fault_kind_count> kind_names = {
    "drop", "delay", "corrupt", "duplicate", "reorder", "link-down", "link-flap", "straggler", "stop", "kill"};
constexpr std::array<std::string_view, 3> position_names = {"any", "first", "last"};
constexpr std::array<std::string_view, 5> place_names = {"any", "first", "last", "tail", "boundary"};

// The value of a named key (`message=last`) among `names`, in the enum's order; false if none.
template <typename Enum, std::size_t N>
bool read_name(std::string_view text, const std::array<std::string_view, N>& names, Enum& value) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) {
      value = static_cast<Enum>(i);
      return true;
    }
  }
  return false;
}

template <std::size_t N>
std::string joined(const std::array<std::string_view, N>& names) {
  std::string text;
  for (std::string_view name : names) text += (text.empty() ? "" : ", ") + std::string(name);
  return text;
}

// What a kind accepts: message faults take every trigger; link and rank events happen at a
// time only, on the one target they need.
struct KindRules {
  Target::Scope needs = Target::Scope::All;  // All: any target
  bool message_triggers = true;              // after, offset, p, times, message
  std::string_view parameters;               // the parameter keys, space separated
};

KindRules rules(FaultKind kind) {
  switch (kind) {
    case FaultKind::Drop:
    case FaultKind::Duplicate:
    case FaultKind::Reorder: return {Target::Scope::All, true, ""};
    case FaultKind::Delay: return {Target::Scope::All, true, "ms jitter"};
    case FaultKind::Corrupt: return {Target::Scope::All, true, "bits where"};
    case FaultKind::LinkDown: return {Target::Scope::Link, false, ""};
    case FaultKind::LinkFlap: return {Target::Scope::Link, false, "period"};
    case FaultKind::Straggler: return {Target::Scope::Rank, false, "factor ms"};
    case FaultKind::Stop:
    case FaultKind::Kill: return {Target::Scope::Rank, false, ""};
  }
  return {};
}

bool has_word(std::string_view words, std::string_view word) {
  while (!words.empty()) {
    const std::size_t space = words.find(' ');
    if (words.substr(0, space) == word) return true;
    if (space == std::string_view::npos) break;
    words.remove_prefix(space + 1);
  }
  return false;
}

// The keys a kind accepts, for error messages: `link, rank, at, after, offset, p, times, ms`.
std::string allowed_keys(FaultKind kind) {
  const KindRules r = rules(kind);
  std::string keys;
  auto add = [&](std::string_view key) { keys += (keys.empty() ? "" : ", ") + std::string(key); };
  if (r.needs != Target::Scope::Rank) add("link");
  if (r.needs != Target::Scope::Link) add("rank");
  add("at");
  if (r.message_triggers) {
    for (std::string_view key : {"after", "offset", "p", "times", "message"}) add(key);
  }
  std::string_view parameters = r.parameters;
  while (!parameters.empty()) {
    const std::size_t space = parameters.find(' ');
    add(parameters.substr(0, space));
    parameters.remove_prefix(space == std::string_view::npos ? parameters.size() : space + 1);
  }
  return keys;
}

bool key_allowed(FaultKind kind, std::string_view key) {
  const KindRules r = rules(kind);
  if (key == "link") return r.needs != Target::Scope::Rank;
  if (key == "rank") return r.needs != Target::Scope::Link;
  if (key == "at") return true;
  if (key == "after" || key == "offset" || key == "p" || key == "times" || key == "message") return r.message_triggers;
  return has_word(r.parameters, key);
}

// The real-valued keys, where each lives in a fault, and its range: a value must be in
// [low, high], and above low where `above_low` (p and period). Times are bounded so that no
// conversion to a clock overflows: at most a day.
struct RealKey {
  std::string_view key;
  double low, high;
  bool above_low;
  std::string_view allowed;  // for messages
};
constexpr double kMostSeconds = 86400;
constexpr double kMostMilliseconds = kMostSeconds * 1000;
constexpr RealKey kRealKeys[] = {
    {"at", 0, kMostSeconds, false, "seconds, 0..86400"},
    {"p", 0, 1, true, "0 < p <= 1"},
    {"ms", 0, kMostMilliseconds, false, "milliseconds, 0..86400000"},
    {"jitter", 0, kMostMilliseconds, false, "milliseconds, 0..86400000"},
    {"period", 0, kMostMilliseconds, true, "milliseconds, 0 < period <= 86400000"},
    {"factor", 1, 1e6, false, "1..1000000"},
};

const RealKey* find_real_key(std::string_view key) {
  for (const RealKey& real : kRealKeys) {
    if (real.key == key) return &real;
  }
  return nullptr;
}

// The member of `f` (a Fault or a const Fault) that a real key sets.
template <typename AnyFault>
auto* real_field(AnyFault& f, std::string_view key) {
  return key == "at"       ? &f.trigger.at
         : key == "p"      ? &f.trigger.p
         : key == "ms"     ? &f.ms
         : key == "jitter" ? &f.jitter
         : key == "period" ? &f.period
                           : &f.factor;
}

bool in_range(const RealKey& real, double value) {
  return value >= real.low && value <= real.high && (!real.above_low || value > real.low);
}

// An integer key's value (no sign, decimal digits) within [0, high].
template <typename T>
bool read_integer(std::string_view text, T& value, std::uint64_t high = std::numeric_limits<T>::max()) {
  Result<std::uint64_t> number = parse_integer("", text, CountRange{0, high, false, {}});
  if (number) value = static_cast<T>(*number);
  return number.ok();
}

std::string range_error(const Fault& f) {
  for (const RealKey& real : kRealKeys) {
    const double value = *real_field(f, real.key);
    if (!in_range(real, value))
      return std::string(real.key) + ": " + number_text(value) + ": must be " + std::string(real.allowed);
  }
  if (f.bits < 1 || f.bits > 64) return "bits: " + std::to_string(f.bits) + ": must be 1..64";
  const Target::Scope needs = rules(f.kind).needs;
  if (needs != Target::Scope::All && f.target.scope != needs) {
    return std::string(needs == Target::Scope::Link ? "link" : "rank") + ": " + std::string(to_string(f.kind)) +
           " needs one (" + (needs == Target::Scope::Link ? "link=A->B" : "rank=R") + ")";
  }
  if (f.target.scope == Target::Scope::Link && f.target.from == f.target.to) {
    return "link: " + std::to_string(f.target.from) + "->" + std::to_string(f.target.to) +
           ": needs two different ranks";
  }
  return "";
}

Error item_error(std::size_t item, std::string_view text, const std::string& what) {
  return Error{"--faults", "item " + std::to_string(item) + " " + quoted_input(text) + ": " + what};
}

// The keys whose values are counts or names (after, offset, times, bits, message, where) into
// `f`: what is wrong, or ""; nothing for any other key. `bad` begins the error.
std::optional<std::string> read_count_or_name(Fault& f, std::string_view key, std::string_view value,
                                              const std::string& bad) {
  if (key == "after") return read_integer(value, f.trigger.after) ? "" : bad + "a message number (0, 1, ...)";
  if (key == "offset") return read_integer(value, f.trigger.offset) ? "" : bad + "a byte offset (0, 1, ...)";
  if (key == "times") return read_integer(value, f.trigger.times) ? "" : bad + "a count (0: no limit)";
  if (key == "bits") return read_integer(value, f.bits, 64) && f.bits >= 1 ? "" : bad + "a count of bits 1..64";
  if (key == "message") {
    return read_name(value, position_names, f.trigger.message) ? "" : bad + "one of " + joined(position_names);
  }
  if (key == "where") return read_name(value, place_names, f.where) ? "" : bad + "one of " + joined(place_names);
  return std::nullopt;
}

// One `key=value` into `f`; returns what is wrong, or "".
std::string read_key(Fault& f, std::string_view key, std::string_view value) {
  if (!key_allowed(f.kind, key)) {
    return "unknown key " + quoted_input(key) + " for " + std::string(to_string(f.kind)) +
           " (allowed: " + allowed_keys(f.kind) + ")";
  }
  const std::string bad = std::string(key) + ": " + quoted_input(value) + " is not ";
  if (key == "link") {
    const std::size_t arrow = value.find("->");
    if (arrow == std::string_view::npos || !read_integer(value.substr(0, arrow), f.target.from) ||
        !read_integer(value.substr(arrow + 2), f.target.to)) {
      return bad + "a link A->B of two rank numbers";
    }
    f.target.scope = Target::Scope::Link;
    return "";
  }
  if (key == "rank") {
    f.target.scope = Target::Scope::Rank;
    return read_integer(value, f.target.rank) ? "" : bad + "a rank number (0, 1, ...)";
  }
  if (std::optional<std::string> what = read_count_or_name(f, key, value, bad)) return *what;
  const RealKey& real = *find_real_key(key);
  Result<double> number = parse_decimal(key, value, 0, std::numeric_limits<double>::max());
  if (!number) return bad + "a number (" + std::string(real.allowed) + ")";
  if (!in_range(real, *number))
    return std::string(key) + ": " + quoted_input(value) + ": must be " + std::string(real.allowed);
  *real_field(f, key) = *number;
  return "";
}

Result<Fault> parse_fault(std::size_t item, std::string_view text) {
  // `KIND:key=value:...`: every piece after the kind is a key=value, empty pieces included
  // (`drop:` is an error).
  const std::vector<std::string_view> pieces = split_list(text, ':');
  Result<FaultKind> kind = parse_fault_kind(pieces.front());
  if (!kind) return item_error(item, text, kind.error().message);
  Fault f;
  f.kind = *kind;
  std::string seen = " ";
  for (std::size_t i = 1; i < pieces.size(); ++i) {
    const KeyValue pair = split_key_value(pieces[i]);
    if (!pair.has_value || pair.key.empty()) {
      return item_error(item, text, quoted_input(pair.item) + " is not key=value (keys: " + allowed_keys(f.kind) + ")");
    }
    const std::string_view key = pair.key;
    const bool is_target = key == "link" || key == "rank";
    const std::string tag = is_target ? " target " : " " + std::string(key) + " ";
    if (seen.find(tag) != std::string::npos) {
      return item_error(item, text, std::string(key) + ": given twice" + (is_target ? " (one target per fault)" : ""));
    }
    seen += tag.substr(1);
    const std::string what = read_key(f, key, pair.value);
    if (!what.empty()) return item_error(item, text, what);
  }
  const std::string what = range_error(f);
  if (!what.empty()) return item_error(item, text, what);
  return f;
}

}  // namespace

const std::array<FaultKind, fault_kind_count>& all_fault_kinds() {
  static const std::array<FaultKind, fault_kind_count> kinds = {
      FaultKind::Drop,     FaultKind::Delay,    FaultKind::Corrupt,   FaultKind::Duplicate, FaultKind::Reorder,
      FaultKind::LinkDown, FaultKind::LinkFlap, FaultKind::Straggler, FaultKind::Stop,      FaultKind::Kill};
  return kinds;
}

std::string_view to_string(FaultKind kind) { return kind_names[static_cast<std::size_t>(kind)]; }

Result<FaultKind> parse_fault_kind(std::string_view text) {
  for (FaultKind kind : all_fault_kinds()) {
    if (to_string(kind) == text) return kind;
  }
  std::string names;
  for (std::string_view name : kind_names) names += (names.empty() ? "" : ", ") + std::string(name);
  return Error{"--faults", "unknown fault kind " + quoted_input(text) + " (kinds: " + names + ")"};
}

std::string to_string(const Fault& f) {
  const Fault d;  // the defaults, which are not printed
  std::string text(to_string(f.kind));
  auto add = [&](std::string_view key, const std::string& value) { text += ":" + std::string(key) + "=" + value; };
  if (f.target.scope == Target::Scope::Link)
    add("link", std::to_string(f.target.from) + "->" + std::to_string(f.target.to));
  if (f.target.scope == Target::Scope::Rank) add("rank", std::to_string(f.target.rank));
  if (f.trigger.at != d.trigger.at) add("at", number_text(f.trigger.at));
  if (f.trigger.after != d.trigger.after) add("after", std::to_string(f.trigger.after));
  if (f.trigger.offset != d.trigger.offset) add("offset", std::to_string(f.trigger.offset));
  if (f.trigger.p != d.trigger.p) add("p", number_text(f.trigger.p));
  if (f.trigger.times != d.trigger.times) add("times", std::to_string(f.trigger.times));
  if (f.trigger.message != d.trigger.message)
    add("message", std::string(position_names[static_cast<std::size_t>(f.trigger.message)]));
  if (f.ms != d.ms) add("ms", number_text(f.ms));
  if (f.jitter != d.jitter) add("jitter", number_text(f.jitter));
  if (f.bits != d.bits) add("bits", std::to_string(f.bits));
  if (f.where != d.where) add("where", std::string(place_names[static_cast<std::size_t>(f.where)]));
  if (f.period != d.period) add("period", number_text(f.period));
  if (f.factor != d.factor) add("factor", number_text(f.factor));
  return text;
}

std::string to_string(const FaultPlan& plan) {
  if (plan.empty()) return "none";
  std::string text;
  for (const Fault& f : plan.faults) text += (text.empty() ? "" : ";") + to_string(f);
  return text;
}

Result<FaultPlan> parse_fault_plan(std::string_view text) {
  FaultPlan plan;
  if (text.empty() || text == "none") return plan;
  const std::vector<std::string_view> faults = split_list(text, ';');
  for (std::size_t item = 1; item <= faults.size(); ++item) {
    Result<Fault> f = parse_fault(item, faults[item - 1]);
    if (!f) return f.error();
    plan.faults.push_back(*f);
  }
  return plan;
}

namespace {

// The first key `f` sets (differs from its default) that its kind does not take, or "".
std::string stray_key(const Fault& f) {
  const Fault d;
  if (f.target.scope == Target::Scope::Link && !key_allowed(f.kind, "link")) return "link";
  if (f.target.scope == Target::Scope::Rank && !key_allowed(f.kind, "rank")) return "rank";
  const std::pair<std::string_view, bool> integers[] = {{"after", f.trigger.after != d.trigger.after},
                                                        {"offset", f.trigger.offset != d.trigger.offset},
                                                        {"times", f.trigger.times != d.trigger.times},
                                                        {"message", f.trigger.message != d.trigger.message},
                                                        {"bits", f.bits != d.bits},
                                                        {"where", f.where != d.where}};
  for (const auto& [key, set] : integers) {
    if (set && !key_allowed(f.kind, key)) return std::string(key);
  }
  for (const RealKey& real : kRealKeys) {
    if (*real_field(f, real.key) != *real_field(d, real.key) && !key_allowed(f.kind, real.key)) {
      return std::string(real.key);
    }
  }
  return "";
}

// What is wrong with `f`'s target in a world of `nranks`, or "".
std::string world_error(const Fault& f, int nranks) {
  const auto out_of_range = [&](int rank) { return rank < 0 || rank >= nranks; };
  const std::string ranks = " must be 0.." + std::to_string(nranks - 1) + " in a world of " + std::to_string(nranks);
  if (f.target.scope == Target::Scope::Link && (out_of_range(f.target.from) || out_of_range(f.target.to))) {
    return "link: " + std::to_string(f.target.from) + "->" + std::to_string(f.target.to) + ": both ranks" + ranks;
  }
  if (f.target.scope == Target::Scope::Rank && out_of_range(f.target.rank)) {
    return "rank: " + std::to_string(f.target.rank) + ":" + ranks;
  }
  return "";
}

}  // namespace

Status validate(const FaultPlan& plan, int nranks) {
  for (std::size_t i = 0; i < plan.faults.size(); ++i) {
    const Fault& f = plan.faults[i];
    std::string what = range_error(f);
    if (const std::string stray = what.empty() ? stray_key(f) : ""; !stray.empty()) {
      what = stray + ": not taken by " + std::string(to_string(f.kind)) + " (allowed: " + allowed_keys(f.kind) + ")";
    }
    if (what.empty()) what = world_error(f, nranks);
    if (!what.empty()) return item_error(i + 1, to_string(f), what);
  }
  return Ok{};
}

std::vector<FaultPlan> simpler(const FaultPlan& plan) {
  std::vector<FaultPlan> candidates;
  for (std::size_t i = 0; i < plan.faults.size(); ++i) {
    FaultPlan fewer = plan;
    fewer.faults.erase(fewer.faults.begin() + static_cast<std::ptrdiff_t>(i));
    candidates.push_back(std::move(fewer));
  }
  // One field of one fault one step later or milder; caps keep every sequence of steps finite.
  for (std::size_t i = 0; i < plan.faults.size(); ++i) {
    const Fault& f = plan.faults[i];
    const bool message_triggers = rules(f.kind).message_triggers;
    auto vary = [&](bool applies, auto change) {
      if (!applies) return;
      FaultPlan milder = plan;
      change(milder.faults[i]);
      candidates.push_back(std::move(milder));
    };
    vary(f.trigger.at > 0 && f.trigger.at <= kMostSeconds / 2, [](Fault& g) { g.trigger.at *= 2; });
    vary(message_triggers && f.trigger.after < (1ull << 40),
         [](Fault& g) { g.trigger.after = g.trigger.after * 2 + 1; });
    vary(message_triggers && f.trigger.offset < (1ull << 40),
         [](Fault& g) { g.trigger.offset = g.trigger.offset * 2 + 1; });
    vary(message_triggers && f.trigger.p > 1e-6, [](Fault& g) { g.trigger.p /= 2; });
    vary(message_triggers && f.trigger.times != 1,
         [](Fault& g) { g.trigger.times = g.trigger.times == 0 ? 1 : g.trigger.times / 2; });
    vary(f.trigger.message != StreamPosition::Any, [](Fault& g) { g.trigger.message = StreamPosition::Any; });
    vary(f.bits > 1, [](Fault& g) { g.bits /= 2; });
    vary(f.where != BytePlace::Any, [](Fault& g) { g.where = BytePlace::Any; });
    vary(f.ms > 0, [](Fault& g) { g.ms = 0; });
    vary(f.ms > 1e-3, [](Fault& g) { g.ms /= 2; });
    vary(f.jitter > 0, [](Fault& g) { g.jitter = 0; });
    vary(f.jitter > 1e-3, [](Fault& g) { g.jitter /= 2; });
    vary(f.factor > 1, [](Fault& g) { g.factor = 1; });
    vary(f.factor > 1.001, [](Fault& g) { g.factor = 1 + (g.factor - 1) / 2; });
  }
  return candidates;
}

}  // namespace collcheck
