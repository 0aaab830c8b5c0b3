// Case validation and its text form: `allreduce/f32/sum/n=1000/ranks=7/root=0/...`.
#include "reference/case.h"

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "reference/counts.h"
#include "reference/key_values.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

constexpr std::array<std::string_view, 3> kValueKindNames{"exact", "real", "special"};
constexpr std::string_view kKeys = "n, counts, ranks, root, offset, values, seed, inplace, outofplace, emptynull";

Result<std::uint64_t> parse_unsigned(std::string_view field, std::string_view text) {
  return parse_integer(field, text, CountRange{});
}

Error range_error(std::string_view field, std::uint64_t value, std::string allowed) {
  return Error{std::string(field), std::to_string(value) + ": must be " + std::move(allowed)};
}

// The fields parse_case() has seen, so that a repeated key is an error.
struct Seen {
  std::optional<std::uint64_t> count, ranks, root, offset, seed;
  std::optional<ValueKind> values;
  std::optional<std::vector<std::size_t>> counts;
  std::optional<bool> in_place;
  bool empty_as_null = false;
};

// Where a numeric field's value goes; nullptr for a key that is not one.
std::optional<std::uint64_t>* number_slot(std::string_view key, Seen& seen) {
  if (key == "n") return &seen.count;
  if (key == "ranks") return &seen.ranks;
  if (key == "root") return &seen.root;
  if (key == "offset") return &seen.offset;
  if (key == "seed") return &seen.seed;
  return nullptr;
}

Status parse_values_field(std::string_view text, Seen& seen) {
  if (seen.values) return Error{"values", "given twice"};
  Result<ValueKind> kind = parse_value_kind(text);
  if (!kind) return kind.error();
  seen.values = *kind;
  return Ok{};
}

Status parse_counts_field(std::string_view text, Seen& seen) {
  if (seen.counts) return Error{"counts", "given twice"};
  Result<std::vector<std::size_t>> counts = parse_counts(text);
  if (!counts) return counts.error();
  seen.counts = std::move(*counts);
  return Ok{};
}

Status parse_field(std::string_view part, Seen& seen) {
  if (part == "emptynull") {
    if (seen.empty_as_null) return Error{"emptynull", "given twice"};
    seen.empty_as_null = true;
    return Ok{};
  }
  if (part == "inplace" || part == "outofplace") {
    if (seen.in_place) return Error{"inplace", "given twice"};
    seen.in_place = part == "inplace";
    return Ok{};
  }
  const KeyValue field = split_key_value(part);
  const std::string_view key = field.key;
  if (!field.has_value) {
    return Error{escaped_input(key), "is not a field: allowed are " + std::string(kKeys)};
  }
  if (key == "values") return parse_values_field(field.value, seen);
  if (key == "counts") return parse_counts_field(field.value, seen);
  std::optional<std::uint64_t>* slot = number_slot(key, seen);
  if (slot == nullptr) {
    return Error{escaped_input(key), "is not a field: allowed are " + std::string(kKeys)};
  }
  if (slot->has_value()) return Error{std::string(key), "given twice"};
  Result<std::uint64_t> number = parse_unsigned(key, field.value);
  if (!number) return number.error();
  *slot = *number;
  return Ok{};
}

}  // namespace

std::string_view name(ValueKind kind) { return kValueKindNames[static_cast<std::size_t>(kind)]; }

Result<ValueKind> parse_value_kind(std::string_view text) {
  for (std::size_t i = 0; i < kValueKindNames.size(); ++i) {
    if (text == kValueKindNames[i]) return static_cast<ValueKind>(i);
  }
  return Error{"values", quoted_input(text) + ": must be one of exact, real, special"};
}

Status validate(const Case& c) {
  if (c.nranks < 1 || c.nranks > kMaxRanks) {
    return Error{"ranks", std::to_string(c.nranks) + ": must be 1.." + std::to_string(kMaxRanks)};
  }
  if (c.root < 0 || c.root >= c.nranks) {
    return Error{"root", std::to_string(c.root) + ": must be 0.." + std::to_string(c.nranks - 1) +
                             " (ranks=" + std::to_string(c.nranks) + ")"};
  }
  if (per_rank_counts(c.collective) || !c.counts.empty()) {
    Status counts = validate_counts(c);
    if (!counts) return counts;
    if (c.offset > kMaxOffset) return range_error("offset", c.offset, "0.." + std::to_string(kMaxOffset));
    return Ok{};
  }
  if (c.count > kMaxCount) return range_error("n", c.count, "0.." + std::to_string(kMaxCount));
  const std::size_t largest = std::max(input_elements(c), output_elements(c));
  if (largest > kMaxBufferElements) {
    return range_error("n", c.count,
                       "at most " + std::to_string(kMaxBufferElements / static_cast<std::size_t>(c.nranks)) + " for " +
                           std::string(name(c.collective)) + " on " + std::to_string(c.nranks) +
                           " ranks (a buffer holds at most " + std::to_string(kMaxBufferElements) + " elements)");
  }
  if (c.offset > kMaxOffset) return range_error("offset", c.offset, "0.." + std::to_string(kMaxOffset));
  return Ok{};
}

std::string to_string(const Case& c) {
  std::string out;
  out += name(c.collective);
  out += '/';
  out += name(c.dtype);
  out += '/';
  out += name(c.op);
  out += "/n=" + std::to_string(c.count);
  if (per_rank_counts(c.collective)) out += "/counts=" + format_counts(c.counts);
  out += "/ranks=" + std::to_string(c.nranks);
  out += "/root=" + std::to_string(c.root);
  out += c.in_place ? "/inplace" : "/outofplace";
  out += "/offset=" + std::to_string(c.offset);
  if (c.empty_as_null) out += "/emptynull";
  out += "/values=";
  out += name(c.values);
  out += "/seed=" + std::to_string(c.seed);
  return out;
}

Result<Case> parse_case(std::string_view text) {
  const std::vector<std::string_view> parts = split_list(text, '/');
  if (parts.size() < 3) {
    return Error{"case", quoted_input(text) +
                             ": must be COLLECTIVE/DTYPE/OP/n=COUNT/ranks=N[/root=R][/inplace]"
                             "[/offset=K][/emptynull][/values=exact|real|special][/seed=S]"};
  }
  Case c;
  Result<Collective> collective = parse_collective(parts[0]);
  if (!collective) return collective.error();
  Result<DType> dtype = parse_dtype(parts[1]);
  if (!dtype) return dtype.error();
  Result<RedOp> op = parse_op(parts[2]);
  if (!op) return op.error();
  c.collective = *collective;
  c.dtype = *dtype;
  c.op = *op;

  Seen seen;
  for (std::size_t i = 3; i < parts.size(); ++i) {
    Status status = parse_field(parts[i], seen);
    if (!status) return status.error();
  }
  const bool vector = per_rank_counts(c.collective);
  if (vector && !seen.counts) {
    return Error{"counts", "is missing: " + std::string(name(c.collective)) + " must say counts=C0,C1,..."};
  }
  if (!seen.count && !vector) return Error{"n", "is missing: the case must say n=COUNT"};
  if (!seen.ranks) return Error{"ranks", "is missing: the case must say ranks=N"};
  // Values too large for the Case's int fields are refused here; validate() does the rest.
  if (*seen.ranks > static_cast<std::uint64_t>(kMaxRanks)) {
    return range_error("ranks", *seen.ranks, "1.." + std::to_string(kMaxRanks));
  }
  if (seen.root && *seen.root > static_cast<std::uint64_t>(kMaxRanks)) {
    return range_error("root", *seen.root, "0.." + std::to_string(std::max<std::uint64_t>(*seen.ranks, 1) - 1));
  }
  if (seen.counts) c.counts = std::move(*seen.counts);
  c.count = seen.count ? static_cast<std::size_t>(*seen.count) : counts_total(c.counts);
  c.nranks = static_cast<int>(*seen.ranks);
  c.root = static_cast<int>(seen.root.value_or(0));
  c.in_place = seen.in_place.value_or(false);
  c.offset = static_cast<std::size_t>(seen.offset.value_or(0));
  c.empty_as_null = seen.empty_as_null;
  c.values = seen.values.value_or(ValueKind::Exact);
  c.seed = seen.seed.value_or(0);
  Status valid = validate(c);
  if (!valid) return valid.error();
  return c;
}

std::size_t input_elements(const Case& c) {
  if (!per_rank_counts(c.collective)) return input_elements(c.collective, c.count, c.nranks);
  const std::vector<std::size_t> inputs = rank_elements(c).inputs;
  return inputs.empty() ? 0 : *std::max_element(inputs.begin(), inputs.end());
}

std::size_t output_elements(const Case& c) {
  if (!per_rank_counts(c.collective)) return output_elements(c.collective, c.count, c.nranks);
  const std::vector<std::size_t> outputs = rank_elements(c).outputs;
  return outputs.empty() ? 0 : *std::max_element(outputs.begin(), outputs.end());
}

}  // namespace collcheck
