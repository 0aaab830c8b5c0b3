// `gloo:NAME[:key=value,...]` backends: every algorithm of the installed Gloo that maps onto one of
// our collectives, over Gloo's TCP transport, as one rank's part of a world (see rank_backend.h).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <optional>

#include <gloo/context.h>

#include "impls/backend/rank_backend.h"
#include "impls/link/guarded_buffer.h"
#include "impls/vendors/gloo/gloo_algorithms.h"
#include "impls/vendors/gloo/gloo_backend.h"
#include "impls/vendors/gloo/gloo_mesh.h"
#include "reference/inputs.h"
#include "reference/key_values.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

constexpr double kClassTimeout = 60;  // seconds: the class-style algorithms' waits (see GlooKnobs)

// ---- the grammar -------------------------------------------------------------------------

std::string algorithm_names() {
  std::string out;
  for (const GlooAlgorithm& a : gloo_algorithms()) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

std::string allowed_options(const GlooAlgorithm& a) {
  std::string out;
  for (std::string_view key : a.options) out += std::string(key) + ", ";
  return out + "timeout, iface";
}

Error option_error(std::string_view spec, const std::string& message) {
  return Error{"--backend", quoted_input(spec) + ": " + message};
}

// One `key=value`; `a` null: only the options every algorithm takes.
Status apply_option(std::string_view spec, const GlooAlgorithm* a, const KeyValue& option, GlooKnobs& knobs) {
  const std::string_view key = option.key;
  const bool taken = key == "timeout" || key == "iface" ||
                     (a != nullptr && std::find(a->options.begin(), a->options.end(), key) != a->options.end());
  if (!taken) {
    return option_error(spec, "unknown option " + quoted_input(key) + " for " +
                                  (a ? "gloo:" + std::string(a->name) : std::string("gloo:all-algorithms")) +
                                  ": allowed " + (a ? allowed_options(*a) : std::string("timeout, iface")));
  }
  if (key == "iface") {
    if (option.value.empty()) return option_error(spec, "iface=: must name a network interface");
    knobs.iface = std::string(option.value);
    return Ok{};
  }
  if (key == "algorithm") {
    constexpr std::string_view kAlgorithms[] = {"ring", "bcube"};
    Result<std::size_t> algorithm = read_choice(option, kAlgorithms);
    if (!algorithm) return option_error(spec, algorithm.error().message);
    knobs.algorithm = std::string(kAlgorithms[*algorithm]);
    return Ok{};
  }
  if (key == "base") {
    Result<std::uint64_t> base = read_unsigned(option, 2, 64);
    if (!base) return option_error(spec, escaped_input(option.item) + ": must be an integer, 2..64");
    knobs.base = static_cast<int>(*base);
    return Ok{};
  }
  // segment below the largest element (8 bytes) makes gloo::reduce divide by zero.
  const bool timeout = key == "timeout";
  if (timeout) {
    Result<double> seconds = read_real(option, 0.001, 86400, "seconds, 0.001..86400");
    if (!seconds) return option_error(spec, seconds.error().message);
    knobs.timeout = *seconds;
    return Ok{};
  }
  Result<std::uint64_t> bytes = read_unsigned(option, 8, 1 << 30, "bytes");
  if (!bytes) return option_error(spec, bytes.error().message);
  knobs.segment = static_cast<std::size_t>(*bytes);
  return Ok{};
}

Result<GlooKnobs> parse_options(std::string_view spec, const GlooAlgorithm* a, std::string_view text) {
  GlooKnobs knobs;
  Result<std::vector<KeyValue>> options = split_key_values(text);
  if (!options) return option_error(spec, options.error().message);
  if (const KeyValue* again = repeated_key(*options))
    return option_error(spec, escaped_input(again->key) + " given twice");
  for (const KeyValue& option : *options) {
    if (!option.has_value) {
      return option_error(spec, "option " + quoted_input(option.item) + " must be key=value (" +
                                    (a ? allowed_options(*a) : std::string("timeout, iface")) + ")");
    }
    Status applied = apply_option(spec, a, option, knobs);
    if (!applied) return applied.error();
  }
  return knobs;
}

// The options, then what they name on this host: an `iface` that is not there is a usage error
// before any world starts, never a crash of Gloo's.
Result<GlooKnobs> usable_options(std::string_view spec, const GlooAlgorithm* a, std::string_view text) {
  Result<GlooKnobs> knobs = parse_options(spec, a, text);
  if (!knobs || knobs->iface.empty()) return knobs;
  Status usable = check_interface(knobs->iface);
  if (!usable) return option_error(spec, usable.error().message);
  return knobs;
}

Capabilities capabilities_of(const GlooAlgorithm& a) {
  Capabilities c;
  c.collectives = a.collectives;
  c.dtypes = gloo_dtypes(a);
  // Gloo's ReductionFunction has sum, product, min and max; no average.
  c.ops = {RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max};
  c.in_place = a.in_place;
  return c;
}

// ---- knobs drawn per case -------------------------------------------------------------------

// The keys the options of a spec (`gloo:NAME:key=value,...`) give.
std::vector<std::string> given_keys(std::string_view spec) {
  const std::size_t colon = spec.find(':', spec.find(':') + 1);
  std::vector<std::string> keys;
  if (colon == std::string_view::npos) return keys;
  Result<std::vector<KeyValue>> items = split_key_values(spec.substr(colon + 1));
  if (items) {
    for (const KeyValue& item : *items) keys.emplace_back(item.key);
  }
  return keys;
}

// The base nearest `wanted` that divides the ranks, as Gloo's bcube requires (the largest at most
// `wanted`, else the smallest above); 0 where no base of 2..64 does.
std::uint64_t dividing_base(std::uint64_t wanted, int nranks) {
  std::uint64_t above = 0;
  for (std::uint64_t base = std::min<std::uint64_t>(wanted, 64); base >= 2; --base) {
    if (static_cast<std::uint64_t>(nranks) % base == 0) return base;
  }
  for (std::uint64_t base = wanted + 1; base <= 64 && above == 0; ++base) {
    if (static_cast<std::uint64_t>(nranks) % base == 0) above = base;
  }
  return above;
}

// The knobs of `a` its spec leaves free, which check draws per case and each run takes
// (Capabilities::knobs_per_run): bcube's base, always fitted to one that divides the case's ranks
// (Gloo's documented precondition, so never a forbidden value; a rank count no base divides is
// not drawn), and the segment size of the algorithms that take one, at least a 64th of the
// message so that no draw makes thousands of segments. Not timeout or iface: they are the
// machine's, not the algorithm's.
void add_free_knobs(const GlooAlgorithm& a, std::string_view spec, Capabilities& capabilities) {
  const std::vector<std::string> given = given_keys(spec);
  const auto free = [&](std::string_view key) {
    return std::find(a.options.begin(), a.options.end(), key) != a.options.end() &&
           std::find(given.begin(), given.end(), key) == given.end();
  };
  if (free("base")) {
    KnobSpace base = numeric_knob("base", 2, 64, 2, {3, 4, 5, 8, 16, 64});
    base.fit = [](std::uint64_t value, const Case& c) {
      const std::uint64_t divides = dividing_base(value, c.nranks);
      return divides == 0 ? value : divides;
    };
    base.fit_default = true;
    capabilities.knobs.push_back(std::move(base));
    capabilities.knob_precondition = [](const Case& c) { return dividing_base(2, c.nranks) != 0; };
  }
  if (free("segment")) {
    KnobSpace segment = numeric_knob("segment", 8, 1 << 30, 0, {8, 9, 12, 16, 24, 63, 64, 1000, 4096, 65536});
    segment.fit = [](std::uint64_t value, const Case& c) {
      const std::uint64_t bytes = std::max(input_elements(c), output_elements(c)) * size_of(c.dtype);
      return std::max<std::uint64_t>(value, (bytes + 63) / 64);
    };
    capabilities.knobs.push_back(std::move(segment));
  }
  capabilities.knobs_per_run = true;
}

// ---- one rank's part ---------------------------------------------------------------------

// Everything one case shape needs, built once and reused by every call of that shape.
struct Prepared {
  Case shape;            // the case with seed 0: calls that differ only in their inputs share it
  std::string settings;  // the run's own knobs it was built with (RunOptions::knobs)
  GuardedBuffer input_storage, output_storage, scratch_storage;
  GlooBuffers buffers;
  std::size_t input_count = 0, output_count = 0;
  std::unique_ptr<GlooCall> call;
};

Case shape_of(Case c) {
  c.seed = 0;
  c.values = ValueKind::Exact;
  return c;
}

class GlooRankBackend final : public RankBackend {
 public:
  GlooRankBackend(const GlooAlgorithm& algorithm, GlooKnobs knobs, std::string name, World& world,
                  std::shared_ptr<gloo::Context> context)
      : algorithm_(algorithm), knobs_(std::move(knobs)), name_(std::move(name)), world_(world),
        context_(std::move(context)) {}

  std::string name() const override { return name_; }

  RankRun run(const Case& c, const RankRunOptions& options) override {
    RankRun result;
    if (!capabilities_of(algorithm_).supports(c)) {  // Gloo would run another collective or dtype, or crash
      result.outcome = Outcome::Detected;
      result.error = name_ + " rank " + std::to_string(world_.rank()) + ": " + to_string(c) +
                     " is not among its collectives, dtypes and ops";
      return result;
    }
    const auto start = std::chrono::steady_clock::now();
    Result<GlooKnobs> knobs = run_knobs(options.knobs);
    if (!knobs) return RankRun::ended(Outcome::Detected, knobs.error().text());
    std::string where = "building " + to_string(c);
    try {
      prepare(c, *knobs, options.knobs);
      if (options.timed) {
        timed(c, options, result, where);
      } else {
        repeated(c, options, result, where);
      }
    } catch (const std::exception& e) {
      result.outcome = Outcome::Detected;
      result.error = name_ + " rank " + std::to_string(world_.rank()) + ", " + where + ": " + e.what();
      return result;
    }
    if (!options.timed)
      result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }

 private:
  // The spec's knobs with the run's own on top (RunOptions::knobs: `segment=64`).
  Result<GlooKnobs> run_knobs(const std::string& settings) const {
    GlooKnobs knobs = knobs_;
    Result<std::vector<KeyValue>> items = split_key_values(settings);
    if (!items) return option_error(name_, items.error().message);
    for (const KeyValue& item : *items) {
      if (Status applied = apply_option(name_, &algorithm_, item, knobs); !applied) return applied.error();
    }
    return knobs;
  }

  // Builds the buffers and Gloo's algorithm for a new shape or new knobs (`settings`, the run's
  // own). The barriers keep every rank's old algorithm alive until all are done with it, and the
  // new one registered before any rank sends to it (the class-style algorithms bind their
  // buffers to slots).
  void prepare(const Case& c, const GlooKnobs& knobs, const std::string& settings) {
    if (prepared_ && prepared_->shape == shape_of(c) && prepared_->settings == settings) return;
    world_.barrier();
    prepared_.reset();
    auto p = std::make_unique<Prepared>();
    p->shape = shape_of(c);
    p->settings = settings;
    const int rank = world_.rank();
    const std::size_t element = size_of(c.dtype);
    p->input_count = input_elements(c, rank);  // the v-collectives' differ from rank to rank
    p->output_count = output_elements(c, rank);
    p->scratch_storage = GuardedBuffer(algorithm_.scratch(c), element, c.offset);
    p->buffers.scratch = p->scratch_storage.data();
    const InPlaceLayout alias = in_place_layout(c.collective, c.count, rank, c.root);
    if (c.in_place && alias.input_inside) {
      p->output_storage = GuardedBuffer(p->output_count, element, c.offset);
      p->buffers.output = p->output_storage.data();
      p->buffers.input = p->buffers.output + alias.offset * element;
    } else {
      p->input_storage = GuardedBuffer(p->input_count, element, c.offset);
      p->buffers.input = p->input_storage.data();
      if (c.in_place) {
        p->buffers.output = p->buffers.input + alias.offset * element;
      } else {
        p->output_storage = GuardedBuffer(p->output_count, element, c.offset);
        p->buffers.output = p->output_storage.data();
      }
    }
    if (p->output_count == 0 && c.collective == Collective::Reduce) p->buffers.output = nullptr;
    if (c.empty_as_null) {  // empty buffers as callers often pass them: null
      if (p->input_count == 0) p->buffers.input = nullptr;
      if (p->output_count == 0) p->buffers.output = nullptr;
      if (algorithm_.scratch(c) == 0) p->buffers.scratch = nullptr;
    }
    p->call = algorithm_.make(context_, c, knobs, p->buffers);
    prepared_ = std::move(p);
    world_.barrier();
  }

  void fill(const Case& c, const RankRunOptions& options, std::uint64_t call) {
    Prepared& p = *prepared_;
    const std::size_t bytes = p.input_count * size_of(c.dtype);
    if (options.input != nullptr) {
      if (bytes > 0) std::memcpy(p.buffers.input, options.input->data(), std::min(bytes, options.input->size()));
      return;
    }
    Case this_call = c;
    this_call.seed = c.seed + call;
    if (bytes > 0) InputGenerator(this_call).fill(world_.rank(), 0, {p.buffers.input, bytes});
  }

  RankResult collect(DType dtype) {
    Prepared& p = *prepared_;
    const std::size_t element = size_of(dtype);
    RankResult r;
    if (p.output_count > 0) r.output.assign(p.buffers.output, p.buffers.output + p.output_count * element);
    if (p.input_count > 0) r.input.assign(p.buffers.input, p.buffers.input + p.input_count * element);
    r.guards_intact = p.input_storage.intact() && p.output_storage.intact() && p.scratch_storage.intact();
    return r;
  }

  std::chrono::milliseconds timeout(const RankRunOptions& options) const {
    const double seconds = knobs_.timeout > 0 ? knobs_.timeout : options.deadline;
    return std::chrono::milliseconds(std::max<long long>(1, static_cast<long long>(seconds * 1000)));
  }

  void call_once(const RankRunOptions& options) { prepared_->call->run(timeout(options), tag_++); }

  void repeated(const Case& c, const RankRunOptions& options, RankRun& result, std::string& where) {
    const int calls = options.input != nullptr ? 1 : std::max(options.calls, 1);
    for (int k = 0; k < calls; ++k) {
      where = "call " + std::to_string(k) + " of " + to_string(c);
      fill(c, options, static_cast<std::uint64_t>(k));
      call_once(options);
      result.calls.push_back(collect(c.dtype));
    }
  }

  void timed(const Case& c, const RankRunOptions& options, RankRun& result, std::string& where) {
    fill(c, options, 0);
    for (int k = 0; k < options.warmup; ++k) {
      where = "warmup call " + std::to_string(k) + " of " + to_string(c);
      call_once(options);
    }
    double total = 0;
    for (int k = 0; k < options.iterations; ++k) {
      where = "timed call " + std::to_string(k) + " of " + to_string(c);
      const auto start = std::chrono::steady_clock::now();
      call_once(options);
      total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (options.checked) result.calls.push_back(collect(c.dtype));
    }
    result.seconds = options.iterations > 0 ? total / options.iterations : 0;
  }

  const GlooAlgorithm& algorithm_;
  GlooKnobs knobs_;
  std::string name_;
  World& world_;
  std::shared_ptr<gloo::Context> context_;
  std::unique_ptr<Prepared> prepared_;
  std::uint32_t tag_ = 0;  // every rank makes the same calls, so their tags agree
};

RankBackendSpec spec_of(const GlooAlgorithm& a, const GlooKnobs& knobs, const std::string& name) {
  RankBackendSpec spec;
  spec.name = name;
  spec.capabilities = capabilities_of(a);
  spec.capabilities.edge_bytes = gloo_edge_bytes(a, knobs);
  if (std::string_view(a.name) == "allreduce_bcube") {
    spec.capabilities.precondition = [base = knobs.base](const Case& c) { return c.nranks % base == 0; };
  }
  add_free_knobs(a, name, spec.capabilities);
  spec.world_memory = library_temporaries;
  spec.make = [&a, knobs, name](World& world) -> Result<std::unique_ptr<RankBackend>> {
    const double seconds = knobs.timeout > 0 ? knobs.timeout : kClassTimeout;
    try {
      std::shared_ptr<gloo::Context> context =
          connect_gloo_mesh(world, knobs, std::chrono::milliseconds(static_cast<long long>(seconds * 1000)));
      return std::unique_ptr<RankBackend>(std::make_unique<GlooRankBackend>(a, knobs, name, world, std::move(context)));
    } catch (const std::exception& e) {
      return Error{"--backend", quoted_input(name) + ": connecting Gloo's TCP mesh on rank " +
                                    std::to_string(world.rank()) + ": " + e.what()};
    }
  };
  return spec;
}

}  // namespace

// `gloo`, `gloo:all-algorithms[:timeout=S,iface=NAME]`: one spec per algorithm;
// `gloo:NAME[:key=value,...]`: that algorithm with its options.
Result<std::vector<RankBackendSpec>> gloo_backend_specs(std::string_view options, std::string_view spec) {
  const std::size_t colon = options.find(':');
  const std::string_view name = options.substr(0, colon);
  const std::string_view rest = colon == std::string_view::npos ? std::string_view{} : options.substr(colon + 1);
  std::vector<RankBackendSpec> specs;
  if (name.empty() || name == "all-algorithms" || name == "all") {
    Result<GlooKnobs> knobs = usable_options(spec, nullptr, rest);
    if (!knobs) return knobs.error();
    const std::string suffix = rest.empty() ? "" : ":" + std::string(rest);
    for (const GlooAlgorithm& a : gloo_algorithms())
      specs.push_back(spec_of(a, *knobs, "gloo:" + std::string(a.name) + suffix));
    return specs;
  }
  for (const GlooAlgorithm& a : gloo_algorithms()) {
    if (a.name != name) continue;
    Result<GlooKnobs> knobs = usable_options(spec, &a, rest);
    if (!knobs) return knobs.error();
    specs.push_back(spec_of(a, *knobs, std::string(spec)));
    return specs;
  }
  return Error{"--backend", quoted_input(spec) + ": unknown Gloo algorithm " + quoted_input(name) +
                                ": allowed all-algorithms, " + algorithm_names()};
}

}  // namespace collcheck
