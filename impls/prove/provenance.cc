// The provenance sets' text form and their union (provenance.h).
#include "impls/prove/provenance.h"

#include <algorithm>
#include <tuple>

namespace collcheck::provenance {

std::string show(std::span<const Run> runs) {
  if (runs.empty()) return "{}";
  std::string out = "{";
  for (const Run& run : runs) {
    if (out.size() > 1) out += ", ";
    out += "index " + std::to_string(run.index) + ": rank" + (run.end - run.first > 1 ? "s " : " ") +
           std::to_string(run.first) + (run.end - run.first > 1 ? ".." + std::to_string(run.end - 1) : "");
  }
  return out + "}";
}

Union combine(std::span<const Run> a, std::span<const Run> b) {
  Union u;
  u.runs.reserve(a.size() + b.size());
  auto less = [](const Run& x, const Run& y) { return std::tie(x.index, x.first) < std::tie(y.index, y.first); };
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const Run next = (j == b.size() || (i < a.size() && less(a[i], b[j]))) ? a[i++] : b[j++];
    if (!u.runs.empty() && u.runs.back().index == next.index) {
      Run& last = u.runs.back();
      if (next.first < last.end) {
        u.shared = Run{next.index, next.first, std::min(last.end, next.end)};
        return u;
      }
      if (next.first == last.end) {
        last.end = next.end;
        continue;
      }
    }
    u.runs.push_back(next);
  }
  return u;
}

}  // namespace collcheck::provenance
