// The registry: the backend grammar (`ALGORITHM@sim[:key=value,...]`, `mutant:NAME@sim`,
// `schedule:FILE@sim`, `all@sim`, `ALGORITHM@proc`, `mpi[...]`, `gloo[...]`, `plugin:PATH[...]`,
// `nccl[...]`)
// and the backends each spec names.
#include "impls/registry.h"

#include <algorithm>
#include <optional>

#include "collcheck/config.h"
#include "impls/backend/rank_backend.h"
#include "impls/cuda/engine_backend.h"
#include "impls/ib/ibverbs.h"
#include "impls/mutants/mutants.h"
#include "impls/plugin/plugin_backend.h"
#include "impls/proc/proc_backend.h"
#include "impls/sim/sim_backend.h"
#include "impls/vendors/gloo/gloo_backend.h"
#include "impls/vendors/mpi/mpi_backend.h"
#include "impls/vendors/nccl/nccl_backend.h"
#include "impls/worlds/launched_backend.h"
#include "impls/worlds/mpi_world.h"
#include "impls/worlds/thread_world_backend.h"
#include "reference/key_values.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

constexpr std::string_view kTransports =
    "sim, cuda-host, cuda, proc or ib (mpi and gloo are named alone: mpi, gloo:NAME)";

// The options of `@cuda` and `@cuda-host`: the knobs, `mode=threads|processes`, `p2p=on|off` (peer
// reads, within one process only), and `net=shm|ib` with the verbs' own options (`verbs`, `dev`,
// `port`, `gid`: the rings between processes over RDMA, ib_rings.h); an unknown option is answered
// with every option these transports take.
struct EngineSpecOptions {
  Knobs knobs;
  std::optional<ib::VerbsChoice> rdma;
};

// The transport's own options as they are read: true when `item` was one of them.
struct EngineTransportOptions {
  bool processes = false, peer_reads = false, rdma = false, verbs_given = false;
  ib::VerbsChoice verbs;

  Result<bool> apply(const KeyValue& item) {
    constexpr std::string_view kModes[] = {"threads", "processes"};
    constexpr std::string_view kNets[] = {"shm", "ib"};
    Result<bool> verbs_option = ib::apply_verbs_option(item, verbs);
    if (!verbs_option || *verbs_option) {
      verbs_given = true;
      return verbs_option;
    }
    if (item.key == "mode" || item.key == "net") {
      Result<std::size_t> choice = item.key == "mode" ? read_choice(item, kModes) : read_choice(item, kNets);
      if (!choice) return choice.error();
      (item.key == "mode" ? processes : rdma) = *choice == 1;
      return true;
    }
    if (item.key != "p2p") return false;
    Result<bool> on = read_on_off(item);
    if (!on) return on.error();
    peer_reads = *on;
    return true;
  }
};

Result<EngineSpecOptions> engine_options(std::string_view spec, std::string_view options) {
  Result<std::vector<KeyValue>> items = split_key_values(options);
  if (!items) return backend_spec_error(spec, items.error().message);
  if (const KeyValue* again = repeated_key(*items))
    return backend_spec_error(spec, escaped_input(again->key) + " given twice");
  std::vector<KeyValue> knob_items;
  EngineTransportOptions transport;
  for (const KeyValue& item : *items) {
    Result<bool> taken = transport.apply(item);
    if (!taken) return backend_spec_error(spec, taken.error().message);
    if (!*taken) knob_items.push_back(item);
  }
  const auto [processes, peer_reads, rdma, verbs_given, verbs] = transport;
  if (processes && peer_reads) {
    return backend_spec_error(spec,
                              "p2p=on reads the sender's memory, so its participants must be threads of one "
                              "process: not with mode=processes");
  }
  if (rdma && !processes)
    return backend_spec_error(spec, "net=ib carries messages between processes: give mode=processes with it");
  if (verbs_given && !rdma)
    return backend_spec_error(spec, "verbs, dev, port and gid choose net=ib's verbs: give net=ib");
  EngineSpecOptions made;
  if (Status applied = apply_knobs(spec, knob_items, made.knobs); !applied) {
    Error error = applied.error();
    if (error.message.find("unknown option") != std::string::npos)
      error.message += ", mode, p2p, net, verbs, dev, port, gid";
    return error;
  }
  made.knobs.peer_reads = peer_reads;
  if (rdma) made.rdma = verbs;
  return made;
}

}  // namespace

Result<std::vector<RankBackendSpec>> rank_backend_specs(std::string_view spec) {
  if (names_family(spec, "mpi")) return mpi_backend_specs(family_options(spec, "mpi"), spec);
  if (names_family(spec, "gloo")) return gloo_backend_specs(family_options(spec, "gloo"), spec);
  if (names_family(spec, "plugin")) return plugin_backend_specs(family_options(spec, "plugin"), spec);
  if (names_family(spec, "nccl")) return nccl_backend_specs(family_options(spec, "nccl"), spec);
  const std::size_t at = spec.rfind('@');
  if (at == std::string_view::npos || !runs_across_processes(spec)) {
    return Error{"--backend", quoted_input(spec) + " does not run across processes: use ALGORITHM@proc, mpi or gloo"};
  }
  const std::string_view transport = spec.substr(at + 1);
  const std::string_view name = transport.substr(0, transport.find(':'));
  if (name == "cuda" || name == "cuda-host") {
    Result<EngineSpecOptions> engine =
        engine_options(spec, transport.substr(std::min(name.size() + 1, transport.size())));
    if (!engine) return engine.error();
#if COLLCHECK_HAVE_CUDA
    if (name == "cuda")
      return engine_process_specs(spec.substr(0, at), engine->knobs, spec, cuda_engine_devices(), engine->rdma);
#else
    if (name == "cuda") return backend_spec_error(spec, "this build has no CUDA: " COLLCHECK_CUDA_REASON);
#endif
    return engine_process_specs(spec.substr(0, at), engine->knobs, spec, EngineDevices{}, engine->rdma);
  }
  const bool ib = transport.starts_with("ib");
  const std::size_t name_length = ib ? 2 : 4;
  const std::string_view options =
      transport.size() > name_length ? transport.substr(name_length + 1) : std::string_view{};
  return proc_backend_specs(spec.substr(0, at), options, spec, ib);
}

#if !COLLCHECK_HAVE_MPI
Result<std::vector<RankBackendSpec>> mpi_backend_specs(std::string_view, std::string_view spec) {
  return Error{"--backend", quoted_input(spec) + ": this build has no MPI: " COLLCHECK_MPI_REASON};
}
#endif

#if !COLLCHECK_HAVE_NCCL
Result<std::vector<RankBackendSpec>> nccl_backend_specs(std::string_view, std::string_view spec) {
  return Error{"--backend", quoted_input(spec) + ": this build has no NCCL: " COLLCHECK_NCCL_REASON};
}
#endif

#if !COLLCHECK_HAVE_GLOO
Result<std::vector<RankBackendSpec>> gloo_backend_specs(std::string_view, std::string_view spec) {
  return Error{"--backend", quoted_input(spec) + ": this build has no Gloo: " COLLCHECK_GLOO_REASON};
}
#endif

std::string backend_names() {
  std::string out;
  for (const std::string& n : algorithm_variant_names()) out += (out.empty() ? "" : ", ") + n + "@sim";
  return out;
}

namespace {

// Backends across processes: lockstep when a launcher started this process, else launched; on
// worlds of threads of this process where the options ask for them (the conformance suite), or
// where the spec's ranks must be threads of one process (the ib loopback) and no launched world
// can serve them (this build has no MPI, or this process is one rank of a launcher's job).
// Launched, such a spec's world is one worker process with a thread per rank.
Result<std::vector<std::unique_ptr<Backend>>> make_process_backends(std::string_view spec,
                                                                    const BackendOptions& options) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(spec);
  if (!specs) return specs.error();
  std::vector<std::unique_ptr<Backend>> backends;
  const bool threads = !specs->empty() && specs->front().ranks_are_threads;
  const bool in_this_process = threads && (!COLLCHECK_HAVE_MPI || launched_by_launcher());
  if (in_this_process || (options.worlds_of_threads && !launched_by_launcher())) {
    for (RankBackendSpec& one : *specs) backends.push_back(make_thread_world_backend(std::move(one)));
    return backends;
  }
  if (!launched_by_launcher()) {
    for (RankBackendSpec& one : *specs) backends.push_back(make_launched_backend(std::move(one), options));
    return backends;
  }
  Result<World*> world = launched_world();
  if (!world) return world.error();
  for (RankBackendSpec& one : *specs) {
    Result<std::unique_ptr<Backend>> backend = make_lockstep_backend(std::move(one), **world, options);
    if (!backend) return backend.error();
    backends.push_back(std::move(*backend));
  }
  return backends;
}

// The backends in this process (`sim`, `cuda-host`) that `what` names (`all`, `mutant:NAME`, an
// algorithm, `schedule:FILE`), each made by `make` and named what + suffix (`@sim:chunk=4`).
using InProcessFactory = std::unique_ptr<Backend> (*)(SimVariant, Knobs, std::string);
Result<std::vector<std::unique_ptr<Backend>>> make_in_process_backends(std::string_view spec, std::string_view what,
                                                                       InProcessFactory make, const Knobs& knobs,
                                                                       const std::string& suffix) {
  Result<std::vector<NamedVariant>> named = named_variants(spec, what, suffix, false);
  if (!named) return named.error();
  std::vector<std::unique_ptr<Backend>> backends;
  for (NamedVariant& one : *named) backends.push_back(make(std::move(one.variant), knobs, std::move(one.name)));
  return backends;
}

// What makes the backends of an in-process transport (sim, cuda-host, cuda where built).
InProcessFactory in_process_factory(std::string_view transport) {
#if COLLCHECK_HAVE_CUDA
  if (transport == "cuda") return &make_cuda_backend;
#endif
  return transport == "cuda-host" ? &make_cuda_host_backend : &make_sim_backend;
}

// The backends a spec names, as they are made (make_backends wraps each).
Result<std::vector<std::unique_ptr<Backend>>> make_backends_as_made(std::string_view spec,
                                                                    const BackendOptions& process_options) {
  if (runs_across_processes(spec)) return make_process_backends(spec, process_options);
  const std::size_t at = spec.find('@');
  if (at == std::string_view::npos) {
    return backend_spec_error(
        spec,
        "must be ALGORITHM@TRANSPORT[:OPTIONS], e.g. ring@sim or 'ring@sim:chunk=4096,channels=2'; "
        "backends: all@sim, " +
            backend_names() +
            ", mutant:NAME@sim, schedule:FILE@sim (an MSCCL XML file), the same @cuda-host, @cuda, @proc and "
            "@ib[:verbs=loopback], "
            "mpi[:COLL=ALG,...|:all-algorithms], gloo[:NAME|:all-algorithms], plugin:PATH[:key=value,...], "
            "nccl[:algo=A,proto=P|:all-algorithms]");
  }
  const std::string_view what = spec.substr(0, at);
  std::string_view rest = spec.substr(at + 1);
  const std::size_t colon = rest.find(':');
  const std::string_view transport = rest.substr(0, colon);
  const std::string_view options = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
  if (transport != "sim" && transport != "cuda-host" && transport != "cuda")
    return backend_spec_error(spec, "transport " + quoted_input(transport) + ": must be " + std::string(kTransports));
#if !COLLCHECK_HAVE_CUDA
  if (transport == "cuda") return backend_spec_error(spec, "this build has no CUDA: " COLLCHECK_CUDA_REASON);
#endif
  Knobs knobs;
  if (transport == "sim") {
    if (Status parsed = parse_knobs(spec, options, knobs); !parsed) return parsed.error();
  } else {  // the cuda engine's: mode=threads among them
    Result<EngineSpecOptions> engine = engine_options(spec, options);
    if (!engine) return engine.error();
    knobs = engine->knobs;
  }
  return make_in_process_backends(spec, what, in_process_factory(transport), knobs,
                                  "@" + std::string(transport) + (options.empty() ? "" : ":" + std::string(options)));
}

}  // namespace

Result<std::vector<std::unique_ptr<Backend>>> make_backends(std::string_view spec,
                                                            const BackendOptions& process_options) {
  Result<std::vector<std::unique_ptr<Backend>>> made = make_backends_as_made(spec, process_options);
  if (!made) return made;
  for (std::unique_ptr<Backend>& backend : *made) backend = catching_exceptions(std::move(backend));
  return made;
}

Result<std::unique_ptr<Backend>> make_one_backend(std::string_view spec, const BackendOptions& options) {
  Result<std::vector<std::unique_ptr<Backend>>> made = make_backends(spec, options);
  if (!made) return made.error();
  if (made->size() != 1) {
    return Error{"--backend", quoted_input(spec) + " names " + std::to_string(made->size()) + " backends, not one"};
  }
  return std::move(made->front());
}

}  // namespace collcheck
