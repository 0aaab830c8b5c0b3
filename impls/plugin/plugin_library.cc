// Loading and checking a backend plugin: dlopen, its symbol and ABI version, its options and
// capabilities turned into ours (see plugin_library.h).
#include "impls/plugin/plugin_library.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include <dlfcn.h>

#include "collcheck/config.h"
#include "impls/backend/pinned_files.h"
#include "reference/case.h"
#include "reference/key_values.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

// The ABI's values, in the order of their numbers (plugin_v1.h), and ours they stand for.
constexpr std::array kCollectives = {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                                     Collective::AllToAll,  Collective::Broadcast, Collective::Reduce};
constexpr std::array kDTypes = {DType::Int8,   DType::UInt8,   DType::Int32,    DType::UInt32,  DType::Int64,
                                DType::UInt64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
constexpr std::array kOps = {RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max, RedOp::Avg};
static_assert(COLLCHECK_REDUCE == kCollectives.size() - 1 && COLLCHECK_FLOAT64 == kDTypes.size() - 1 &&
              COLLCHECK_AVG == kOps.size() - 1);

// The role of a plugin's file among the files pinned for worlds (pinned_files.h).
constexpr std::string_view kPinnedRole = "PLUGIN";

// The plugin's path in a message: in full, where quoted_input would cut a long path.
std::string shown_path(const std::string& path) {
  const bool plain = path.size() <= 4096 && std::all_of(path.begin(), path.end(), [](char ch) {
                       return ch >= ' ' && ch <= '~' && ch != '\'' && ch != '\\';
                     });
  return plain ? "'" + path + "'" : quoted_input(path);
}

}  // namespace

PinnedEnvironment pinned_plugin_environment(const collcheck_backend_v1* plugin, const std::string& path) {
  if (pinned_or(kPinnedRole, path) != path) return {};  // a world's process: it loaded the pinned file
  Dl_info info{};
  if (::dladdr(plugin, &info) == 0 || info.dli_fname == nullptr || *info.dli_fname == '\0') return {};
  return pin_for_worlds(kPinnedRole, path, kept_open(info.dli_fname));
}

Error plugin_error(const std::string& path, const std::string& cause) {
  return Error{"--backend", "plugin " + shown_path(path) + ": " + cause};
}

namespace {

// The values a bit set names; an error for a bit beyond them.
template <typename Value, std::size_t N>
Result<std::vector<Value>> from_bits(std::uint32_t bits, const std::array<Value, N>& values, std::string_view field,
                                     const std::string& path) {
  std::vector<Value> out;
  for (std::size_t bit = 0; bit < 32; ++bit) {
    if ((bits & (std::uint32_t{1} << bit)) == 0) continue;
    if (bit >= N) {
      return plugin_error(path, "capabilities: " + std::string(field) + " has bit " + std::to_string(bit) +
                                    ", which names nothing in ABI version 1 (bits 0.." + std::to_string(N - 1) + ")");
    }
    out.push_back(values[bit]);
  }
  return out;
}

// The plugin's knobs, those the options give left out (they are fixed, not drawn).
Result<std::vector<KnobSpace>> drawn_knobs(const collcheck_capabilities_v1& given, const std::string& path,
                                           const std::vector<PluginOption>& options) {
  std::vector<KnobSpace> knobs;
  if (given.knob_count > 0 && given.knobs == nullptr) return plugin_error(path, "capabilities: knobs is null");
  for (int k = 0; k < given.knob_count; ++k) {
    const collcheck_knob_v1& knob = given.knobs[k];
    const std::string name = knob.name == nullptr ? "" : knob.name;
    if (name.empty() || name.find_first_of("=,:") != std::string::npos) {
      return plugin_error(path, "capabilities: knob " + std::to_string(k) + " has name " + quoted_input(name) +
                                    ": must be a word without '=', ',' or ':'");
    }
    if (knob.low > knob.high || knob.fallback < knob.low || knob.fallback > knob.high) {
      return plugin_error(path, "capabilities: knob " + name + ": needs low <= fallback <= high, got " +
                                    std::to_string(knob.low) + ", " + std::to_string(knob.fallback) + ", " +
                                    std::to_string(knob.high));
    }
    const bool given_as_option =
        std::any_of(options.begin(), options.end(), [&](const PluginOption& o) { return o.key == name; });
    if (!given_as_option)
      knobs.push_back(numeric_knob(name, knob.low, knob.high, knob.fallback, {knob.low, knob.high}));
  }
  return knobs;
}

}  // namespace

Result<std::vector<PluginOption>> parse_plugin_options(std::string_view text) {
  Result<std::vector<KeyValue>> items = split_key_values(text);
  if (!items) return items.error();
  if (const KeyValue* again = repeated_key(*items))
    return Error{"--backend", escaped_input(again->key) + " given twice"};
  std::vector<PluginOption> options;
  for (const KeyValue& item : *items) {
    if (!item.has_value || item.key.empty()) {
      return Error{"--backend", "plugin option " + quoted_input(item.item) + ": must be key=value"};
    }
    options.push_back({std::string(item.key), std::string(item.value)});
  }
  return options;
}

std::vector<collcheck_option_v1> abi_options(const std::vector<PluginOption>& options) {
  std::vector<collcheck_option_v1> out;
  out.reserve(options.size());
  for (const PluginOption& option : options) out.push_back({option.key.c_str(), option.value.c_str()});
  return out;
}

std::string plugin_message(const char* buffer, std::size_t size, std::string_view fallback) {
  const std::size_t length = strnlen(buffer, size);
  return length == 0 ? std::string(fallback) : std::string(buffer, length);
}

Result<const collcheck_backend_v1*> load_plugin(const std::string& path) {
  if (path.empty()) return plugin_error(path, "no path: the spec is plugin:PATH[:key=value,...]");
  void* library = dlopen(pinned_or(kPinnedRole, path).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    return plugin_error(path, std::string("cannot be loaded: ") + (why != nullptr ? why : "dlopen failed"));
  }
  const auto* plugin = static_cast<const collcheck_backend_v1*>(dlsym(library, COLLCHECK_PLUGIN_SYMBOL_V1));
  if (plugin == nullptr) {
    for (int version = 2; version <= 9; ++version) {
      const std::string other = "collcheck_backend_plugin_v" + std::to_string(version);
      if (dlsym(library, other.c_str()) == nullptr) continue;
      return plugin_error(path, "exports " + other + ", ABI version " + std::to_string(version) +
                                    "; this collcheck loads version 1 (" COLLCHECK_PLUGIN_SYMBOL_V1
                                    "): build the plugin against this collcheck's include/collcheck/plugin.h");
    }
    return plugin_error(path, "exports no symbol " COLLCHECK_PLUGIN_SYMBOL_V1
                              " (a collcheck_backend_v1, include/collcheck/plugin.h; see docs/plugins.md)");
  }
  if (plugin->abi_version != COLLCHECK_PLUGIN_ABI_VERSION_1) {
    return plugin_error(path, COLLCHECK_PLUGIN_SYMBOL_V1 " has abi_version " + std::to_string(plugin->abi_version) +
                                  "; this collcheck loads version 1");
  }
  const std::pair<const void*, const char*> functions[] = {
      {reinterpret_cast<const void*>(plugin->capabilities), "capabilities"},
      {reinterpret_cast<const void*>(plugin->init), "init"},
      {reinterpret_cast<const void*>(plugin->run), "run"},
      {reinterpret_cast<const void*>(plugin->finalize), "finalize"}};
  for (const auto& [function, name] : functions) {
    if (function == nullptr) return plugin_error(path, COLLCHECK_PLUGIN_SYMBOL_V1 " has no " + std::string(name));
  }
  return plugin;
}

Result<Capabilities> plugin_capabilities(const collcheck_backend_v1& plugin, const std::string& path,
                                         const std::vector<PluginOption>& options) {
  collcheck_capabilities_v1 given{};
  std::array<char, 1024> error{};
  const std::vector<collcheck_option_v1> abi = abi_options(options);
  if (plugin.capabilities(abi.data(), static_cast<int>(abi.size()), &given, error.data(), error.size()) !=
      COLLCHECK_PLUGIN_OK) {
    return plugin_error(path, "capabilities failed: " + plugin_message(error.data(), error.size(), "no message"));
  }
  Capabilities c;
  Result<std::vector<Collective>> collectives = from_bits(given.collectives, kCollectives, "collectives", path);
  if (!collectives) return collectives.error();
  Result<std::vector<DType>> dtypes = from_bits(given.dtypes, kDTypes, "dtypes", path);
  if (!dtypes) return dtypes.error();
  Result<std::vector<RedOp>> ops = from_bits(given.ops, kOps, "ops", path);
  if (!ops) return ops.error();
  if (collectives->empty() || dtypes->empty()) return plugin_error(path, "capabilities: no collective or no dtype");
  if (given.min_ranks < 1 || given.max_ranks < given.min_ranks || given.max_ranks > kMaxRanks) {
    return plugin_error(path, "capabilities: min_ranks " + std::to_string(given.min_ranks) + ", max_ranks " +
                                  std::to_string(given.max_ranks) +
                                  ": must be 1 <= min_ranks <= max_ranks <= " + std::to_string(kMaxRanks));
  }
  if (given.memory != COLLCHECK_MEMORY_HOST && given.memory != COLLCHECK_MEMORY_CUDA) {
    return plugin_error(path, "capabilities: memory " + std::to_string(given.memory) +
                                  ": must be COLLCHECK_MEMORY_HOST (0) or COLLCHECK_MEMORY_CUDA (1)");
  }
#if !COLLCHECK_HAVE_CUDA
  if (given.memory == COLLCHECK_MEMORY_CUDA) {
    return plugin_error(path,
                        "capabilities: memory COLLCHECK_MEMORY_CUDA: this build has no CUDA: " COLLCHECK_CUDA_REASON);
  }
#endif
  Result<std::vector<KnobSpace>> knobs = drawn_knobs(given, path, options);
  if (!knobs) return knobs.error();
  c.collectives = std::move(*collectives);
  c.dtypes = std::move(*dtypes);
  c.ops = std::move(*ops);
  c.in_place = given.in_place != 0;
  c.memory = given.memory == COLLCHECK_MEMORY_CUDA ? "device" : "host";
  c.min_ranks = given.min_ranks;
  c.max_ranks = given.max_ranks;
  c.deterministic = given.deterministic != 0;
  c.knobs = std::move(*knobs);
  c.knobs_per_run = true;
  return c;
}

}  // namespace collcheck
