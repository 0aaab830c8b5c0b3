// `nccl[:...]` options, NCCL's algorithm/protocol table and the environment that forces them
// (see nccl_options.h).
#include "impls/vendors/nccl/nccl_options.h"

#include <algorithm>
#include <array>
#include <span>

#include "reference/key_values.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

constexpr std::array kAlgorithms{NcclAlgorithm::Ring,         NcclAlgorithm::Tree, NcclAlgorithm::CollnetDirect,
                                 NcclAlgorithm::CollnetChain, NcclAlgorithm::Nvls, NcclAlgorithm::NvlsTree,
                                 NcclAlgorithm::Pat};
constexpr std::array kProtocols{NcclProtocol::Simple, NcclProtocol::LL, NcclProtocol::LL128};
constexpr std::array<std::string_view, 7> kAlgorithmNames{
    "ring", "tree", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
constexpr std::array<std::string_view, 3> kProtocolNames{"simple", "ll", "ll128"};
constexpr std::array kNets{NcclNet::Socket, NcclNet::Ib};
constexpr std::array<std::string_view, 2> kNetNames{"socket", "ib"};
constexpr std::array kModes{NcclMode::Processes, NcclMode::Threads, NcclMode::Group};
constexpr std::array<std::string_view, 3> kModeNames{"processes", "threads", "group"};

// Whether the algorithm needs what a named network turns off (NVLS, CollNet).
bool off_the_network(NcclAlgorithm algorithm) {
  return algorithm == NcclAlgorithm::Nvls || algorithm == NcclAlgorithm::NvlsTree ||
         algorithm == NcclAlgorithm::CollnetDirect || algorithm == NcclAlgorithm::CollnetChain;
}

// What sends every message of a world's GPUs over the network NCCL_NET names, on one host too.
std::vector<std::pair<std::string, std::string>> network_only(std::string net) {
  return {{"NCCL_NET", std::move(net)},
          {"NCCL_P2P_DISABLE", "1"},
          {"NCCL_SHM_DISABLE", "1"},
          {"NCCL_NVLS_ENABLE", "0"},
          {"NCCL_COLLNET_ENABLE", "0"}};
}

Error option_error(std::string_view spec, const std::string& message) {
  return Error{"--backend", quoted_input(spec) + ": " + message};
}

std::string setting_name(const NcclSetting& setting) {
  std::string options;
  if (setting.algorithm != NcclAlgorithm::Any) options += "algo=" + std::string(spec_name(setting.algorithm));
  if (setting.protocol != NcclProtocol::Any)
    options += (options.empty() ? "" : ",") + std::string("proto=") + std::string(spec_name(setting.protocol));
  if (setting.net != NcclNet::Any)
    options += (options.empty() ? "" : ",") + std::string("net=") +
               std::string(kNetNames[static_cast<std::size_t>(setting.net) - 1]);
  for (const auto& [knob, on] : setting.fixed_knobs)
    options += (options.empty() ? "" : ",") + knob + (on ? "=on" : "=off");
  if (setting.mode != NcclMode::Processes)
    options += (options.empty() ? "" : ",") + std::string("mode=") + std::string(spec_name(setting.mode));
  return options.empty() ? "nccl" : "nccl:" + options;
}

// One `key=value` of a single setting.
Status apply_option(std::string_view spec, const KeyValue& option, NcclSetting& setting) {
  if (option.key == "algo") {
    Result<std::size_t> index = read_choice(option, kAlgorithmNames);
    if (!index) return option_error(spec, index.error().message);
    setting.algorithm = kAlgorithms[*index];
    return Ok{};
  }
  if (option.key == "proto") {
    Result<std::size_t> index = read_choice(option, kProtocolNames);
    if (!index) return option_error(spec, index.error().message);
    setting.protocol = kProtocols[*index];
    return Ok{};
  }
  if (option.key == "net") {
    Result<std::size_t> index = read_choice(option, kNetNames);
    if (!index) return option_error(spec, index.error().message);
    setting.net = kNets[*index];
    return Ok{};
  }
  if (option.key == "mode") {
    Result<std::size_t> index = read_choice(option, kModeNames);
    if (!index) return option_error(spec, index.error().message);
    setting.mode = kModes[*index];
    return Ok{};
  }
  if (nccl_call_knob_version(option.key) >= 0) {
    Result<bool> on = read_on_off(option);
    if (!on) return option_error(spec, on.error().message);
    setting.fixed_knobs.emplace_back(std::string(option.key), *on);
    return Ok{};
  }
  return option_error(spec, "unknown option " + quoted_input(option.item) +
                                ": allowed algo, proto, net, mode, register, graph, premul, window, or all-algorithms "
                                "first");
}

// The setting `items` give (all-algorithms' knobs only, when `every`).
Result<NcclSetting> read_setting(std::string_view spec, std::span<const KeyValue> items, bool every) {
  NcclSetting setting;
  for (const KeyValue& option : items) {
    if (every && (option.key == "algo" || option.key == "proto"))
      return option_error(spec, "all-algorithms runs every algo and proto: give neither");
    if (!option.has_value && option.key == "all-algorithms")
      return option_error(spec, "all-algorithms must come first");
    if (Status applied = apply_option(spec, option, setting); !applied) return applied.error();
  }
  return setting;
}

// A call knob fixed on that the runtime does not have is an error that says so.
Status check_knobs(std::string_view spec, const NcclSetting& setting, int version) {
  for (const auto& [knob, on] : setting.fixed_knobs) {
    if (on && version < nccl_call_knob_version(knob)) {
      return option_error(spec, knob + "=on needs NCCL " + std::to_string(nccl_call_knob_version(knob)) +
                                    " or later; the installed runtime is " + std::to_string(version));
    }
  }
  return Ok{};
}

// A pair NCCL refuses, or an algorithm newer than the runtime, is an error that says so.
Status check_setting(std::string_view spec, const NcclSetting& setting, int version) {
  if (!nccl_accepts(setting.algorithm, setting.protocol)) {
    return option_error(spec, "NCCL runs algo=" + std::string(spec_name(setting.algorithm)) +
                                  " only with proto=simple (NCCL refuses the pair)");
  }
  if (setting.net != NcclNet::Any && off_the_network(setting.algorithm)) {
    return option_error(spec, "net= turns NVLS and CollNet off, so that every message takes the network: algo=" +
                                  std::string(spec_name(setting.algorithm)) + " cannot run over it");
  }
  if (version < nccl_first_version(setting.algorithm)) {
    return option_error(spec, "algo=" + std::string(spec_name(setting.algorithm)) + " needs NCCL " +
                                  std::to_string(nccl_first_version(setting.algorithm)) +
                                  " or later; the installed runtime is " + std::to_string(version));
  }
  return Ok{};
}

// Every pair NCCL runs that the runtime knows, each with the knobs of `knobs`.
std::vector<NcclSetting> every_setting(const NcclSetting& knobs, int version) {
  std::vector<NcclSetting> settings;
  for (NcclAlgorithm algorithm : kAlgorithms) {
    if (version < nccl_first_version(algorithm)) continue;  // newer than the runtime: not drawn
    if (knobs.net != NcclNet::Any && off_the_network(algorithm)) continue;
    for (NcclProtocol protocol : kProtocols) {
      if (!nccl_accepts(algorithm, protocol)) continue;
      NcclSetting one = knobs;
      one.algorithm = algorithm;
      one.protocol = protocol;
      one.name = setting_name(one);
      settings.push_back(std::move(one));
    }
  }
  return settings;
}

}  // namespace

std::string_view spec_name(NcclAlgorithm algorithm) {
  return algorithm == NcclAlgorithm::Any ? "any" : kAlgorithmNames[static_cast<std::size_t>(algorithm) - 1];
}

std::string_view spec_name(NcclProtocol protocol) {
  return protocol == NcclProtocol::Any ? "any" : kProtocolNames[static_cast<std::size_t>(protocol) - 1];
}

std::string_view spec_name(NcclMode mode) { return kModeNames[static_cast<std::size_t>(mode)]; }

std::string_view nccl_name(NcclAlgorithm algorithm) {
  constexpr std::array<std::string_view, 8> names{"",     "Ring",     "Tree", "CollnetDirect", "CollnetChain",
                                                  "NVLS", "NVLSTree", "PAT"};
  return names[static_cast<std::size_t>(algorithm)];
}

std::string_view nccl_name(NcclProtocol protocol) {
  constexpr std::array<std::string_view, 4> names{"", "Simple", "LL", "LL128"};
  return names[static_cast<std::size_t>(protocol)];
}

std::vector<Collective> nccl_collectives(NcclAlgorithm algorithm) {
  using enum Collective;
  switch (algorithm) {
    case NcclAlgorithm::Any: return {AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce};
    case NcclAlgorithm::Ring: return {AllReduce, AllGather, ReduceScatter, Broadcast, Reduce};
    case NcclAlgorithm::CollnetDirect:
    case NcclAlgorithm::Nvls: return {AllReduce, AllGather, ReduceScatter};
    case NcclAlgorithm::Pat: return {AllGather, ReduceScatter};
    case NcclAlgorithm::Tree:
    case NcclAlgorithm::CollnetChain:
    case NcclAlgorithm::NvlsTree: return {AllReduce};
  }
  return {};
}

bool nccl_accepts(NcclAlgorithm algorithm, NcclProtocol protocol) {
  const bool simple_only =
      algorithm == NcclAlgorithm::Nvls || algorithm == NcclAlgorithm::NvlsTree || algorithm == NcclAlgorithm::Pat;
  return !simple_only || protocol == NcclProtocol::Simple || protocol == NcclProtocol::Any;
}

int nccl_first_version(NcclAlgorithm algorithm) {
  switch (algorithm) {
    case NcclAlgorithm::CollnetDirect:
    case NcclAlgorithm::CollnetChain: return 21400;
    case NcclAlgorithm::Nvls: return 21700;
    case NcclAlgorithm::NvlsTree: return 21800;
    case NcclAlgorithm::Pat: return 22300;
    default: return 0;
  }
}

Result<std::vector<NcclSetting>> parse_nccl_options(std::string_view options, std::string_view spec, int version) {
  Result<std::vector<KeyValue>> items = split_key_values(options);
  if (!items) return option_error(spec, items.error().message);
  if (const KeyValue* again = repeated_key(*items))
    return option_error(spec, escaped_input(again->key) + " given twice");
  const bool every = !items->empty() && !items->front().has_value &&
                     (items->front().key == "all-algorithms" || items->front().key == "all");
  Result<NcclSetting> setting = read_setting(spec, std::span(*items).subspan(every ? 1 : 0), every);
  if (!setting) return setting.error();
  if (Status known = check_knobs(spec, *setting, version); !known) return known.error();
  if (every) return every_setting(*setting, version);
  if (Status usable = check_setting(spec, *setting, version); !usable) return usable.error();
  setting->name = setting_name(*setting);
  return std::vector<NcclSetting>{*setting};
}

std::vector<std::pair<std::string, std::string>> nccl_environment(const NcclSetting& setting) {
  std::vector<std::pair<std::string, std::string>> environment;
  if (setting.algorithm != NcclAlgorithm::Any) environment.emplace_back("NCCL_ALGO", nccl_name(setting.algorithm));
  if (setting.protocol != NcclProtocol::Any) environment.emplace_back("NCCL_PROTO", nccl_name(setting.protocol));
  if (setting.net != NcclNet::Any) {
    for (auto& entry : network_only(setting.net == NcclNet::Ib ? "IB" : "Socket")) environment.push_back(entry);
  }
  return environment;
}

std::vector<std::pair<std::string, std::string>> nccl_fault_environment(const std::string& plugin_path) {
  std::vector<std::pair<std::string, std::string>> environment = network_only("collcheck");
  environment.insert(environment.begin(), {"NCCL_NET_PLUGIN", plugin_path});
  return environment;
}

namespace {

struct CallKnob {
  std::string_view name;
  int first_version;
  bool NcclCallKnobs::*field;
};
constexpr std::array<CallKnob, 4> kCallKnobs{{{"register", 0, &NcclCallKnobs::register_buffers},
                                              {"graph", 0, &NcclCallKnobs::graph},
                                              {"premul", 21100, &NcclCallKnobs::premul_sum},
                                              {"window", 22700, &NcclCallKnobs::window}}};

}  // namespace

std::vector<std::string_view> nccl_call_knobs(int version) {
  std::vector<std::string_view> names;
  for (const CallKnob& knob : kCallKnobs) {
    if (version >= knob.first_version) names.push_back(knob.name);
  }
  return names;
}

int nccl_call_knob_version(std::string_view name) {
  for (const CallKnob& knob : kCallKnobs) {
    if (knob.name == name) return knob.first_version;
  }
  return -1;
}

Result<NcclCallKnobs> parse_nccl_call_knobs(std::string_view knobs) {
  Result<std::vector<KeyValue>> items = split_key_values(knobs);
  if (!items) return Error{"knobs", items.error().message};
  NcclCallKnobs parsed;
  for (const KeyValue& item : *items) {
    const auto* knob = std::find_if(kCallKnobs.begin(), kCallKnobs.end(),
                                    [&](const CallKnob& known) { return known.name == item.key; });
    if (knob == kCallKnobs.end())
      return Error{"knobs", quoted_input(item.item) + ": nccl's knobs are register, graph, premul and window"};
    Result<bool> on = read_on_off(item);
    if (!on) return Error{"knobs", on.error().message};
    parsed.*(knob->field) = *on;
  }
  return parsed;
}

}  // namespace collcheck
