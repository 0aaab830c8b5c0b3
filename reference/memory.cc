// Memory estimates: adding parts without wrapping round, saying them in words, and the bytes of
// a case's buffers and of its oracle.
#include "reference/memory.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace collcheck {

std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b) {
  constexpr std::uint64_t kMost = std::numeric_limits<std::uint64_t>::max();
  if (a != 0 && b > kMost / a) return kMost;
  return a * b;
}

std::uint64_t saturating_sum(std::uint64_t a, std::uint64_t b) {
  constexpr std::uint64_t kMost = std::numeric_limits<std::uint64_t>::max();
  return a > kMost - b ? kMost : a + b;
}

std::string format_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  auto value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

void MemoryEstimate::add(std::string_view name, std::uint64_t bytes, std::string detail) {
  for (MemoryPart& part : parts) {
    if (part.name != name) continue;
    part.bytes = saturating_sum(part.bytes, bytes);
    if (part.detail.empty()) part.detail = std::move(detail);
    return;
  }
  parts.push_back(MemoryPart{std::string(name), bytes, std::move(detail)});
}

void MemoryEstimate::add(const MemoryEstimate& other) {
  for (const MemoryPart& part : other.parts) add(part.name, part.bytes, part.detail);
}

std::uint64_t MemoryEstimate::total() const {
  std::uint64_t sum = 0;
  for (const MemoryPart& part : parts) sum = saturating_sum(sum, part.bytes);
  return sum;
}

std::uint64_t MemoryEstimate::part(std::string_view name) const {
  for (const MemoryPart& part : parts) {
    if (part.name == name) return part.bytes;
  }
  return 0;
}

std::string MemoryEstimate::describe() const {
  std::string out;
  for (const MemoryPart& part : parts) {
    if (!out.empty()) out += "; ";
    out += part.name + " " + format_bytes(part.bytes) + (part.detail.empty() ? "" : ": " + part.detail);
  }
  return out;
}

MemoryEstimate case_buffers(const Case& c, std::size_t guard_elements) {
  const std::uint64_t element = size_of(c.dtype);
  const std::uint64_t around = 2 * guard_elements + c.offset;
  const std::uint64_t input = saturating_product(input_elements(c) + around, element);
  const std::uint64_t output = saturating_product(output_elements(c) + around, element);
  const auto nranks = static_cast<std::uint64_t>(std::max(c.nranks, 1));
  MemoryEstimate estimate;
  if (c.in_place) {
    const std::uint64_t both = std::max(input, output);
    estimate.add("buffers", saturating_product(nranks, both),
                 std::to_string(nranks) + " ranks x " + format_bytes(both) + " in place");
  } else {
    estimate.add(
        "buffers", saturating_product(nranks, saturating_sum(input, output)),
        std::to_string(nranks) + " ranks x (" + format_bytes(input) + " in + " + format_bytes(output) + " out)");
  }
  return estimate;
}

MemoryEstimate oracle_memory(const Case& c) {
  // Data, and for floats checked against a bound: the bound (a double), the accepted outcomes
  // (a byte) and min/max's alternative (a double).
  const bool bounded =
      is_float(c.dtype) && reduces(c.collective) && !(c.values == ValueKind::Exact && c.op != RedOp::Avg);
  const std::uint64_t per_element = size_of(c.dtype) + (bounded ? 17 : 0);
  const std::uint64_t outputs = rank_identical(c.collective) ? 1 : static_cast<std::uint64_t>(std::max(c.nranks, 1));
  const std::uint64_t one = saturating_product(output_elements(c), per_element);
  MemoryEstimate estimate;
  estimate.add("oracle", saturating_product(outputs, one),
               std::to_string(outputs) + " expected output" + (outputs == 1 ? "" : "s") + " x " + format_bytes(one));
  return estimate;
}

}  // namespace collcheck
