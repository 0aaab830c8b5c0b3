// libFuzzer target for `--backend` specs with their knobs (impls/registry.h): `ring@sim:chunk=4`,
// `all@sim`, `mutant:NAME@sim`, `ring@proc:links=tcp`, `mpi:allreduce=ring`, `gloo:NAME:iface=X`.
// A spec either names backends or says why; a sim backend it names runs two small cases without
// throwing (a knob accepted at parse time must not abort the run), and when a reference algorithm
// says `ok` its outputs are the oracle's: any knob that parses keeps the verdict true. No world is
// launched.
#include "impls/registry.h"
#include "reference/oracle.h"
#include "tests/fuzz/fuzz_checks.h"

using namespace collcheck;

namespace {

// Cases every sim algorithm supports, small enough to run on every input.
Case small_case(std::size_t count, int nranks) {
  Case c;
  c.collective = Collective::AllReduce;
  c.count = count;
  c.nranks = nranks;
  return c;
}

void run_small_case(Backend& backend, const Case& c) {
  if (!backend.capabilities().supports(c)) return;
  RunOptions options;
  options.deadline = 1;
  const RepeatedRun run = backend.run(c, options);
  if (run.outcome != Outcome::Ok) {
    fuzz::require(!run.error.empty(), "a run that fails says why", backend.name());
    return;
  }
  // Mutants are broken on purpose; reference algorithms must be right whatever their knobs.
  if (backend.name().starts_with("mutant:")) return;
  fuzz::require(run.calls.size() == 1 && run.calls[0].size() == static_cast<std::size_t>(c.nranks),
                "an ok run returns every rank", backend.name());
  for (int rank = 0; rank < c.nranks; ++rank) {
    const RankResult& result = run.calls[0][static_cast<std::size_t>(rank)];
    fuzz::require(compare(c, rank, result.output).ok, "an ok run of a reference algorithm matches the oracle",
                  backend.name() + " on " + to_string(c));
    fuzz::require(result.guards_intact, "an ok run leaves the guard zones intact", backend.name());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view spec = fuzz::as_text(data, size);
  if (runs_across_processes(spec)) {
    const Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(spec);
    if (!specs) fuzz::require_message(specs.error(), "rank_backend_specs");
    else fuzz::require(!specs->empty(), "a spec names at least one backend", spec);
    return 0;
  }
  Result<std::vector<std::unique_ptr<Backend>>> backends = make_backends(spec);
  if (!backends) {
    fuzz::require_message(backends.error(), "make_backends");
    return 0;
  }
  fuzz::require(!backends->empty(), "a spec names at least one backend", spec);
  // `all@sim` runs the cases on one backend only, so that every input stays cheap.
  run_small_case(*backends->front(), small_case(5, 3));
  run_small_case(*backends->front(), small_case(100, 2));
  return 0;
}
