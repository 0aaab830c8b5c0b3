// Properties of the Case text form: every valid case survives to_string and parse_case
// unchanged, and no string, however malformed, makes parse_case crash or accept junk.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "reference/case.h"
#include "reference/counts.h"

namespace collcheck {

// How RapidCheck prints a counterexample: the replay text itself.
void showValue(const Case& c, std::ostream& os) { os << to_string(c); }

namespace {

rc::Gen<Case> valid_case() {
  return rc::gen::exec([] {
    Case c;
    c.collective = *rc::gen::elementOf(std::vector<Collective>(all_collectives().begin(), all_collectives().end()));
    c.dtype = *rc::gen::elementOf(std::vector<DType>(all_dtypes().begin(), all_dtypes().end()));
    c.op = *rc::gen::elementOf(std::vector<RedOp>(all_ops().begin(), all_ops().end()));
    c.count = *rc::gen::inRange<std::size_t>(0, 1000001);
    c.nranks = *rc::gen::inRange(1, kMaxRanks + 1);
    c.root = *rc::gen::inRange(0, c.nranks);
    c.in_place = *rc::gen::arbitrary<bool>();
    c.offset = *rc::gen::inRange<std::size_t>(0, 4097);
    c.empty_as_null = *rc::gen::arbitrary<bool>();
    c.values = *rc::gen::element(ValueKind::Exact, ValueKind::Real, ValueKind::Special);
    c.seed = *rc::gen::arbitrary<std::uint64_t>();
    if (per_rank_counts(c.collective)) {  // a count per rank (or pair of ranks), out of place
      c.nranks = *rc::gen::inRange(1, 9);
      c.root = *rc::gen::inRange(0, c.nranks);
      c.in_place = false;
      set_counts(c, *rc::gen::container<std::vector<std::size_t>>(counts_needed(c.collective, c.nranks),
                                                                  rc::gen::inRange<std::size_t>(0, 1001)));
    }
    return c;
  });
}

// Pieces that are almost valid, so junk reaches deep into the parser rather than failing
// on the first character.
rc::Gen<std::string> junk_piece() {
  return rc::gen::oneOf(
      rc::gen::element<std::string>("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce",
                                    "allgatherv", "reducescatterv", "alltoallv", "counts", ",", "f32", "bf16", "f8e4m3",
                                    "u64", "sum", "avg", "n", "ranks", "root", "offset", "values", "seed", "inplace",
                                    "outofplace", "emptynull", "exact", "special", "=", "/", "-", "0", "1", "4096",
                                    "4097", "18446744073709551616", "", " ", "\t", "\xff", std::string(1, '\0')),
      rc::gen::map(rc::gen::inRange<std::uint64_t>(0, UINT64_MAX), [](std::uint64_t n) { return std::to_string(n); }),
      rc::gen::arbitrary<std::string>());
}

std::vector<std::string> split_parts(const std::string& text) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == '/') {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  return parts;
}

std::string join_parts(const std::vector<std::string>& parts) {
  std::string text;
  for (std::size_t i = 0; i < parts.size(); ++i) text += (i == 0 ? "" : "/") + parts[i];
  return text;
}

rc::Gen<std::string> junk_text() {
  return rc::gen::oneOf(rc::gen::arbitrary<std::string>(),
                        rc::gen::map(rc::gen::container<std::vector<std::string>>(junk_piece()),
                                     [](const std::vector<std::string>& pieces) {
                                       std::string text;
                                       for (const std::string& piece : pieces) text += piece;
                                       return text;
                                     }),
                        // A valid case's text with a few characters replaced by a piece.
                        rc::gen::exec([] {
                          const std::string text = to_string(*valid_case());
                          const std::string piece = *junk_piece();
                          const std::size_t at = *rc::gen::inRange<std::size_t>(0, text.size() + 1);
                          const std::size_t cut =
                              *rc::gen::inRange<std::size_t>(0, std::min<std::size_t>(4, text.size() - at) + 1);
                          return text.substr(0, at) + piece + text.substr(at + cut);
                        }),
                        // A valid case's text with one part dropped, doubled, swapped or replaced.
                        rc::gen::exec([] {
                          std::vector<std::string> parts = split_parts(to_string(*valid_case()));
                          const std::size_t i = *rc::gen::inRange<std::size_t>(0, parts.size());
                          const std::size_t j = *rc::gen::inRange<std::size_t>(0, parts.size());
                          switch (*rc::gen::inRange(0, 4)) {
                            case 0: parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(i)); break;
                            case 1: parts.insert(parts.begin() + static_cast<std::ptrdiff_t>(j), parts[i]); break;
                            case 2: std::swap(parts[i], parts[j]); break;
                            default: parts[i] = *junk_piece();
                          }
                          return join_parts(parts);
                        }));
}

RC_GTEST_PROP(CaseProperties, TextRoundTrips, ()) {
  const Case c = *valid_case();
  RC_ASSERT(validate(c).ok());
  const std::string text = to_string(c);
  const Result<Case> parsed = parse_case(text);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == c);
  RC_ASSERT(to_string(*parsed) == text);
}

// Whatever parse_case accepts is a valid case, and its own text parses back to it.
RC_GTEST_PROP(CaseProperties, JunkIsRejectedOrValid, ()) {
  const std::string text = *junk_text();
  const Result<Case> parsed = parse_case(text);
  if (!parsed.ok()) {
    RC_ASSERT(!parsed.error().message.empty());
    return;
  }
  RC_ASSERT(validate(*parsed).ok());
  const Result<Case> again = parse_case(to_string(*parsed));
  RC_ASSERT(again.ok());
  RC_ASSERT(*again == *parsed);
}

}  // namespace
}  // namespace collcheck
