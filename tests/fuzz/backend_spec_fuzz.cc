// libFuzzer target for `--backend` specs with their knobs (impls/registry.h): `ring@sim:chunk=4`,
// `all@sim`, `mutant:NAME@sim`, `ring@proc:links=tcp`, `mpi:allreduce=ring`, `gloo:NAME:iface=X`.
// A spec either names backends or says why; a sim backend it names runs a small case without
// throwing (a knob accepted at parse time must not abort the run). No world is launched.
#include "impls/registry.h"
#include "tests/fuzz/fuzz_checks.h"

using namespace collcheck;

namespace {

// A case every sim algorithm supports, small enough to run on every input.
Case small_case() {
  Case c;
  c.collective = Collective::AllReduce;
  c.count = 5;
  c.nranks = 3;
  return c;
}

void run_small_case(Backend& backend) {
  const Case c = small_case();
  if (!backend.capabilities().supports(c)) return;
  RunOptions options;
  options.deadline = 1;
  const RepeatedRun run = backend.run(c, options);
  if (run.outcome != Outcome::Ok) fuzz::require(!run.error.empty(), "a run that fails says why", backend.name());
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
  // `all@sim` runs the case on one backend only, so that every input stays cheap.
  run_small_case(*backends->front());
  return 0;
}
