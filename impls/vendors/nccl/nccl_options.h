// The grammar of `nccl[:key=value,...]` and `nccl:all-algorithms`: NCCL's algorithm and protocol
// forced per world (NCCL_ALGO / NCCL_PROTO in its processes' environment), the collectives NCCL
// runs with each algorithm, the pairs NCCL refuses, and the per-call knobs (buffer registration,
// CUDA-graph capture). Plain C++: it needs neither NCCL nor CUDA, so its tests run anywhere.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reference/collective.h"
#include "reference/result.h"

namespace collcheck {

enum class NcclAlgorithm { Any, Ring, Tree, CollnetDirect, CollnetChain, Nvls, NvlsTree, Pat };
enum class NcclProtocol { Any, Simple, LL, LL128 };
// The network NCCL's processes must use (NCCL_NET): whichever it picks, its socket transport
// (faults through the socket interposer), or its InfiniBand/RoCE transport (no faults: nothing of
// ours sits in its path). Where one is named, P2P, shared memory, NVLS and CollNet are off, so
// that GPUs on one host talk over it too; NVLS and CollNet algorithms cannot run then.
enum class NcclNet { Any, Socket, Ib };
// How a world's ranks are held: `processes` (the default), one process per rank; `threads`, every
// rank a thread of one process, each on its own GPU with its own calls (several GPUs in one
// process, a thread each: nccl-tests' -t); `group`, the same threads, but each communicator
// created and each call issued for every rank together from one thread inside one NCCL group
// (ncclCommInitAll's way, nccl-tests' -g).
enum class NcclMode { Processes, Threads, Group };

// Our spelling (`collnet_direct`, `ll128`) and NCCL's (`CollnetDirect`, `LL128`, what NCCL_ALGO
// and NCCL_PROTO take); `any` / "" for Any.
std::string_view spec_name(NcclAlgorithm);
std::string_view spec_name(NcclProtocol);
std::string_view spec_name(NcclMode);  // `processes`, `threads`, `group`
std::string_view nccl_name(NcclAlgorithm);
std::string_view nccl_name(NcclProtocol);

// The collectives NCCL's tuner lets the algorithm run (NCCL's src/graph/tuning.cc: broadcast and
// reduce only ring; all-gather and reduce-scatter ring, PAT, NVLS and CollnetDirect; PAT no
// all-reduce); Any: all six (all-to-all is point-to-point in NCCL, no algorithm applies).
std::vector<Collective> nccl_collectives(NcclAlgorithm);
// Whether NCCL runs the pair at all (NVLS, NVLSTree and PAT only with Simple).
bool nccl_accepts(NcclAlgorithm, NcclProtocol);
// The first NCCL release (NCCL_VERSION_CODE: 22300 for 2.23.0) that knows the algorithm.
int nccl_first_version(NcclAlgorithm);

// One world's setting: the name the spec runs under and what is forced.
struct NcclSetting {
  std::string name;  // `nccl`, `nccl:algo=ring,proto=ll`
  NcclAlgorithm algorithm = NcclAlgorithm::Any;
  NcclProtocol protocol = NcclProtocol::Any;
  NcclNet net = NcclNet::Any;
  // The per-call knobs the spec fixed (`register=on`); the others are drawn per run.
  std::vector<std::pair<std::string, bool>> fixed_knobs;
  NcclMode mode = NcclMode::Processes;
};

// `OPTIONS` after `nccl:` (empty for `nccl`): `algo=A`, `proto=P`, `net=socket|ib`,
// `mode=processes|threads|group`, a call knob
// fixed (`register`, `graph`, `premul`, `window` `=on|off`: one newer than the runtime is an
// error), or `all-algorithms` (first, optionally with `net` and call knobs): every pair
// nccl_accepts that the runtime `version` knows (over a named network, none of NVLS and CollNet).
// Errors name the option and the allowed values.
Result<std::vector<NcclSetting>> parse_nccl_options(std::string_view options, std::string_view spec, int version);

// NCCL_ALGO / NCCL_PROTO for the setting (nothing for Any); NCCL_NET and the paths that bypass a
// network turned off where it names one.
std::vector<std::pair<std::string, std::string>> nccl_environment(const NcclSetting&);

// What sends every message of a world through libnccl-net-collcheck.so at `plugin_path`: the
// plugin named (NCCL_NET_PLUGIN, NCCL_NET) and the paths that bypass a network on one host
// turned off (P2P, shared memory, NVLS, CollNet), so GPUs on one host talk through it too.
std::vector<std::pair<std::string, std::string>> nccl_fault_environment(const std::string& plugin_path);

// The knobs of one call: `register=on` registers the buffers with the communicator
// (ncclCommRegister, nccl-tests' -R), `graph=on` captures the call in a CUDA graph and launches
// that (nccl-tests' -G), `premul=on` runs a sum as NCCL's pre-multiplied sum with the scalar 1
// (ncclRedOpCreatePreMulSum, nccl-tests' `-o premulsum`: another reduction kernel, the same exact
// result; other ops as they are), `window=on` allocates the buffers with ncclMemAlloc and
// registers them as symmetric windows (ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC, in
// place of `register`) where every rank's buffers are alike: all-reduce, all-gather,
// reduce-scatter and all-to-all. Parsed from RunOptions::knobs (`register=on,graph=off`).
struct NcclCallKnobs {
  bool register_buffers = false;
  bool graph = false;
  bool premul_sum = false;
  bool window = false;
};
Result<NcclCallKnobs> parse_nccl_call_knobs(std::string_view knobs);

// The call knobs a runtime of NCCL_VERSION_CODE `version` has (premul from 2.11, window from
// 2.27), in the order they are drawn; a spec may fix any of them (`nccl:window=on`).
std::vector<std::string_view> nccl_call_knobs(int version);
// The first NCCL release that has the call knob, or -1 for a name that is none.
int nccl_call_knob_version(std::string_view knob);

}  // namespace collcheck
