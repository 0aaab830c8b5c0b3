// Failure shapes, kinds and signatures for the check loop's groups.
#include "harness/failure_groups.h"

#include <cctype>

namespace collcheck {
namespace {

bool digit(char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; }

}  // namespace

std::string detail_shape(std::string_view detail) {
  detail = detail.substr(0, detail.find('\n'));
  // The fault plan a detail names (`... under PLAN: ...`) is the failure's own (Failure::plan).
  std::string without_plan;
  if (const std::size_t under = detail.find(" under "); under != std::string_view::npos) {
    const std::size_t end = detail.find(": ", under);
    without_plan = std::string(detail.substr(0, under + 7)) + "PLAN" +
                   std::string(end == std::string_view::npos ? "" : detail.substr(end));
    detail = without_plan;
  }
  std::string shape;
  for (std::size_t at = 0; at < detail.size() && shape.size() < 240; ++at) {
    if (!digit(detail[at])) {
      shape += detail[at];
      continue;
    }
    if (!shape.empty() && shape.back() == '-') shape.pop_back();
    shape += '#';
    while (at + 1 < detail.size() && (digit(detail[at + 1]) || ((detail[at + 1] == '.' || detail[at + 1] == 'e') &&
                                                                at + 2 < detail.size() && digit(detail[at + 2]))))
      ++at;
  }
  return shape;
}

FailureKind kind_of(Outcome outcome, std::string_view detail) {
  const std::string shape = detail_shape(detail);
  return FailureKind{outcome, shape.substr(0, shape.find(':'))};
}

std::string failure_kind(const std::string& backend, std::string_view property, Outcome outcome,
                         Collective collective) {
  return backend + "\n" + std::string(property) + "\n" + std::string(name(outcome)) + "\n" +
         std::string(name(collective));
}

}  // namespace collcheck
