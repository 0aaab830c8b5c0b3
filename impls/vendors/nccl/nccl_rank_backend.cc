// One rank of an `nccl[...]` world: a communicator on this process's GPU, each call NCCL's own.
//
// It works as follows. `make_nccl_rank_backend` picks GPU rank mod the visible GPUs, creates a
// stream, shares rank 0's ncclUniqueId over the world's allgather (the control channel, not under
// test; a rank whose GPU or stream failed passes its error there instead, and every rank stops at
// once: allgather_unless_failed) and creates a non-blocking communicator (config.blocking = 0),
// waiting for it with ncclCommGetAsyncError up to kInitSeconds. Under `mode=group` (every rank a
// thread of this process) the ranks meet in the process's GroupedCalls for their id: the last to
// arrive creates every rank's communicator from its thread inside one ncclGroupStart/ncclGroupEnd,
// as ncclCommInitAll does, and later issues every rank's call of each run so, each rank waiting for
// its own stream as in the other modes. Each run lays the rank's buffers out in host memory as
// every rank backend does (make_rank_buffers: NCCL's layout between guard zones) and mirrors each
// allocation, guard zones included, in device memory (cuda::DeviceRankBuffers): inputs are uploaded
// after they are written and everything is downloaded before results are read, outside the timed
// region, so a write past a buffer's end on the GPU shows as a damaged zone here. A call is
// launched on the stream (registered buffers or symmetric windows, a pre-multiplied sum and
// CUDA-graph capture as the run's knobs say: NcclCallKnobs) and waited for by polling:
// cudaStreamQuery for completion, ncclCommGetAsyncError for NCCL's errors, the clock for the run's
// deadline. An error NCCL reports ends the run `detected` with NCCL's message; the deadline ends it
// `hang` after ncclCommAbort. Either way the communicator is gone and the world is broken: the
// launcher starts a fresh one (and kills this one if the abort itself stalls, when the world's own
// deadline passes). A call NCCL refuses as it is enqueued with ncclInvalidUsage (a combination of
// algorithm, protocol, collective and dtype it does not run, which the tuner's table did not
// foresee) is a precondition met late: the run is refused (RunEnding::refused), the communicator
// kept, and no property judges the case.
#include "impls/vendors/nccl/nccl_rank_backend.h"
#include "impls/vendors/nccl/nccl_types.h"

#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>

#include <cuda_runtime.h>
#include <nccl.h>

#include "impls/backend/rank_calls.h"
#include "impls/backend/world.h"
#include "impls/cuda/device_rank_buffers.h"
#include "impls/vendors/nccl/grouped_calls.h"
#include "reference/float_format.h"

namespace collcheck {

std::optional<ncclDataType_t> nccl_dtype(DType dtype) {
  switch (dtype) {
    case DType::Int8: return ncclInt8;
    case DType::UInt8: return ncclUint8;
    case DType::Int32: return ncclInt32;
    case DType::UInt32: return ncclUint32;
    case DType::Int64: return ncclInt64;
    case DType::UInt64: return ncclUint64;
    case DType::Float16: return ncclFloat16;
    case DType::BFloat16: return ncclBfloat16;
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Float8E4M3: return ncclFloat8e4m3;
    case DType::Float8E5M2: return ncclFloat8e5m2;
  }
  return std::nullopt;
}

namespace {

constexpr double kInitSeconds = 120;  // a communicator's creation
constexpr auto kPoll = std::chrono::microseconds(50);

using Clock = std::chrono::steady_clock;

// How long giving a run's resources back may take (deregistering buffers and windows, destroying
// a pre-multiplied sum) before the next run meets a communicator still busy with it.
constexpr auto kReleaseTime = std::chrono::seconds(30);

// A non-blocking communicator may still be busy with a call after the call returned, whether it
// returned ncclInProgress or ncclSuccess: ncclCommWindowRegister (2.28) returns ncclSuccess while
// the group job it started runs on. NCCL takes no other call on that communicator until the job
// has finished ("Attempt to use communicator before the previous operation returned
// ncclSuccess", seen on an H200). So after every call that did not fail, this polls
// ncclCommGetAsyncError until the communicator is no longer in progress or until `until`: the
// call's result, ncclInProgress if it was still running at `until`, or the poll's own error.
ncclResult_t settle(ncclComm_t comm, ncclResult_t result, Clock::time_point until) {
  if (result != ncclSuccess && result != ncclInProgress) return result;
  for (;;) {
    if (ncclResult_t polled = ncclCommGetAsyncError(comm, &result); polled != ncclSuccess) return polled;
    if (result != ncclInProgress || Clock::now() >= until) return result;
    std::this_thread::sleep_for(kPoll);
  }
}

std::string cuda_failure(const char* call, cudaError_t error) {
  return std::string(call) + ": " + cudaGetErrorString(error);
}

void check_cuda(const char* call, cudaError_t error) {
  if (error != cudaSuccess) throw std::runtime_error(cuda_failure(call, error));
}

std::string nccl_failure(ncclResult_t result, ncclComm_t comm) {
  std::string text = ncclGetErrorString(result);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += ": " + std::string(last);
  return text;
}

ncclRedOp_t nccl_op(RedOp op) {
  switch (op) {
    case RedOp::Sum: return ncclSum;
    case RedOp::Prod: return ncclProd;
    case RedOp::Min: return ncclMin;
    case RedOp::Max: return ncclMax;
    case RedOp::Avg: return ncclAvg;
  }
  return ncclSum;
}

// Thrown by a wait that passed the run's deadline, after the communicator was aborted.
struct PastDeadline {
  std::string why;
};

// Symmetric windows came with NCCL 2.27; built against an older one, the knob is never drawn
// (nccl_backend.cc takes the older of the runtime and the headers).
#if NCCL_VERSION_CODE >= 22700
using Window = ncclWindow_t;
#else
using Window = void*;
#endif

// What one run sets up around its calls, given back as it ends, while the communicator lives (an
// abort freed everything with it): the captured graph, a pre-multiplied sum, registered buffers
// and windows.
struct RunResources {
  explicit RunResources(const ncclComm_t& communicator) : comm(communicator) {}
  ~RunResources() {
    if (graph != nullptr) cudaGraphExecDestroy(graph);
    if (comm == nullptr) return;
    const Clock::time_point until = Clock::now() + kReleaseTime;
    if (op) settle(comm, ncclRedOpDestroy(*op, comm), until);
    for (void* handle : registered) settle(comm, ncclCommDeregister(comm, handle), until);
#if NCCL_VERSION_CODE >= 22700
    for (Window window : windows) settle(comm, ncclCommWindowDeregister(comm, window), until);
#endif
  }
  RunResources(const RunResources&) = delete;
  RunResources& operator=(const RunResources&) = delete;

  const ncclComm_t& comm;  // the backend's, which an abort sets to null
  cudaGraphExec_t graph = nullptr;
  std::optional<ncclRedOp_t> op;
  std::vector<void*> registered;
  std::vector<Window> windows;
};

class NcclRankBackend final : public RankBackend {
 public:
  NcclRankBackend(World& world, NcclSetting setting, Capabilities capabilities, int device,
                  std::unique_ptr<cuda::RankStream> stream, ncclComm_t comm, std::shared_ptr<GroupedCalls> group)
      : world_(world), setting_(std::move(setting)), capabilities_(std::move(capabilities)), device_(device),
        owned_stream_(std::move(stream)), stream_(owned_stream_->get()), comm_(comm), group_(std::move(group)) {}
  ~NcclRankBackend() override {
    cudaSetDevice(device_);
    if (comm_ != nullptr) ncclCommAbort(comm_);  // frees everything and never waits on a peer
  }
  NcclRankBackend(const NcclRankBackend&) = delete;
  NcclRankBackend& operator=(const NcclRankBackend&) = delete;

  std::string name() const override { return setting_.name; }

  RankRun run(const Case& c, const RankRunOptions& options) override {
    const std::string who = setting_.name + " rank " + std::to_string(world_.rank());
    if (std::string why = capabilities_.unsupported(c); !why.empty())
      return RankRun::ended(Outcome::Detected, who + ": " + to_string(c) + ": " + why);
    if (comm_ == nullptr) return RankRun::ended(Outcome::Detected, who + ": the communicator was aborted", true);
    std::string knob_text;
    for (const auto& [knob, on] : setting_.fixed_knobs) knob_text += knob + (on ? "=on," : "=off,");
    Result<NcclCallKnobs> knobs = parse_nccl_call_knobs(knob_text + options.knobs);
    if (!knobs) return RankRun::ended(Outcome::Detected, who + ": " + knobs.error().text());
    deadline_ =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.deadline));
    RankRun run;
    try {
      check_cuda("cudaSetDevice", cudaSetDevice(device_));
      run = run_on_device(c, options, *knobs, who);
    } catch (const PastDeadline& past) {
      run = RankRun::ended(Outcome::Hang, who + ": " + past.why, true);
    } catch (const std::exception& e) {
      abort();
      run = RankRun::ended(Outcome::Detected, who + ": " + e.what(), true);
    }
    // A rank that leaves a world broken will not join its grouped calls again: the others hear why
    // at once instead of at their deadline.
    if (group_ && run.world_broken) group_->abandon(who + " left the grouped calls: " + run.error);
    return run;
  }

 private:
  RankRun run_on_device(const Case& c, const RankRunOptions& options, const NcclCallKnobs& knobs,
                        const std::string& who) {
    RankBuffers buffers = make_rank_buffers(c, world_.rank());
    const bool windows = knobs.window && alike_on_every_rank(c.collective);
    cuda::DeviceRankBuffers device(buffers, windows ? window_memory() : cuda::DeviceAllocator{});
    void* in = device.in();
    void* out = device.out();
    RunResources resources(comm_);
    if (windows) register_windows(device, resources);
    else if (knobs.register_buffers) register_buffers(device, resources);
    if (knobs.premul_sum && c.op == RedOp::Sum) {
      if (CallEnd made = premultiplied_sum(c.dtype, resources); !made.ok()) {
        made.error = who + ": " + made.error;
        return ended_by(std::move(made));
      }
    }
    const ncclRedOp_t op = resources.op.value_or(nccl_op(c.op));
    CallEnd captured = knobs.graph ? capture(c, op, in, out, resources.graph) : CallEnd();
    const RankCall call = [&]() -> CallEnd {
      if (resources.graph == nullptr) {
        CallEnd end = enqueue(c, op, in, out);
        if (!end.ok()) end.error = who + ": " + end.error;
        return end.ok() ? CallEnd(wait_for_stream()) : end;
      }
      const std::string error = cuda_call("cudaGraphLaunch", cudaGraphLaunch(resources.graph, stream_));
      return error.empty() ? wait_for_stream() : who + ": " + error;
    };
    if (!captured.ok()) captured.error = who + ": capturing the call: " + captured.error;
    RankRun run =
        captured.ok() ? run_rank_calls(c, options, world_, buffers, call, device.transfers()) : ended_by(captured);
    if (run.outcome != Outcome::Ok) run.world_broken = run.world_broken || comm_ == nullptr;
    return run;
  }

  // Every rank's buffers are alike (NCCL's symmetric windows want them so): not broadcast's and
  // reduce's, whose roots alone have an input or an output.
  static bool alike_on_every_rank(Collective collective) {
    return collective != Collective::Broadcast && collective != Collective::Reduce;
  }

  // Device memory from ncclMemAlloc, which symmetric windows need.
  static cuda::DeviceAllocator window_memory() {
    cuda::DeviceAllocator allocator;
    allocator.allocate = [](void** at, std::size_t bytes) {
      const ncclResult_t r = ncclMemAlloc(at, bytes);
      return r == ncclSuccess ? std::string() : std::string("ncclMemAlloc: ") + ncclGetErrorString(r);
    };
    allocator.release = [](void* at) { ncclMemFree(at); };
    return allocator;
  }

  void register_buffers(const cuda::DeviceRankBuffers& device, RunResources& resources) {
    for (const auto& [base, bytes] : device.allocations()) {
      void* handle = nullptr;
      ncclResult_t r = ncclCommRegister(comm_, base, bytes, &handle);
      r = settled(r);
      if (r != ncclSuccess) throw std::runtime_error("ncclCommRegister: " + nccl_failure(r, comm_));
      resources.registered.push_back(handle);
    }
  }

  // Collective on the communicator: every rank registers its buffers, in the same order.
  void register_windows(const cuda::DeviceRankBuffers& device, RunResources& resources) {
#if NCCL_VERSION_CODE >= 22700
    for (const auto& [base, bytes] : device.allocations()) {
      Window window{};
      ncclResult_t r = ncclCommWindowRegister(comm_, base, bytes, &window, NCCL_WIN_COLL_SYMMETRIC);
      r = settled(r);
      if (r != ncclSuccess) throw std::runtime_error("ncclCommWindowRegister: " + nccl_failure(r, comm_));
      resources.windows.push_back(window);
    }
#else
    (void)device;
    (void)resources;
    throw std::runtime_error("window=on: built against NCCL " + std::to_string(NCCL_VERSION_CODE) + ", before 2.27");
#endif
  }

  // NCCL's pre-multiplied sum with the scalar 1 in the case's dtype (the same exact result as a
  // sum), into `resources`; a dtype NCCL will not pre-multiply refuses the run.
  CallEnd premultiplied_sum(DType dtype, RunResources& resources) {
    std::uint64_t one = encode(dtype, 1.0);  // little-endian: the element's bytes come first
    ncclRedOp_t op{};
    ncclResult_t r = ncclRedOpCreatePreMulSum(&op, &one, *nccl_dtype(dtype), ncclScalarHostImmediate, comm_);
    r = settled(r);
    if (r == ncclSuccess) {
      resources.op = op;
      return {};
    }
    const std::string text = "ncclRedOpCreatePreMulSum: " + nccl_failure(r, comm_);
    if (r == ncclInvalidArgument || r == ncclInvalidUsage) return CallEnd::refusal(text);
    throw std::runtime_error(text);
  }

  std::string cuda_call(const char* call, cudaError_t error) {
    return error == cudaSuccess ? std::string() : cuda_failure(call, error);
  }

  // The collective's NCCL call with `op` on this rank's communicator and stream; nothing where
  // NCCL has no such collective.
  std::optional<ncclResult_t> launch(const Case& c, ncclRedOp_t op, void* in, void* out) {
    const ncclDataType_t dtype = *nccl_dtype(c.dtype);
    switch (c.collective) {
      case Collective::AllReduce: return ncclAllReduce(in, out, c.count, dtype, op, comm_, stream_);
      case Collective::AllGather: return ncclAllGather(in, out, c.count, dtype, comm_, stream_);
      case Collective::ReduceScatter: return ncclReduceScatter(in, out, c.count, dtype, op, comm_, stream_);
      case Collective::AllToAll: return ncclAlltoAll(in, out, c.count, dtype, comm_, stream_);
      case Collective::Broadcast: return ncclBroadcast(in, out, c.count, dtype, c.root, comm_, stream_);
      case Collective::Reduce: return ncclReduce(in, out, c.count, dtype, op, c.root, comm_, stream_);
      default: return std::nullopt;
    }
  }

  // This rank's call issued with every other rank's from one thread in one NCCL group
  // (mode=group): what NCCL said of it; past the deadline while others had not come, a hang;
  // a group another rank left, NCCL's error as the rank's.
  ncclResult_t launch_in_group(const Case& c, ncclRedOp_t op, void* in, void* out, bool& known) {
    const GroupedCalls::Part part = [&] {
      cudaSetDevice(device_);
      const std::optional<ncclResult_t> launched = launch(c, op, in, out);
      known = launched.has_value();
      return static_cast<int>(launched.value_or(ncclInvalidArgument));
    };
    Result<int> code = group_->join(world_.rank(), part, deadline_);
    check_cuda("cudaSetDevice", cudaSetDevice(device_));  // the issuer's thread set the others'
    if (code) return static_cast<ncclResult_t>(*code);
    past_deadline_check("the grouped call was not issued (" + code.error().message + ")");
    abort();
    throw std::runtime_error("the grouped call was not issued: " + code.error().message);
  }

  // Launches the collective with `op` on the stream and waits until NCCL has taken it (a
  // non-blocking communicator may return ncclInProgress): ok, refused (ncclInvalidUsage), or NCCL's error.
  CallEnd enqueue(const Case& c, ncclRedOp_t op, void* in, void* out) {
    bool known = true;
    ncclResult_t result = ncclInvalidArgument;
    if (group_) {
      result = launch_in_group(c, op, in, out, known);
    } else {
      const std::optional<ncclResult_t> launched = launch(c, op, in, out);
      known = launched.has_value();
      result = launched.value_or(ncclInvalidArgument);
    }
    if (!known) return "NCCL has no " + std::string(collcheck::name(c.collective));
    result = settled(result);
    if (result == ncclSuccess) return {};
    const std::string text = nccl_failure(result, comm_);
    if (result == ncclInvalidUsage) return CallEnd::refusal("NCCL refused the call (ncclInvalidUsage): " + text);
    if (result != ncclInvalidArgument) abort();
    return "the call failed: " + text;
  }

  // The collective captured once into a graph (`exec`), launched per call (nccl-tests' -G); NCCL's
  // refusal or error while capturing, as enqueue's.
  CallEnd capture(const Case& c, ncclRedOp_t op, void* in, void* out, cudaGraphExec_t& exec) {
    cudaGraph_t graph = nullptr;
    check_cuda("cudaStreamBeginCapture", cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    CallEnd enqueued = enqueue(c, op, in, out);
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    if (!enqueued.ok()) {
      if (graph != nullptr) cudaGraphDestroy(graph);
      return enqueued;
    }
    check_cuda("cudaStreamEndCapture", ended);
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check_cuda("cudaGraphInstantiate", made);
    return {};
  }

  // `result` of a call on the communicator, once the communicator is no longer busy with it
  // (settle), bounded by the run's deadline.
  ncclResult_t settled(ncclResult_t result) {
    result = settle(comm_, result, deadline_);
    if (result == ncclInProgress) past_deadline_check("NCCL still had the call in progress");
    return result;
  }

  // Polls the stream to completion, NCCL's asynchronous errors and the deadline on the way.
  std::string wait_for_stream() {
    for (;;) {
      const cudaError_t query = cudaStreamQuery(stream_);
      if (query == cudaSuccess) return {};
      if (query != cudaErrorNotReady) {
        abort();
        return cuda_failure("cudaStreamQuery", query);
      }
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress) {
        const std::string text = nccl_failure(state, comm_);
        abort();
        return "NCCL reported an error: " + text;
      }
      past_deadline_check("the call had not completed");
      std::this_thread::sleep_for(kPoll);
    }
  }

  void past_deadline_check(const std::string& what) {
    if (Clock::now() < deadline_) return;
    abort();
    throw PastDeadline{what + " at the run's deadline; the communicator was aborted (ncclCommAbort)"};
  }

  void abort() {
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  World& world_;
  NcclSetting setting_;
  Capabilities capabilities_;
  int device_;
  std::unique_ptr<cuda::RankStream> owned_stream_;
  cudaStream_t stream_;
  ncclComm_t comm_;
  std::shared_ptr<GroupedCalls> group_;  // mode=group: the world's, shared by its rank threads
  Clock::time_point deadline_{};
};

// Rank 0's unique id, shared over the world's control channel with every rank's readiness: a rank
// whose GPU or stream failed (or rank 0's ncclGetUniqueId) stops every rank here, rather than the
// others creating communicators and, under mode=group, waiting kInitSeconds for it.
Result<ncclUniqueId> shared_unique_id(World& world, std::string failed) {
  ncclUniqueId id{};
  if (failed.empty() && world.rank() == 0) {
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
      failed = "ncclGetUniqueId: " + std::string(ncclGetErrorString(r));
  }
  const auto all = allgather_unless_failed(world, {reinterpret_cast<const std::byte*>(&id), sizeof id}, failed);
  if (!all) return Error{"", "not creating the communicator, since " + all.error().message};
  if ((*all)[0].size() != sizeof id) return Error{"", "rank 0 sent no NCCL unique id"};
  std::memcpy(&id, (*all)[0].data(), sizeof id);
  return id;
}

}  // namespace

Result<std::unique_ptr<RankBackend>> make_nccl_rank_backend(World& world, const NcclSetting& setting,
                                                            const Capabilities& capabilities) {
  const std::string who = setting.name + " rank " + std::to_string(world.rank()) + ": ";
  int device = 0;
  std::unique_ptr<cuda::RankStream> stream;
  ncclComm_t comm = nullptr;
  std::shared_ptr<GroupedCalls> group;
  std::string failed;
  try {
    device = cuda::use_rank_device(world.rank());
    stream = std::make_unique<cuda::RankStream>();
  } catch (const std::exception& e) {
    failed = e.what();
  }
  const Result<ncclUniqueId> shared = shared_unique_id(world, failed);
  if (!shared) return Error{"--backend", who + shared.error().message};
  try {
    const ncclUniqueId id = *shared;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const auto end =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kInitSeconds));
    const GroupedCalls::Part init = [&] {
      cudaSetDevice(device);
      return static_cast<int>(ncclCommInitRankConfig(&comm, world.size(), id, world.rank(), &config));
    };
    ncclResult_t result = ncclInvalidArgument;
    if (setting.mode == NcclMode::Group) {
      group = grouped_calls_of(
          std::string(id.internal, sizeof id.internal), world.size(), [] { ncclGroupStart(); },
          [] { return static_cast<int>(ncclGroupEnd()); });
      Result<int> code = group->join(world.rank(), init, end);
      check_cuda("cudaSetDevice", cudaSetDevice(device));
      if (!code)
        return Error{"--backend", who + "creating every rank's communicator in one group: " + code.error().message};
      result = static_cast<ncclResult_t>(*code);
    } else {
      result = static_cast<ncclResult_t>(init());
    }
    result = settle(comm, result, end);
    if (result != ncclSuccess) {
      const std::string why = result == ncclInProgress
                                  ? "not ready after " + std::to_string(static_cast<int>(kInitSeconds)) + " s"
                                  : nccl_failure(result, comm);
      if (comm != nullptr) ncclCommAbort(comm);
      if (group) group->abandon(who + "ncclCommInitRankConfig failed: " + why);
      return Error{"--backend", who + "ncclCommInitRankConfig on GPU " + std::to_string(device) + ": " + why};
    }
  } catch (const std::exception& e) {
    return Error{"--backend", who + e.what()};
  }
  return std::unique_ptr<RankBackend>(std::make_unique<NcclRankBackend>(world, setting, capabilities, device,
                                                                        std::move(stream), comm, std::move(group)));
}

}  // namespace collcheck
