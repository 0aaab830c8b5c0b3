// The small pieces of the interface every backend implements: what a capability list admits,
// outcome names, the default memory estimate, and which family a --backend spec names.
#include "impls/backend/backend.h"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "impls/backend/rank_backend.h"
#include "impls/link/guarded_buffer.h"
#include "reference/key_values.h"

namespace collcheck {

std::string KnobSpace::setting(std::uint64_t value) const {
  return name + "=" + (value < choices.size() ? choices[value] : std::to_string(value));
}

KnobSpace numeric_knob(std::string name, std::uint64_t low, std::uint64_t high, std::uint64_t fallback,
                       std::vector<std::uint64_t> edges) {
  KnobSpace space;
  space.name = std::move(name);
  space.low = low;
  space.high = high;
  space.fallback = fallback;
  space.edges = std::move(edges);
  return space;
}

bool Capabilities::supports(const Case& c) const { return unsupported(c).empty(); }

std::string Capabilities::unsupported(const Case& c) const {
  auto has = [](const auto& list, auto value) { return std::find(list.begin(), list.end(), value) != list.end(); };
  auto names = [](const auto& list) {
    std::string text;
    for (const auto& value : list) text += (text.empty() ? "" : ", ") + std::string(name(value));
    return text;
  };
  if (!has(collectives, c.collective)) return "it runs the collectives " + names(collectives);
  if (!has(dtypes, c.dtype)) return "it runs the dtypes " + names(dtypes);
  if (reduces(c.collective) && !has(ops, c.op)) return "it runs the ops " + names(ops);
  if (c.in_place && !in_place) return "it runs out of place only";
  if (!c.in_place && !out_of_place) return "it runs in place only";
  if (count_multiple > 1 && c.count % count_multiple != 0) {
    return "it runs counts that are multiples of " + std::to_string(count_multiple);
  }
  if (c.nranks < min_ranks || c.nranks > max_ranks) {
    return "it runs on " + std::to_string(min_ranks) + ".." + std::to_string(max_ranks) + " ranks";
  }
  if (precondition && !precondition(c)) return "the case breaks a limit its library documents";
  return "";
}

MemoryEstimate Backend::estimate_memory(const Case& c, EstimateFor run) const {
  MemoryEstimate estimate = case_buffers(c, kGuardElements + kBufferAlignment);
  if (run == EstimateFor::TimedRun) return estimate;
  estimate.add("results", case_buffers(c, 0).total(), "every rank's input and output, handed back");
  return estimate;
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

bool names_family(std::string_view spec, std::string_view family) {
  return spec == family || (spec.starts_with(family) && spec.size() > family.size() && spec[family.size()] == ':');
}

std::string_view family_options(std::string_view spec, std::string_view family) {
  return spec.size() > family.size() ? spec.substr(family.size() + 1) : std::string_view{};
}

MemoryEstimate library_temporaries(const Case& c) {
  const MemoryEstimate buffers = case_buffers(c, 0);
  MemoryEstimate estimate;
  estimate.add("library", buffers.total(), "temporaries as large as every rank's input and output");
  return estimate;
}

bool runs_across_processes(std::string_view spec) {
  if (is_vendor_backend(spec)) return true;
  const std::size_t at = spec.rfind('@');
  if (at == std::string_view::npos) return false;
  const std::string_view transport = spec.substr(at + 1);
  const std::string_view engine = transport.substr(0, transport.find(':'));
  if (engine == "cuda" || engine == "cuda-host") {  // with mode=processes among the options
    const std::string_view options = engine.size() < transport.size() ? transport.substr(engine.size() + 1) : "";
    const Result<std::vector<KeyValue>> items = split_key_values(options);
    return items && std::any_of(items->begin(), items->end(),
                                [](const KeyValue& item) { return item.key == "mode" && item.value == "processes"; });
  }
  return transport == "proc" || transport.starts_with("proc:") || transport == "ib" || transport.starts_with("ib:");
}

bool is_vendor_backend(std::string_view spec) {
  return names_family(spec, "mpi") || names_family(spec, "gloo") || names_family(spec, "plugin") ||
         names_family(spec, "nccl");
}

namespace {

// A decorator: every call goes to the backend it holds; run() catches what it throws.
class ExceptionCatchingBackend final : public Backend {
 public:
  explicit ExceptionCatchingBackend(std::unique_ptr<Backend> backend) : backend_(std::move(backend)) {}
  std::string name() const override { return backend_->name(); }
  Capabilities capabilities() const override { return backend_->capabilities(); }
  MemoryEstimate estimate_memory(const Case& c, EstimateFor run) const override {
    return backend_->estimate_memory(c, run);
  }
  void abort() override { backend_->abort(); }
  std::string cannot_run_here() const override { return backend_->cannot_run_here(); }
  RepeatedRun run(const Case& c, const RunOptions& options) override {
    try {
      return backend_->run(c, options);
    } catch (const std::exception& thrown) {
      return RepeatedRun::ended(Outcome::Detected, std::string("an exception in the run: ") + thrown.what());
    } catch (...) {
      return RepeatedRun::ended(Outcome::Detected, "an exception in the run that is not a std::exception");
    }
  }

 private:
  std::unique_ptr<Backend> backend_;
};

}  // namespace

std::unique_ptr<Backend> catching_exceptions(std::unique_ptr<Backend> backend) {
  return std::make_unique<ExceptionCatchingBackend>(std::move(backend));
}

}  // namespace collcheck
