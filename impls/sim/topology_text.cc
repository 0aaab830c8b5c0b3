// The topology text format (docs/simulator.md): parse_topology() reads it line by line into a
// Topology, and load_topology() takes a preset name or the path of such a file.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "impls/sim/topology.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

// A unit a number may carry: the value is scaled by 10^exponent, then divided by `divisor`.
struct Unit {
  std::string_view text;
  int exponent;
  double divisor;
};

constexpr Unit kTimeUnits[] = {{"s", 0, 1}, {"ms", -3, 1}, {"us", -6, 1}, {"ns", -9, 1}};
constexpr Unit kBandwidthUnits[] = {{"B/s", 0, 1},   {"MB/s", 6, 1}, {"GB/s", 9, 1},
                                    {"TB/s", 12, 1}, {"Gb/s", 9, 8}, {"Tb/s", 12, 8}};

// The largest latency (seconds) and bandwidth (bytes per second) a file may give: far beyond any
// real link, and small enough that times computed from them stay finite.
constexpr double kMostLatency = 3600;
constexpr double kMostBandwidth = 1e18;

std::string unit_list(std::span<const Unit> units) {
  std::string list;
  for (const Unit& unit : units) list += (list.empty() ? "" : ", ") + std::string(unit.text);
  return list;
}

// The number's text with its power of ten moved by `shift`, parsed once: "0.7" with shift -6
// reads "0.7e-6", so 0.7us is the double nearest 7e-7, not 0.7 * 1e-6.
bool parse_scaled(std::string_view number, int shift, double& value) {
  const std::size_t e = number.find_first_of("eE");
  int exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view power = number.substr(e + 1);
    if (!power.empty() && power.front() == '+') power.remove_prefix(1);
    const auto [end, status] = std::from_chars(power.data(), power.data() + power.size(), exponent);
    if (status != std::errc{} || end != power.data() + power.size()) return false;
  }
  const std::string text =
      std::string(number.substr(0, e)) + "e" + std::to_string(static_cast<long long>(exponent) + shift);
  const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
  return status == std::errc{} && end == text.data() + text.size() && std::isfinite(value);
}

// A non-negative number (the shared decimal grammar) with an optional unit from `units` (none:
// SI base unit), at most `most` in that base unit. The error message quotes the word and says
// what is allowed.
Result<double> quantity(std::string_view word, std::span<const Unit> units, double most) {
  const std::string shown = quoted_input(word);
  if (word.starts_with('-')) return Error{"", shown + ": must not be negative"};
  double probe = 0;
  const char* number_end = std::from_chars(word.data(), word.data() + word.size(), probe).ptr;
  const std::string_view number = word.substr(0, static_cast<std::size_t>(number_end - word.data()));
  const std::string_view unit = word.substr(number.size());
  if (number.empty() || !is_decimal(number)) return Error{"", shown + ": expected a number, as in 0.7us or 450GB/s"};
  const Unit* found = nullptr;
  for (const Unit& candidate : units) {
    if (candidate.text == unit) found = &candidate;
  }
  if (!unit.empty() && found == nullptr) {
    return Error{"", shown + ": unit " + quoted_input(unit) + " is not one of " + unit_list(units)};
  }
  double value = 0;
  if (!parse_scaled(number, found ? found->exponent : 0, value))
    return Error{"", shown + ": not a finite number in range"};
  if (found) value /= found->divisor;
  if (value > most)
    return Error{"", shown + ": must be at most " + number_text(most) + " " + std::string(units[0].text)};
  return value;
}

std::vector<std::string_view> words_of(std::string_view line) {
  line = line.substr(0, line.find('#'));
  std::vector<std::string_view> words;
  constexpr std::string_view kSpace = " \t\r\v\f";
  for (std::size_t at = line.find_first_not_of(kSpace); at != std::string_view::npos;) {
    const std::size_t end = std::min(line.find_first_of(kSpace, at), line.size());
    words.push_back(line.substr(at, end - at));
    at = line.find_first_not_of(kSpace, end);
  }
  return words;
}

// Which vertices `source` reaches over the links (followed backwards when `backwards`).
std::vector<bool> reached(const Topology& t, int source, bool backwards) {
  std::vector<std::vector<int>> next(t.vertices.size());
  for (const Link& link : t.links) {
    next[static_cast<std::size_t>(backwards ? link.to : link.from)].push_back(backwards ? link.from : link.to);
  }
  std::vector<bool> seen(t.vertices.size(), false);
  seen[static_cast<std::size_t>(source)] = true;
  std::vector<int> pending{source};
  while (!pending.empty()) {
    const int v = pending.back();
    pending.pop_back();
    for (int w : next[static_cast<std::size_t>(v)]) {
      if (!seen[static_cast<std::size_t>(w)]) pending.push_back(w);
      seen[static_cast<std::size_t>(w)] = true;
    }
  }
  return seen;
}

// Reads one line at a time; every error names the line and the field it is about.
class Parser {
 public:
  Status line(int number, std::string_view text) {
    line_ = number;
    const std::vector<std::string_view> words = words_of(text);
    if (words.empty()) return Ok{};
    const std::string_view directive = words.front();
    const std::span<const std::string_view> rest(words.begin() + 1, words.end());
    if (directive == "name") return parse_name(rest);
    if (directive == "copy-bandwidth") return parse_copy_bandwidth(rest);
    if (directive == "gpu") return parse_vertex(VertexKind::Gpu, directive, rest);
    if (directive == "nic") return parse_vertex(VertexKind::Nic, directive, rest);
    if (directive == "switch") return parse_vertex(VertexKind::Switch, directive, rest);
    if (directive == "link") return parse_link(rest);
    return error(quoted_input(directive), "unknown; lines start with name, copy-bandwidth, gpu, nic, switch or link");
  }

  Result<Topology> finish() {
    if (topology_.gpus.empty()) return Error{"topology", "gpu: none declared; declare one with 'gpu NAME'"};
    const Status joined = check_joined();
    if (!joined) return joined.error();
    return std::move(topology_);
  }

 private:
  Error error(std::string_view field, const std::string& message) const {
    return Error{"topology", "line " + std::to_string(line_) + ": " + std::string(field) + ": " + message};
  }

  // Every gpu and aggregating switch reaches every other exactly when each reaches gpu 0 and
  // gpu 0 reaches each. An error names the line that declared the first one left out.
  Status check_joined() {
    const int hub = topology_.gpus.front();
    for (bool backwards : {false, true}) {
      const std::vector<bool> seen = reached(topology_, hub, backwards);
      for (std::size_t v = 0; v < seen.size(); ++v) {
        const Vertex& vertex = topology_.vertices[v];
        if (seen[v] || !(vertex.kind == VertexKind::Gpu || vertex.aggregates)) continue;
        line_ = declared_on_[v];
        return error(vertex.kind == VertexKind::Gpu ? "gpu" : "switch",
                     quoted_input(vertex.label) + (backwards ? " has no route to " : " has no route from ") +
                         quoted_input(topology_.vertices[static_cast<std::size_t>(hub)].label) +
                         "; every gpu and aggregating switch must reach every other");
      }
    }
    return Ok{};
  }

  Status parse_name(std::span<const std::string_view> rest) {
    if (rest.size() != 1) return error("name", "expected one word, got " + std::to_string(rest.size()));
    if (name_line_ > 0) return error("name", "given twice (first on line " + std::to_string(name_line_) + ")");
    name_line_ = line_;
    topology_.name = std::string(rest[0]);
    return Ok{};
  }

  Status parse_copy_bandwidth(std::span<const std::string_view> rest) {
    if (rest.size() != 1) return error("copy-bandwidth", "expected one bandwidth, as in 3TB/s");
    const Result<double> value = quantity(rest[0], kBandwidthUnits, kMostBandwidth);
    if (!value) return error("copy-bandwidth", value.error().message);
    topology_.copy_bandwidth = *value;
    return Ok{};
  }

  Status parse_vertex(VertexKind kind, std::string_view field, std::span<const std::string_view> rest) {
    if (rest.empty()) return error(field, "expected a name");
    const bool aggregates = kind == VertexKind::Switch && rest.size() >= 2 && rest[1] == "aggregates";
    const std::size_t expected = aggregates ? 2 : 1;
    if (rest.size() > expected) {
      return error(field, "unexpected " + quoted_input(rest[expected]) +
                              (kind == VertexKind::Switch ? "; only 'aggregates' may follow the name" : ""));
    }
    const std::string label(rest[0]);
    const auto [at, added] = ids_.emplace(label, static_cast<int>(topology_.vertices.size()));
    if (!added) {
      return error(field, quoted_input(label) + " already names a vertex (line " +
                              std::to_string(declared_on_[static_cast<std::size_t>(at->second)]) + ")");
    }
    if (kind == VertexKind::Gpu) topology_.gpus.push_back(at->second);
    topology_.vertices.push_back(Vertex{kind, label, aggregates});
    declared_on_.push_back(line_);
    return Ok{};
  }

  Result<int> vertex(std::string_view label) const {
    const auto found = ids_.find(std::string(label));
    if (found == ids_.end()) return error("link", "unknown vertex " + quoted_input(label));
    return found->second;
  }

  Result<LinkKind> link_kind(std::string_view word) const {
    for (LinkKind kind : {LinkKind::NVLink, LinkKind::PCIe, LinkKind::InfiniBand, LinkKind::Ethernet}) {
      if (name(kind) == word) return kind;
    }
    return error("link kind", quoted_input(word) + " is not one of nvlink, pcie, infiniband, ethernet");
  }

  Status parse_link(std::span<const std::string_view> rest) {
    if (rest.size() < 5) {
      return error("link", "expected 'link FROM TO KIND LATENCY BANDWIDTH [duplex]', got " +
                               std::to_string(rest.size()) + " words after 'link'");
    }
    const bool duplex = rest.size() >= 6 && rest[5] == "duplex";
    const std::size_t expected = duplex ? 6 : 5;
    if (rest.size() > expected)
      return error("link", "unexpected " + quoted_input(rest[expected]) + "; only 'duplex' may follow");
    const Result<int> from = vertex(rest[0]);
    if (!from) return from.error();
    const Result<int> to = vertex(rest[1]);
    if (!to) return to.error();
    if (*from == *to) return error("link", quoted_input(rest[0]) + " to itself");
    const Result<LinkKind> kind = link_kind(rest[2]);
    if (!kind) return kind.error();
    const Result<double> latency = quantity(rest[3], kTimeUnits, kMostLatency);
    if (!latency) return error("link latency", latency.error().message);
    const Result<double> bandwidth = quantity(rest[4], kBandwidthUnits, kMostBandwidth);
    if (!bandwidth) return error("link bandwidth", bandwidth.error().message);
    if (*bandwidth <= 0) return error("link bandwidth", quoted_input(rest[4]) + ": must be positive");
    topology_.links.push_back(Link{*from, *to, *kind, *latency, *bandwidth});
    if (duplex) topology_.links.push_back(Link{*to, *from, *kind, *latency, *bandwidth});
    return Ok{};
  }

  Topology topology_;
  std::unordered_map<std::string, int> ids_;  // vertex id by label
  std::vector<int> declared_on_;              // line of each vertex
  int name_line_ = 0;
  int line_ = 0;
};

}  // namespace

Result<Topology> parse_topology(std::string_view text) {
  Parser parser;
  int number = 0;
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const Status status = parser.line(++number, text.substr(at, end - at));
    if (!status) return status.error();
    at = end + 1;
  }
  return parser.finish();
}

Result<Topology> load_topology(const std::string& path_or_preset) {
  Result<Topology> preset = make_topology(path_or_preset);
  if (preset) return preset;
  std::ifstream file(path_or_preset, std::ios::binary);
  if (!file) {
    // The preset's message opens with the quoted name; the file's problem goes in between.
    const std::string name = quoted_input(path_or_preset);
    std::string problem = preset.error().message;
    if (problem.rfind(name + ": ", 0) == 0) problem.erase(0, name.size() + 2);
    return Error{"topology", name + ": not a readable file; as a preset: " + problem};
  }
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return Error{"topology", quoted_input(path_or_preset) + ": could not be read"};
  Result<Topology> parsed = parse_topology(text.str());
  if (!parsed) return Error{"topology", quoted_input(path_or_preset) + " " + parsed.error().message};
  if (parsed->name.empty()) parsed.value().name = path_or_preset;
  return parsed;
}

}  // namespace collcheck
