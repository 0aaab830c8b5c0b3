// The properties: each runs what it needs on the backend and judges with the oracle or by
// comparing runs bit for bit; the outcome properties are in outcome_properties.cc.
#include "properties/property.h"

#include <algorithm>
#include <optional>

#include "properties/outcome_properties.h"

#include "reference/dtype.h"
#include "reference/oracle.h"
#include "reference/random.h"

namespace collcheck {
namespace {

// An extra run that did not complete: under faults a `detected` ending is no evidence either way
// (liveness judges outcomes), so the property skips; anything else fails it.
std::optional<PropertyResult> incomplete(const RepeatedRun& run, const PropertyContext& context,
                                         const std::string& what) {
  if (completed(run)) return std::nullopt;
  if (context.under_faults() && run.outcome == Outcome::Detected) {
    return skip(what + " ended detected under the faults (no evidence either way): " + run.error);
  }
  return fail(what + " did not complete: " + run.error);
}

PropertyResult oracle_property(const Case& c, Backend&, const RepeatedRun& base, const PropertyContext&) {
  if (!completed(base)) return skip("the run did not complete (see liveness)");
  return match_oracle(c, base.calls[0], "");
}

// The first rank whose output differs from rank 0's, described.
std::string first_difference(const Case& c, const std::vector<RankResult>& a, const std::vector<RankResult>& b,
                             const std::string& left, const std::string& right) {
  for (std::size_t rank = 0; rank < a.size() && rank < b.size(); ++rank) {
    const auto& x = a[rank].output;
    const auto& y = b[rank].output;
    if (same_bytes(x, y)) continue;
    if (x.size() != y.size()) {
      return "rank " + std::to_string(rank) + ": " + std::to_string(x.size()) + " vs " + std::to_string(y.size()) +
             " bytes";
    }
    for (std::size_t i = 0; i * size_of(c.dtype) < x.size(); ++i) {
      const std::uint64_t p = load_bits(c.dtype, x, i), q = load_bits(c.dtype, y, i);
      if (p == q) continue;
      return "rank " + std::to_string(rank) + " element " + std::to_string(i) + ": " + left + " " +
             format_element(c.dtype, p) + ", " + right + " " + format_element(c.dtype, q);
    }
  }
  return "";
}

PropertyResult rank_agreement(const Case& c, Backend& backend, const RepeatedRun& base, const PropertyContext&) {
  if (!rank_identical(c.collective)) return skip(std::string(name(c.collective)) + " gives ranks different outputs");
  if (!backend.capabilities().rank_identical) return skip("the backend does not claim rank-identical results");
  if (!completed(base)) return skip("the run did not complete (see liveness)");
  const auto& ranks = base.calls[0];
  for (std::size_t rank = 1; rank < ranks.size(); ++rank) {
    if (same_bytes(ranks[rank].output, ranks[0].output)) continue;
    const std::vector<RankResult> zero(ranks.size(), ranks[0]);
    return fail("ranks disagree: " + first_difference(c, zero, ranks, "rank 0 has", "this rank has"));
  }
  return pass();
}

PropertyResult determinism(const Case& c, Backend& backend, const RepeatedRun& base, const PropertyContext& context) {
  if (!backend.capabilities().deterministic) return skip("the backend does not claim determinism");
  if (!completed(base)) return skip("the run did not complete (see liveness)");
  const RepeatedRun again = backend.run(c, context.run_options(mix64(context.schedule_seed + 0x5eed)));
  if (auto stop = incomplete(again, context, "the second run")) return *stop;
  const std::string difference = first_difference(c, base.calls[0], again.calls[0], "first run", "second run");
  return difference.empty() ? pass() : fail("two runs (other interleaving) differ: " + difference);
}

PropertyResult in_place(const Case& c, Backend& backend, const RepeatedRun& base, const PropertyContext& context) {
  if (!backend.capabilities().in_place) return skip("the backend does not run in place");
  if (per_rank_counts(c.collective)) return skip("the v-collectives run out of place only");
  if (!completed(base)) return skip("the run did not complete (see liveness)");
  Case other = c;
  other.in_place = !c.in_place;
  if (!backend.capabilities().supports(other)) return skip("the backend runs in place only");
  const RepeatedRun run = backend.run(other, context.run_options(context.schedule_seed));
  if (auto stop = incomplete(run, context, std::string(other.in_place ? "in place" : "out of place") + " the run"))
    return *stop;
  const std::string difference =
      first_difference(c, base.calls[0], run.calls[0], c.in_place ? "in place" : "out of place",
                       other.in_place ? "in place" : "out of place");
  return difference.empty() ? pass() : fail("in place and out of place differ: " + difference);
}

std::vector<std::vector<std::byte>> outputs_of(const std::vector<RankResult>& ranks) {
  std::vector<std::vector<std::byte>> outputs;
  outputs.reserve(ranks.size());
  for (const RankResult& rank : ranks) outputs.push_back(rank.output);
  return outputs;
}

// Reduce-scatter, then all-gather of its blocks, is the all-reduce (bit for bit on exact values).
PropertyResult compose_all_reduce(const Case& c, Backend& backend, const RepeatedRun& base,
                                  const PropertyContext& context) {
  if (c.values != ValueKind::Exact) return skip("composition needs exact values to compare bit for bit");
  if (c.count % static_cast<std::size_t>(c.nranks) != 0) return skip("the count does not split into ranks blocks");
  Case scatter = c;
  scatter.collective = Collective::ReduceScatter;
  scatter.count = c.count / static_cast<std::size_t>(c.nranks);
  scatter.in_place = false;
  Case gather = scatter;
  gather.collective = Collective::AllGather;
  if (!backend.capabilities().supports(scatter) || !backend.capabilities().supports(gather)) {
    return skip("the backend lacks reduce-scatter or all-gather");
  }
  const RepeatedRun scattered = backend.run(scatter, context.run_options(context.schedule_seed));
  if (auto stop = incomplete(scattered, context, "the reduce-scatter")) return *stop;
  const std::vector<std::vector<std::byte>> blocks = outputs_of(scattered.calls[0]);
  RunOptions given = context.run_options(context.schedule_seed);
  given.inputs = &blocks;
  const RepeatedRun gathered = backend.run(gather, given);
  if (auto stop = incomplete(gathered, context, "the all-gather")) return *stop;
  const std::string difference =
      first_difference(c, base.calls[0], gathered.calls[0], "all-reduce", "reduce-scatter + all-gather");
  return difference.empty() ? pass() : fail("reduce-scatter then all-gather is not the all-reduce: " + difference);
}

// All-to-all of all-to-all's output gives every rank its input back (all-to-all-v: with the
// counts transposed, each rank sending back what it received).
PropertyResult compose_all_to_all(const Case& c, Backend& backend, const RepeatedRun& base,
                                  const PropertyContext& context) {
  Case again = c;
  again.in_place = false;
  if (c.collective == Collective::AllToAllV) {
    const auto n = static_cast<std::size_t>(c.nranks);
    for (std::size_t s = 0; s < n; ++s) {
      for (std::size_t d = 0; d < n; ++d) again.counts[d * n + s] = c.counts[s * n + d];
    }
  }
  const std::vector<std::vector<std::byte>> first = outputs_of(base.calls[0]);
  RunOptions given = context.run_options(context.schedule_seed);
  given.inputs = &first;
  const RepeatedRun twice = backend.run(again, given);
  if (auto stop = incomplete(twice, context, "the second all-to-all")) return *stop;
  const InputGenerator inputs(c);
  std::vector<RankResult> original;
  for (int rank = 0; rank < c.nranks; ++rank) {
    std::vector<std::byte> input(input_elements(c, rank) * size_of(c.dtype));
    inputs.fill(rank, 0, input);
    original.push_back(RankResult{std::move(input), {}, true});
  }
  const std::string difference = first_difference(c, original, twice.calls[0], "input", "after all-to-all twice");
  return difference.empty() ? pass() : fail("all-to-all twice does not give the input back: " + difference);
}

PropertyResult composition(const Case& c, Backend& backend, const RepeatedRun& base, const PropertyContext& context) {
  if (c.collective != Collective::AllReduce && uniform_form(c.collective) != Collective::AllToAll) {
    return skip("composition is checked on all-reduce, all-to-all and all-to-all-v cases");
  }
  if (!completed(base)) return skip("the run did not complete (see liveness)");
  return c.collective == Collective::AllReduce ? compose_all_reduce(c, backend, base, context)
                                               : compose_all_to_all(c, backend, base, context);
}

PropertyResult buffer_safety(const Case& c, Backend&, const RepeatedRun& base, const PropertyContext&) {
  if (!completed(base)) return skip("the run did not complete (see liveness)");
  const InputGenerator inputs(c);
  for (int rank = 0; rank < c.nranks; ++rank) {
    const RankResult& result = base.calls[0][static_cast<std::size_t>(rank)];
    if (!result.guards_intact)
      return fail("rank " + std::to_string(rank) + " wrote outside its buffers (a guard zone changed)");
    if (c.in_place) continue;
    std::vector<std::byte> want(result.input.size());
    inputs.fill(rank, 0, want);
    if (!same_bytes(want, result.input))
      return fail("rank " + std::to_string(rank) + " changed its out-of-place input");
  }
  return pass();
}

PropertyResult repeat(const Case& c, Backend& backend, const RepeatedRun& base, const PropertyContext& context) {
  if (!completed(base)) return skip("the run did not complete (see liveness)");
  constexpr int kCalls = 3;
  const RepeatedRun run = backend.run(c, context.run_options(context.schedule_seed, kCalls));
  if (auto stop = incomplete(run, context, "the repeated calls")) return *stop;
  if (run.calls.size() != kCalls) return fail("the repeated calls did not complete: " + run.error);
  for (int call = 0; call < kCalls; ++call) {
    Case this_call = c;
    this_call.seed = c.seed + static_cast<std::uint64_t>(call);
    PropertyResult r =
        match_oracle(this_call, run.calls[static_cast<std::size_t>(call)], "call " + std::to_string(call) + ": ");
    if (!r.ok) return r;
  }
  return pass();
}

constexpr Property kProperties[] = {
    {"safety", "under faults no run reports success with a wrong result (the outcome is never corrupt)", &safety},
    {"liveness",
     "the case completes before its deadline: a hang or a crash fails it, and so does an error detected "
     "on a clean run (a false alarm); under faults a detected error passes",
     &liveness},
    {"recovery",
     "after a run that ended detected or hang, the same case run again without faults is ok and "
     "matches the oracle",
     &recovery, true},
    {"reliability", "a backend that retransmits (reliable) ends ok with the right result under transient faults",
     &reliability},
    {"oracle", "every rank's output matches the CPU oracle: bit for bit on exact inputs, within the bound on real ones",
     &oracle_property},
    {"rank-agreement", "all-reduce, all-gather and broadcast leave identical bits on every rank", &rank_agreement},
    {"buffer-safety", "guard zones around every buffer are untouched and an out-of-place input is unchanged",
     &buffer_safety},
    {"determinism", "the same case run again, under another interleaving, gives identical bits", &determinism, true},
    {"in-place", "in-place and out-of-place calls give identical bits", &in_place, true},
    {"composition",
     "reduce-scatter then all-gather equals all-reduce (bit for bit on exact values); all-to-all twice "
     "gives the input back",
     &composition, true},
    {"repeat", "three calls back to back on the same buffers each match the oracle for their own inputs", &repeat,
     true},
};

// The backend as a property's runs see it, remembering the first run it refused (RunEnding::
// refused: a precondition met late, such as messages that outgrew the memory left to them), so
// that a property failing on such a run skips instead of reporting a failure.
class RefusalWatch final : public Backend {
 public:
  explicit RefusalWatch(Backend& watched) : watched_(watched) {}
  std::string name() const override { return watched_.name(); }
  Capabilities capabilities() const override { return watched_.capabilities(); }
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    RepeatedRun run = watched_.run(c, options);
    if (run.refused && refusal_.empty()) refusal_ = run.error;
    return run;
  }
  MemoryEstimate estimate_memory(const Case& c, EstimateFor run) const override {
    return watched_.estimate_memory(c, run);
  }
  void abort() override { watched_.abort(); }
  std::string cannot_run_here() const override { return watched_.cannot_run_here(); }
  const std::string& refusal() const { return refusal_; }

 private:
  Backend& watched_;
  std::string refusal_;
};

}  // namespace

PropertyResult Property::check(const Case& c, Backend& backend, const RepeatedRun& base,
                               const PropertyContext& context) const {
  if (base.refused) return skip("the backend refused the case (a precondition, not a finding): " + base.error);
  if (runs_again && context.budget_spent) return skip("the time budget ran out during the case's run: not run again");
  if (!runs_again) return predicate(c, backend, base, context);
  RefusalWatch watched(backend);
  PropertyResult result = predicate(c, watched, base, context);
  if (!result.ok && !watched.refusal().empty()) {
    return skip("the backend refused one of the property's runs (a precondition, not a finding): " + watched.refusal());
  }
  return result;
}

std::span<const Property> all_properties() { return kProperties; }

const Property* find_property(std::string_view property) {
  for (const Property& p : kProperties) {
    if (p.name == property) return &p;
  }
  return nullptr;
}

std::string property_names() {
  std::string out;
  for (const Property& p : kProperties) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

}  // namespace collcheck
