// The registry of the mutants: each a reference algorithm with one realistic bug put back in (a
// dropped tail, an off-by-one chunk, a missing stream dependency, a narrow accumulator...), what
// catches it, and where it shows. The families' code is in *_mutants.cc (see families.h).
#include "impls/mutants/mutants.h"

#include <string>

#include "impls/mutants/families.h"
#include "reference/numbers.h"

namespace collcheck::mutants {
namespace {

using ScheduleFunction = Result<Schedule> (*)(const Case&, const Knobs&);

Mutant mutant(std::string_view name, std::string_view description, std::vector<Collective> collectives,
              ScheduleFunction schedule, std::vector<std::string_view> caught_by, ReductionOverride reduction = {}) {
  Mutant m;
  m.variant.name = "mutant:" + std::string(name);
  m.variant.description = std::string(description);
  m.variant.collectives = std::move(collectives);
  m.variant.schedule = schedule;
  m.variant.reduction = reduction;
  m.caught_by = std::move(caught_by);
  return m;
}

// 15. registered-once. Every call of a run reads the inputs of the first call, as a backend
// whose buffer registration cache hands back a stale mapping: each call alone is right (the
// oracle holds), calls after the first are not (the repeat property).
Mutant registered_once() {
  Mutant m =
      mutant("registered-once", "ring all-reduce reading the first call's inputs on every later call (stale cache)",
             {Collective::AllReduce}, ring_schedule, {"repeat"});
  m.variant.stale_inputs = true;
  return m;
}

// 16. no-checksum. Ring with a link protocol that never checks its checksums: a corrupted
// message is used as if it were intact, and the run reports success with a wrong result (the
// outcome `corrupt`, caught by safety and the oracle under a corrupt fault).
// 17. no-timeout. Ring whose waits never time out: a message lost for good leaves its receiver
// waiting past any deadline (a hang, caught by liveness under a drop fault).
// 18. last-unchecked. Ring whose receivers skip the checksum of each stream's last message in a
// call (an off-by-one in the loop that checks): only a corruption of that message is used
// (`corrupt`, caught by safety under corrupt:message=last).
Mutant protocol_mutant(std::string_view name, std::string_view description, std::vector<std::string_view> caught_by,
                       std::string faults) {
  Mutant m = mutant(name, description, {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter},
                    ring_schedule, std::move(caught_by));
  m.variant.skip_checksums = name == "no-checksum";
  m.variant.skip_last_checksum = name == "last-unchecked";
  m.variant.never_time_out = name == "no-timeout";
  m.faults = std::move(faults);
  return m;
}

std::vector<Mutant> make_mutants() {
  const std::vector<Collective> allreduce{Collective::AllReduce};
  ReductionOverride float16_accumulator, nan_dropping, edge_nan_dropping, peer_divisor;
  float16_accumulator.reduce = reduce_through_float16;
  nan_dropping.reduce = reduce_dropping_nan;
  edge_nan_dropping.reduce = reduce_dropping_edge_nan;
  peer_divisor.finish_average = divide_by_peers;
  return {
      mutant("drop-remainder", "ring all-reduce that never reduces the count % nranks tail (blocks of count/nranks)",
             allreduce, drop_remainder, {"oracle"}),
      mutant("chunk-off-by-one", "ring all-reduce whose interior pipeline chunks start one element late (k*chunk+1)",
             allreduce, chunk_off_by_one, {"oracle"}),
      mutant("root-ignored", "binomial broadcast and reduce whose tree is always rooted at rank 0 (root not passed on)",
             {Collective::Broadcast, Collective::Reduce}, root_ignored, {"oracle"}),
      mutant("allgather-order", "ring all-gather that puts rank b's block in slot b+1 (slot index off by one)",
             {Collective::AllGather}, allgather_order, {"oracle"}),
      mutant("own-twice", "ring all-reduce where rank 0 reduces its own input in twice (double-counted contribution)",
             allreduce, own_twice, {"oracle"}),
      mutant("narrow-accumulation", "ring all-reduce accumulating in float16 whatever the dtype (narrow accumulator)",
             allreduce, ring_schedule, {"oracle"}, float16_accumulator),
      mutant("in-place-clobber", "direct all-reduce sending its input after overwriting it: wrong only in place",
             allreduce, in_place_clobber, {"in-place", "oracle"}),
      mutant("write-past-end", "ring all-reduce writing one element past the output (inclusive end bound)", allreduce,
             write_past_end, {"buffer-safety"}),
      mutant("nan-dropped", "direct all-reduce with std::max-style min/max in a per-rank order: ranks differ on NaN",
             allreduce, nan_dropped_schedule, {"rank-agreement"}, nan_dropping),
      mutant("avg-wrong-divisor", "ring all-reduce whose avg divides by the peer count nranks-1 instead of nranks",
             allreduce, ring_schedule, {"oracle"}, peer_divisor),
      mutant("rank-order-reduce", "direct all-reduce where each rank reduces in its own order, starting from itself",
             allreduce, rank_order_reduce, {"rank-agreement"}),
      mutant("interleaving-race", "reduce-broadcast all-reduce missing a cross-stream wait: a seed-dependent race",
             allreduce, interleaving_race, {"determinism", "oracle", "in-place", "repeat"}),
      mutant("deadlock", "ring all-reduce where every rank receives before its first send: a cyclic wait", allreduce,
             deadlock, {"liveness"}),
      mutant("gather-rotated",
             "ring all-reduce and reduce-scatter with allgather-order's all-gather: they do not compose",
             {Collective::AllReduce, Collective::ReduceScatter, Collective::AllGather}, gather_rotated,
             {"composition", "oracle"}),
      registered_once(),
      protocol_mutant("no-checksum", "ring whose receivers never check the message checksums (corrupt bytes are used)",
                      {"safety", "oracle"}, "corrupt"),
      protocol_mutant("no-timeout", "ring whose waits never time out (a lost message leaves its receiver waiting)",
                      {"liveness"}, "drop"),
      protocol_mutant("last-unchecked", "ring whose receivers skip the checksum of each stream's last message per call",
                      {"safety", "oracle"}, "corrupt:message=last"),
      mutant("edge-nan-dropped",
             "ring all-reduce whose kernel drops a NaN arriving at a chunk's last element (a scalar tail loop)",
             allreduce, ring_schedule, {"oracle", "repeat"}, edge_nan_dropping),
  };
}

}  // namespace
}  // namespace collcheck::mutants

namespace collcheck {

const std::vector<Mutant>& all_mutants() {
  static const std::vector<Mutant> registry = mutants::make_mutants();
  return registry;
}

const Mutant* find_mutant(std::string_view name) {
  constexpr std::string_view kPrefix = "mutant:";
  if (name.starts_with(kPrefix)) name.remove_prefix(kPrefix.size());
  for (const Mutant& m : all_mutants()) {
    if (std::string_view(m.variant.name).substr(kPrefix.size()) == name) return &m;
  }
  return nullptr;
}

Error backend_spec_error(std::string_view spec, const std::string& message) {
  return Error{"--backend", quoted_input(spec) + ": " + message};
}

std::string mutant_names(bool process_mutants_too) {
  std::string names;
  const auto add = [&names](const std::vector<Mutant>& list) {
    for (const Mutant& known : list) names += (names.empty() ? "" : ", ") + known.variant.name;
  };
  if (process_mutants_too) add(process_mutants());
  add(all_mutants());
  return names;
}

Result<std::vector<NamedVariant>> named_variants(std::string_view spec, std::string_view what,
                                                 const std::string& suffix, bool process_mutants_too) {
  std::vector<NamedVariant> named;
  if (what == "all") {
    for (const std::string& algorithm : algorithm_variant_names())
      named.push_back(NamedVariant{algorithm_variant(algorithm).value(), algorithm + suffix});
    return named;
  }
  if (what.starts_with("mutant:")) {
    const Mutant* mutant = process_mutants_too ? find_process_mutant(what) : nullptr;
    if (mutant == nullptr) mutant = find_mutant(what);
    if (mutant == nullptr)
      return backend_spec_error(spec, "no such mutant: mutants are " + mutant_names(process_mutants_too));
    named.push_back(NamedVariant{mutant->variant, std::string(what) + suffix, mutant->sabotage});
    return named;
  }
  Result<SimVariant> variant = algorithm_variant(what);
  if (!variant && what.starts_with("schedule:")) return backend_spec_error(spec, variant.error().message);
  if (!variant) {
    return backend_spec_error(spec, variant.error().message + ", or all, or mutant:NAME, or schedule:FILE");
  }
  named.push_back(NamedVariant{std::move(variant).value(), std::string(what) + suffix});
  return named;
}

}  // namespace collcheck
