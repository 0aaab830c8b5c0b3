// `nccl[...]`: the specs (one per forced algorithm and protocol), what they can run on this
// machine's GPUs and NCCL runtime, and the environment of their worlds.
#include "impls/vendors/nccl/nccl_backend.h"

#include <algorithm>

#include <cuda_runtime.h>
#include <nccl.h>

#include "impls/cuda/cuda_device.h"
#include "impls/ib/ibverbs.h"
#include "impls/vendors/nccl/nccl_options.h"
#include "impls/vendors/nccl/nccl_rank_backend.h"
#include "impls/worlds/launched_world.h"
#include "reference/collective.h"

namespace collcheck {
namespace {

// Several ranks on one GPU: NCCL 2.30 and later (earlier ones refuse a duplicate GPU).
constexpr int kRanksPerGpuVersion = 23000;
constexpr int kRanksPerGpu = 8;
// fp8 (e4m3, e5m2): NCCL 2.24 and later, on GPUs of compute capability 9.0 and later.
constexpr int kFp8Version = 22400;

struct Machine {
  int runtime = 0;  // ncclGetVersion
  int version = 0;  // the older of the runtime and the headers' NCCL_VERSION_CODE: what both have
  int devices = 0;
  int lowest_major = 0;  // the lowest compute capability among the devices
  std::string cannot_run_here;
};

Machine this_machine() {
  Machine machine;
  ncclGetVersion(&machine.runtime);
  machine.version = std::min(machine.runtime, NCCL_VERSION_CODE);
  machine.cannot_run_here = cuda::cuda_cannot_run_here();  // the cuda engine's words: no device, and why
  if (!machine.cannot_run_here.empty() || cudaGetDeviceCount(&machine.devices) != cudaSuccess) {
    machine.devices = 0;
    return machine;
  }
  machine.lowest_major = 1000;
  for (int d = 0; d < machine.devices; ++d) {
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d);
    machine.lowest_major = std::min(machine.lowest_major, major);
  }
  return machine;
}

Capabilities capabilities_of(const NcclSetting& setting, const Machine& machine) {
  Capabilities c;
  c.collectives = nccl_collectives(setting.algorithm);
  for (DType dtype : all_dtypes()) {
    const bool fp8 = dtype == DType::Float8E4M3 || dtype == DType::Float8E5M2;
    if (!fp8 || (machine.version >= kFp8Version && machine.lowest_major >= 9)) c.dtypes.push_back(dtype);
  }
  c.ops.assign(all_ops().begin(), all_ops().end());
  c.memory = "device";
  if (machine.devices > 0) {
    c.max_ranks = std::min(kMaxRanks, machine.devices * (machine.version >= kRanksPerGpuVersion ? kRanksPerGpu : 1));
  }
  c.knobs_per_run = true;
  for (std::string_view knob : nccl_call_knobs(machine.version)) {  // newer than either: not drawn
    const bool fixed = std::any_of(setting.fixed_knobs.begin(), setting.fixed_knobs.end(),
                                   [&](const auto& given) { return given.first == knob; });
    if (!fixed) c.knobs.push_back(KnobSpace{std::string(knob), 0, 1, 0, {}, {"off", "on"}, {}, false});
  }
  return c;
}

std::string version_text(int code) {
  // NCCL_VERSION_CODE: X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z since 2.9.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code / 100) % 100 : (code / 100) % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

}  // namespace

Result<std::vector<RankBackendSpec>> nccl_backend_specs(std::string_view options, std::string_view spec) {
  const Machine machine = this_machine();
  Result<std::vector<NcclSetting>> settings = parse_nccl_options(options, spec, machine.version);
  if (!settings) return settings.error();
  std::vector<RankBackendSpec> specs;
  for (const NcclSetting& setting : *settings) {
    RankBackendSpec made;
    made.name = setting.name;
    made.capabilities = capabilities_of(setting, machine);
    made.environment = nccl_environment(setting);
    made.cannot_run_here = machine.cannot_run_here;
    if (setting.net == NcclNet::Any) {  // faults through our net plugin, in place of NCCL's networks
      made.fault_environment = nccl_fault_environment(nccl_net_plugin_path());
    } else if (setting.net == NcclNet::Ib) {  // NCCL's own verbs: no hook of ours in its path
      made.takes_no_faults = "NCCL's IB transport moves messages by RDMA, where no hook of ours sits";
      if (made.cannot_run_here.empty()) made.cannot_run_here = ib::rdma_cannot_run_here();
    }  // net=socket: faults through the socket interposer, preloaded as for mpi and gloo
    made.ranks_are_threads = setting.mode != NcclMode::Processes;
    if (made.ranks_are_threads) {  // the plugin and the interposer take one rank's faults per process
      made.fault_environment.clear();
      if (made.takes_no_faults.empty())
        made.takes_no_faults = "in mode=" + std::string(spec_name(setting.mode)) +
                               " every rank is a thread of one process, and the network plugin and the socket "
                               "interposer take the faults of one rank per process: mode=processes takes them";
    }
    made.world_memory = library_temporaries;
    made.make = [setting, capabilities = made.capabilities](World& world) {
      return make_nccl_rank_backend(world, setting, capabilities);
    };
    specs.push_back(std::move(made));
  }
  return specs;
}

std::string nccl_description() {
  const Machine machine = this_machine();
  std::string text =
      "NCCL " + version_text(machine.runtime) + " (built against " + version_text(NCCL_VERSION_CODE) + ")";
  Result<std::vector<NcclSetting>> every = parse_nccl_options("all-algorithms", "nccl:all-algorithms", machine.version);
  if (every) {
    text += "; nccl:all-algorithms runs";
    for (const NcclSetting& setting : *every) text += " " + setting.name.substr(std::string_view("nccl:").size());
  }
  if (!machine.cannot_run_here.empty()) text += "; " + machine.cannot_run_here;
  return text;
}

}  // namespace collcheck
