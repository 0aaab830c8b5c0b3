// The suite's verdict on a run and its fixed cases, built from what a backend says it runs
// (its Capabilities), so that one list serves every backend.
#include "tests/conformance/checks.h"

#include <algorithm>

#include "reference/counts.h"
#include "reference/inputs.h"
#include "reference/oracle.h"
#include "tests/support/cases.h"

namespace collcheck::conformance {
namespace {

bool lists(const auto& list, auto value) { return std::find(list.begin(), list.end(), value) != list.end(); }

// The ops a case of this collective may take: every listed op where it reduces, else sum alone.
std::vector<RedOp> ops_for(const Capabilities& capabilities, Collective collective) {
  if (!reduces(collective) || capabilities.ops.empty()) return {RedOp::Sum};
  return capabilities.ops;
}

// The first of `preferred` the backend lists, else the first dtype it lists.
DType dtype_among(const Capabilities& capabilities, std::initializer_list<DType> preferred) {
  for (DType dtype : preferred) {
    if (lists(capabilities.dtypes, dtype)) return dtype;
  }
  return capabilities.dtypes.empty() ? DType::Float32 : capabilities.dtypes.front();
}

Case make(Collective collective, DType dtype, RedOp op, std::size_t count, int nranks, std::uint64_t seed) {
  Case c = testing::make_case(collective, dtype, op, count, nranks);
  c.seed = seed;
  c.counts.clear();
  return fitted(c);
}

}  // namespace

Case fitted(Case c) {
  if (!per_rank_counts(c.collective)) {
    if (!c.counts.empty()) c.count = c.counts.front();
    c.counts.clear();
    return c;
  }
  if (c.counts.size() == counts_needed(c.collective, c.nranks)) return c;
  c.in_place = false;
  set_counts(c, spread_counts(c.collective, c.nranks, c.counts.empty() ? c.count : c.counts.front()));
  return c;
}

std::string check_run(const Case& c, const RepeatedRun& run, std::size_t calls, std::uint64_t seed_step) {
  const std::string what = to_string(c);
  if (run.outcome != Outcome::Ok) return what + ": " + std::string(name(run.outcome)) + ": " + run.error;
  if (run.calls.size() != calls) {
    return what + ": " + std::to_string(run.calls.size()) + " calls' results for " + std::to_string(calls) + " calls";
  }
  for (std::size_t k = 0; k < calls; ++k) {
    Case call = c;
    call.seed = c.seed + k * seed_step;
    const std::vector<RankResult>& ranks = run.calls[k];
    if (ranks.size() != static_cast<std::size_t>(c.nranks))
      return what + ": " + std::to_string(ranks.size()) + " ranks' results";
    Oracle oracle(call);
    for (int rank = 0; rank < c.nranks; ++rank) {
      const RankResult& result = ranks[static_cast<std::size_t>(rank)];
      const std::string where = to_string(call) + " call " + std::to_string(k) + " rank " + std::to_string(rank);
      const Verdict verdict = compare(oracle.expected(rank), rank, result.output);
      if (!verdict.ok) return where + ": " + verdict.error + "\n" + verdict.describe(c.dtype);
      if (!result.guards_intact) return where + ": a guard zone around a buffer was written";
      if (c.in_place || (k + 1 < calls && result.input.empty())) continue;
      std::vector<std::byte> input(input_elements(call, rank) * size_of(call.dtype));
      if (!input.empty()) oracle.inputs().fill(rank, 0, input);
      if (input != result.input) return where + ": the input changed out of place";
    }
  }
  return "";
}

std::vector<int> rank_counts(const Capabilities& capabilities, std::vector<int> wanted) {
  std::vector<int> allowed;
  for (int nranks : wanted) {
    if (nranks >= capabilities.min_ranks && nranks <= capabilities.max_ranks) allowed.push_back(nranks);
  }
  if (allowed.empty()) allowed.push_back(std::clamp(wanted.front(), capabilities.min_ranks, capabilities.max_ranks));
  return allowed;
}

std::vector<Case> oracle_cases(const Capabilities& capabilities, Collective collective, int nranks) {
  const std::vector<RedOp> ops = ops_for(capabilities, collective);
  const std::size_t counts[] = {0, 1, 7, 37, 101};
  std::vector<Case> cases;
  std::uint64_t seed = 100;
  auto add = [&](DType dtype, RedOp op, std::size_t count, ValueKind values, std::size_t root) {
    Case c = make(collective, dtype, op, count, nranks, seed++);
    c.values = values;
    c.root = static_cast<int>(root % static_cast<std::size_t>(nranks));
    cases.push_back(c);
  };
  for (std::size_t i = 0; i < capabilities.dtypes.size(); ++i) {
    add(capabilities.dtypes[i], ops[i % ops.size()], counts[i % 5], ValueKind::Exact, i);
  }
  const DType wide = dtype_among(capabilities, {DType::Float32, DType::Int32});
  if (reduces(collective)) {
    for (std::size_t i = 0; i < ops.size(); ++i) add(wide, ops[i], 37 + i, ValueKind::Exact, nranks - 1);
  }
  std::size_t turn = 0;
  for (DType dtype : capabilities.dtypes) {
    if (!is_float(dtype) || size_of(dtype) < 2) continue;
    for (ValueKind values : {ValueKind::Real, ValueKind::Special}) {
      add(dtype, ops[turn % ops.size()], 40, values, turn);
      ++turn;
    }
  }
  return cases;
}

std::vector<Case> every_dtype_and_op_cases(const Capabilities& capabilities, Collective collective, int nranks) {
  std::vector<Case> cases;
  if (!reduces(collective)) return cases;
  const std::size_t counts[] = {1, 7, 37};
  std::uint64_t seed = 300;
  for (DType dtype : capabilities.dtypes) {
    for (RedOp op : ops_for(capabilities, collective)) {
      Case c = make(collective, dtype, op, counts[seed % 3], nranks, seed);
      c.root = static_cast<int>(seed % static_cast<std::uint64_t>(nranks));
      cases.push_back(c);
      ++seed;
    }
  }
  return cases;
}

std::vector<Case> in_place_cases(const Capabilities& capabilities, Collective collective, int nranks) {
  if (per_rank_counts(collective)) return {};  // the v-collectives run out of place only
  const std::vector<RedOp> ops = ops_for(capabilities, collective);
  const DType dtypes[] = {dtype_among(capabilities, {DType::Float32}), dtype_among(capabilities, {DType::Int32}),
                          dtype_among(capabilities, {DType::BFloat16, DType::Float16}),
                          dtype_among(capabilities, {DType::Float64}), dtype_among(capabilities, {DType::UInt8})};
  const std::size_t counts[] = {1, 7, 37, 101};
  std::vector<Case> cases;
  for (std::size_t i = 0; i < 8; ++i) {
    Case c = make(collective, dtypes[i % 5], ops[i % ops.size()], counts[i % 4], nranks, 200 + i);
    c.in_place = true;
    c.root = static_cast<int>(i % static_cast<std::size_t>(nranks));
    c.offset = i % 3;
    c.values = i == 7 ? ValueKind::Real : ValueKind::Exact;
    cases.push_back(c);
  }
  return cases;
}

std::vector<Case> misaligned_cases(const Capabilities& capabilities, Collective collective, int nranks) {
  const std::vector<RedOp> ops = ops_for(capabilities, collective);
  const DType dtypes[] = {dtype_among(capabilities, {DType::UInt8, DType::Int8}),
                          dtype_among(capabilities, {DType::Float16, DType::BFloat16}),
                          dtype_among(capabilities, {DType::Int32, DType::Float32}),
                          dtype_among(capabilities, {DType::Float64, DType::Int64})};
  const std::size_t counts[] = {1, 7, 13};
  std::vector<Case> cases;
  std::uint64_t seed = 300;
  for (std::size_t offset = 1; offset <= 3; ++offset) {
    for (std::size_t i = 0; i < 4; ++i) {
      Case c = make(collective, dtypes[i], ops[(offset + i) % ops.size()], counts[(offset + i) % 3], nranks, seed++);
      c.offset = offset;
      c.in_place = capabilities.in_place && (offset + i) % 2 == 1 && !per_rank_counts(collective);
      c.root = static_cast<int>((offset + i) % static_cast<std::size_t>(nranks));
      cases.push_back(c);
    }
  }
  return cases;
}

Case plain_case(const Capabilities& capabilities, int nranks, std::size_t count) {
  const Collective collective =
      capabilities.collectives.empty() ? Collective::AllReduce : capabilities.collectives.front();
  const DType dtype = dtype_among(capabilities, {DType::Int32, DType::Float32});
  return make(collective, dtype, ops_for(capabilities, collective).front(), count, nranks, 7);
}

std::vector<Case> refused_cases(const Capabilities& capabilities) {
  const int nranks = rank_counts(capabilities, {3}).front();
  const Case base = plain_case(capabilities, nranks, 5);
  std::vector<Case> cases;
  // The base case with the first of `all` the backend does not list.
  auto refuse = [&](const auto& all, const auto& listed, auto change) {
    for (auto value : all) {
      if (lists(listed, value)) continue;
      Case c = base;
      change(c, value);
      cases.push_back(c);
      return;
    }
  };
  refuse(all_collectives(), capabilities.collectives, [](Case& c, Collective collective) {
    c.collective = collective;
    c = fitted(c);
  });
  refuse(all_dtypes(), capabilities.dtypes, [](Case& c, DType dtype) { c.dtype = dtype; });
  if (reduces(base.collective)) refuse(all_ops(), capabilities.ops, [](Case& c, RedOp op) { c.op = op; });
  if (capabilities.max_ranks < 64) {
    Case c = base;
    c.nranks = capabilities.max_ranks + 1;
    cases.push_back(fitted(c));
  }
  if (capabilities.min_ranks > 1) {
    Case c = base;
    c.nranks = capabilities.min_ranks - 1;
    cases.push_back(fitted(c));
  }
  return cases;
}

}  // namespace collcheck::conformance
