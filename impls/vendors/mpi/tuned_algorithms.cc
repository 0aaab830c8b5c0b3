// The table of Open MPI's coll/tuned algorithms and the grammar of `mpi:COLL=ALG,...`: which
// algorithm (and segment size) each collective is forced to, and the environment that forces it.
#include "impls/vendors/mpi/tuned_algorithms.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "reference/key_values.h"
#include "reference/numbers.h"

namespace collcheck::tuned {
namespace {

std::string collective_choices_text() {
  std::string out;
  for (const TunedCollective& t : kTuned) out += (out.empty() ? "" : ", ") + std::string(t.spec_key());
  return out + " (reduce_scatter means reduce_scatter_block; MPI_Reduce_scatter is reducescatterv)";
}

std::string segmented_choices_text() {
  std::string out;
  for (const TunedCollective& t : kTuned) {
    if (t.segmented) out += (out.empty() ? "" : ", ") + std::string(t.spec_key());
  }
  return out;
}

const TunedCollective* find_collective(std::string_view text) {
  for (const TunedCollective& t : kTuned) {
    if (text == t.spec_key() || (!t.alias.empty() && text == t.alias)) return &t;
  }
  return nullptr;
}

std::string variable(const TunedCollective& t, std::string_view suffix) {
  return "OMPI_MCA_coll_tuned_" + std::string(t.mca) + "_algorithm" + std::string(suffix);
}

// A non-negative decimal int (no sign, no suffix), else nothing.
std::optional<int> parse_int(std::string_view text) {
  Result<std::uint64_t> value =
      parse_integer("", text, CountRange{0, static_cast<std::uint64_t>(std::numeric_limits<int>::max()), false, {}});
  if (!value) return std::nullopt;
  return static_cast<int>(*value);
}

Result<int> parse_algorithm(const TunedCollective& t, std::string_view text, std::string_view spec) {
  const int count = algorithm_count(t);
  for (int k = 0; k < count; ++k) {
    if (text == t.algorithms[static_cast<std::size_t>(k)]) return k + 1;
  }
  if (const std::optional<int> number = parse_int(text); number && *number >= 1 && *number <= count) return *number;
  return Error{"--backend", quoted_input(spec) + ": " + quoted_input(text) + " is not an Open MPI " +
                                std::string(t.mca) + " algorithm: " + algorithm_choices(t)};
}

// One `KEY=VALUE` of the options: `COLL=ALG` or `COLL_segsize=BYTES`.
Status parse_item(const KeyValue& item, std::string_view spec, Selection& s) {
  const std::string_view key = item.key;
  const std::string_view value = item.value;
  const bool segment = key.ends_with("_segsize");
  const TunedCollective* t = find_collective(segment ? key.substr(0, key.size() - 8) : key);
  const std::string prefix = quoted_input(spec) + ": ";
  if (t == nullptr) {
    return Error{"--backend", prefix + quoted_input(key) + " is not a collective: use COLL=ALGORITHM or " +
                                  "COLL_segsize=BYTES with COLL one of " + collective_choices_text() +
                                  ", or all-algorithms alone"};
  }
  if (!item.has_value) {
    return Error{"--backend", prefix + quoted_input(item.item) + " needs =" + (segment ? "BYTES" : "ALGORITHM")};
  }
  const auto i = static_cast<std::size_t>(t - kTuned.data());
  if (segment) {
    if (!t->segmented) {
      return Error{"--backend", prefix + std::string(key) + ": Open MPI's " + std::string(t->mca) +
                                    " has no segment size; the collectives with one: " + segmented_choices_text()};
    }
    const std::optional<int> bytes = parse_int(value);
    if (!bytes || *bytes < 0) {
      return Error{"--backend", prefix + std::string(key) + " " + quoted_input(value) + ": must be bytes, 0.." +
                                    std::to_string(std::numeric_limits<int>::max())};
    }
    s.segment_bytes[i] = *bytes;
    return Ok{};
  }
  if (s.algorithm[i] != 0) return Error{"--backend", prefix + std::string(t->spec_key()) + " is selected twice"};
  Result<int> algorithm = parse_algorithm(*t, value, spec);
  if (!algorithm) return algorithm.error();
  s.algorithm[i] = *algorithm;
  return Ok{};
}

}  // namespace

int algorithm_count(const TunedCollective& t) {
  return static_cast<int>(std::count_if(t.algorithms.begin(), t.algorithms.end(), [](auto a) { return !a.empty(); }));
}

bool uses_segments(const TunedCollective& t, int algorithm) {
  if (algorithm < 1 || algorithm > algorithm_count(t)) return false;
  const std::string_view name = t.algorithms[static_cast<std::size_t>(algorithm - 1)];
  if (t.mca == "bcast") return name != "basic_linear";
  if (t.mca == "reduce") return name != "linear" && name != "rabenseifner";
  return t.mca == "allreduce" && name == "segmented_ring";
}

std::string algorithm_choices(const TunedCollective& t) {
  std::string out;
  for (int k = 0; k < algorithm_count(t); ++k) {
    out += (out.empty() ? "" : ", ") + std::to_string(k + 1) + " " +
           std::string(t.algorithms[static_cast<std::size_t>(k)]);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> environment_of(const Selection& s) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!s.any()) return out;
  out.emplace_back("OMPI_MCA_coll_tuned_use_dynamic_rules", "1");
  for (std::size_t i = 0; i < kTuned.size(); ++i) {
    if (s.algorithm[i] == 0) continue;
    out.emplace_back(variable(kTuned[i], ""), std::to_string(s.algorithm[i]));
    if (s.segment_bytes[i] != 0)
      out.emplace_back(variable(kTuned[i], "_segmentsize"), std::to_string(s.segment_bytes[i]));
  }
  return out;
}

Result<Selection> parse_selection(std::string_view options, std::string_view spec) {
  Selection s;
  Result<std::vector<KeyValue>> items = split_key_values(options);
  if (!items) return Error{"--backend", quoted_input(spec) + ": " + items.error().message};
  for (const KeyValue& item : *items) {
    Status parsed = parse_item(item, spec, s);
    if (!parsed) return parsed.error();
  }
  for (std::size_t i = 0; i < kTuned.size(); ++i) {
    if (s.segment_bytes[i] != 0 && s.algorithm[i] == 0) {
      return Error{"--backend", quoted_input(spec) + ": " + std::string(kTuned[i].spec_key()) + "_segsize needs " +
                                    std::string(kTuned[i].spec_key()) +
                                    "=ALGORITHM too (Open MPI uses a segment size only with a forced algorithm)"};
    }
  }
  return s;
}

}  // namespace collcheck::tuned
