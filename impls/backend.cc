// The backend grammar: `ALGORITHM@sim[:key=value,...]`, `mutant:NAME@sim`, `all@sim`; and the
// small pieces of the Backend interface.
#include "impls/backend.h"

#include <algorithm>
#include <charconv>

#include "impls/launched_backend.h"
#include "impls/mpi_world.h"
#include "impls/mutants.h"
#include "impls/rank_backend.h"
#include "impls/sim_backend.h"

namespace collcheck {
namespace {

constexpr std::string_view kTransports = "sim or proc (mpi and gloo are named alone: mpi, gloo:NAME)";

Error spec_error(std::string_view spec, const std::string& message) {
  return Error{"--backend", "'" + std::string(spec) + "': " + message};
}

}  // namespace

// `chunk=4096,channels=2,fan-in=3` into knobs.
Status parse_knobs(std::string_view spec, std::string_view text, Knobs& knobs) {
  constexpr std::string_view kAllowed = "chunk, channels, fan-in, reliable, timeout, retries";
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    const std::size_t equals = item.find('=');
    const std::string_view key = item.substr(0, equals);
    const std::string_view number = equals == std::string_view::npos ? "" : item.substr(equals + 1);
    start = comma + 1;
    if (key == "reliable") {
      if (number != "on" && number != "off") return spec_error(spec, "reliable=" + std::string(number) + ": must be on or off");
      knobs.protocol.reliable = number == "on";
      continue;
    }
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (number.empty() || error != std::errc{} || end != number.data() + number.size()) {
      return spec_error(spec, "option '" + std::string(item) + "' must be KEY=NUMBER (reliable=on|off) with KEY " +
                                  std::string(kAllowed));
    }
    if (key == "chunk") knobs.chunk = value;
    else if (key == "channels" && value >= 1 && value <= 64) knobs.channels = static_cast<int>(value);
    else if ((key == "fan-in" || key == "fan_in") && value >= 2 && value <= 64) knobs.fan_in = static_cast<int>(value);
    else if (key == "timeout" && value >= 1 && value <= 3600000) knobs.protocol.timeout = static_cast<double>(value) / 1000;
    else if (key == "retries" && value <= 100) knobs.protocol.retries = static_cast<int>(value);
    else if (key == "channels") return spec_error(spec, "channels=" + std::string(number) + ": must be 1..64");
    else if (key == "fan-in" || key == "fan_in") return spec_error(spec, "fan-in=" + std::string(number) + ": must be 2..64");
    else if (key == "timeout") return spec_error(spec, "timeout=" + std::string(number) + ": must be 1..3600000 (milliseconds)");
    else if (key == "retries") return spec_error(spec, "retries=" + std::string(number) + ": must be 0..100");
    else return spec_error(spec, "unknown option '" + std::string(key) + "': options are " + std::string(kAllowed));
  }
  return Ok{};
}

bool Capabilities::supports(const Case& c) const {
  auto has = [](const auto& list, auto value) { return std::find(list.begin(), list.end(), value) != list.end(); };
  return has(collectives, c.collective) && has(dtypes, c.dtype) && (!reduces(c.collective) || has(ops, c.op)) &&
         (in_place || !c.in_place) && c.nranks >= min_ranks && c.nranks <= max_ranks && (!precondition || precondition(c));
}

std::string_view name(Outcome outcome) {
  switch (outcome) {
    case Outcome::Ok: return "ok";
    case Outcome::Detected: return "detected";
    case Outcome::Hang: return "hang";
    case Outcome::Corrupt: return "corrupt";
    default: return "crash";
  }
}

std::string backend_names() {
  std::string out;
  for (const std::string& n : algorithm_variant_names()) out += (out.empty() ? "" : ", ") + n + "@sim";
  return out;
}

namespace {

// Backends across processes: lockstep when a launcher started this process, else launched.
Result<std::vector<std::unique_ptr<Backend>>> make_process_backends(std::string_view spec, const BackendOptions& options) {
  Result<std::vector<RankBackendSpec>> specs = rank_backend_specs(spec);
  if (!specs) return specs.error();
  std::vector<std::unique_ptr<Backend>> backends;
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

}  // namespace

Result<std::vector<std::unique_ptr<Backend>>> make_backends(std::string_view spec, const BackendOptions& process_options) {
  if (runs_across_processes(spec)) return make_process_backends(spec, process_options);
  const std::size_t at = spec.find('@');
  if (at == std::string_view::npos) {
    return spec_error(spec, "must be ALGORITHM@TRANSPORT[:OPTIONS], e.g. ring@sim or 'ring@sim:chunk=4096,channels=2'; "
                            "backends: all@sim, " + backend_names() + ", mutant:NAME@sim, the same @proc, "
                            "mpi[:COLL=ALG,...|:all-algorithms], gloo[:NAME|:all-algorithms]");
  }
  const std::string_view what = spec.substr(0, at);
  std::string_view rest = spec.substr(at + 1);
  const std::size_t colon = rest.find(':');
  const std::string_view transport = rest.substr(0, colon);
  const std::string_view options = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
  if (transport != "sim") return spec_error(spec, "transport '" + std::string(transport) + "': must be " + std::string(kTransports));
  Knobs knobs;
  Status parsed = parse_knobs(spec, options, knobs);
  if (!parsed) return parsed.error();

  std::vector<std::unique_ptr<Backend>> backends;
  const std::string suffix = "@sim" + (options.empty() ? "" : ":" + std::string(options));
  if (what == "all") {
    for (const std::string& algorithm : algorithm_variant_names()) {
      backends.push_back(make_sim_backend(algorithm_variant(algorithm).value(), knobs, algorithm + suffix));
    }
    return backends;
  }
  if (what.starts_with("mutant:")) {
    const Mutant* mutant = find_mutant(what);
    if (mutant == nullptr) {
      std::string names;
      for (const Mutant& m : all_mutants()) names += (names.empty() ? "" : ", ") + m.variant.name;
      return spec_error(spec, "no such mutant: mutants are " + names);
    }
    backends.push_back(make_sim_backend(mutant->variant, knobs, std::string(what) + suffix));
    return backends;
  }
  Result<SimVariant> variant = algorithm_variant(what);
  if (!variant) return spec_error(spec, variant.error().message + ", or all, or mutant:NAME");
  backends.push_back(make_sim_backend(std::move(variant).value(), knobs, std::string(what) + suffix));
  return backends;
}

}  // namespace collcheck
