// `plugin:PATH[:key=value,...]`: a user's C plugin (include/collcheck/plugin.h) as one rank's part
// of a world: init over the world's allgather, each call through the plugin's run, finalize.
#include "impls/plugin/plugin_backend.h"

#include <array>
#include <cstring>
#include <memory>

#include "collcheck/config.h"
#include "impls/backend/rank_calls.h"
#if COLLCHECK_HAVE_CUDA
#include "impls/cuda/cuda_device.h"
#include "impls/cuda/device_rank_buffers.h"
#endif
#include "impls/plugin/plugin_library.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

// The out-of-band allgather lent to init: the world's own, blocks of one size.
struct OutOfBand {
  World& world;
  std::string error;  // why the last allgather failed
};

int out_of_band_allgather(void* oob, const void* mine, std::size_t bytes, void* all) {
  auto& channel = *static_cast<OutOfBand*>(oob);
  try {
    const std::vector<std::vector<std::byte>> blocks =
        channel.world.allgather({static_cast<const std::byte*>(mine), bytes});
    for (std::size_t r = 0; r < blocks.size(); ++r) {
      if (blocks[r].size() != bytes) {
        channel.error = "the out-of-band allgather got " + std::to_string(blocks[r].size()) + " bytes from rank " +
                        std::to_string(r) + " and " + std::to_string(bytes) +
                        " from this one: every rank must pass one size";
        return COLLCHECK_PLUGIN_ERROR;
      }
      if (bytes > 0) std::memcpy(static_cast<std::byte*>(all) + r * bytes, blocks[r].data(), bytes);
    }
    return COLLCHECK_PLUGIN_OK;
  } catch (const WorldTimeout& timeout) {
    channel.error = "the out-of-band allgather timed out: " + timeout.what;
  } catch (const std::exception& e) {
    channel.error = std::string("the out-of-band allgather failed: ") + e.what();
  }
  return COLLCHECK_PLUGIN_ERROR;
}

// The ABI's number for each of our values (plugin_v1.h lists them in our enums' order).
static_assert(static_cast<int>(Collective::Reduce) == COLLCHECK_REDUCE &&
              static_cast<int>(Collective::AllToAll) == COLLCHECK_ALLTOALL &&
              static_cast<int>(DType::Float64) == COLLCHECK_FLOAT64 &&
              static_cast<int>(DType::BFloat16) == COLLCHECK_BFLOAT16 && static_cast<int>(RedOp::Avg) == COLLCHECK_AVG);
template <typename Value>
int abi_number(Value value) {
  return static_cast<int>(value);
}

class PluginRankBackend final : public RankBackend {
 public:
  PluginRankBackend(const collcheck_backend_v1& plugin, void* context, std::string name, Capabilities capabilities,
                    World& world)
      : plugin_(plugin), context_(context), name_(std::move(name)), capabilities_(std::move(capabilities)),
        world_(world) {}
  ~PluginRankBackend() override { plugin_.finalize(context_); }
  PluginRankBackend(const PluginRankBackend&) = delete;
  PluginRankBackend& operator=(const PluginRankBackend&) = delete;

  std::string name() const override { return name_; }

  RankRun run(const Case& c, const RankRunOptions& options) override {
    const std::string who = name_ + " rank " + std::to_string(world_.rank());
    if (std::string why = capabilities_.unsupported(c); !why.empty())
      return RankRun::ended(Outcome::Detected, who + ": " + to_string(c) + ": " + why);
    Result<std::vector<PluginOption>> knobs = parse_plugin_options(options.knobs);
    if (!knobs) return RankRun::ended(Outcome::Detected, who + ": knobs " + knobs.error().text());
    const std::vector<collcheck_option_v1> abi_knobs = abi_options(*knobs);
    RankBuffers buffers = make_rank_buffers(c, world_.rank());
    collcheck_call_v1 call{};
    call.collective = abi_number(c.collective);
    call.dtype = abi_number(c.dtype);
    call.op = abi_number(c.op);
    call.count = c.count;
    call.root = c.root;
    call.send = buffers.in;
    call.recv = buffers.out;
    call.in_place = c.in_place ? 1 : 0;
    call.deadline = options.deadline;
    call.knobs = abi_knobs.data();
    call.knob_count = static_cast<int>(abi_knobs.size());
    const auto run_plugin = [&]() -> std::string {
      std::array<char, 1024> error{};
      if (plugin_.run(context_, &call, error.data(), error.size()) == COLLCHECK_PLUGIN_OK) return {};
      return who + ": " + plugin_message(error.data(), error.size(), "run failed without a message");
    };
    if (capabilities_.memory != "device") return run_rank_calls(c, options, world_, buffers, run_plugin);
    return run_on_device(c, options, buffers, call, run_plugin, who);
  }

 private:
  // Memory COLLCHECK_MEMORY_CUDA: the buffers mirrored on GPU rank mod the GPUs, the call on a
  // stream of the rank's own, each call waited for (the stream polled up to the deadline).
  template <typename RunPlugin>
  RankRun run_on_device(const Case& c, const RankRunOptions& options, RankBuffers& buffers, collcheck_call_v1& call,
                        const RunPlugin& run_plugin, const std::string& who) {
#if COLLCHECK_HAVE_CUDA
    try {
      cuda::use_rank_device(world_.rank());
      if (!stream_) stream_ = std::make_unique<cuda::RankStream>();
      cuda::DeviceRankBuffers device(buffers);
      call.send = device.in();
      call.recv = device.out();
      call.stream = stream_->get();
      return run_rank_calls(
          c, options, world_, buffers,
          [&]() -> std::string {
            std::string error = run_plugin();
            if (!error.empty()) return error;
            error = cuda::wait_for_stream(stream_->get(), options.deadline);
            return error.empty() ? error : who + ": after run returned: " + error;
          },
          device.transfers());
    } catch (const std::exception& e) {
      return RankRun::ended(Outcome::Detected, who + ": " + e.what());
    }
#else
    (void)c, (void)options, (void)buffers, (void)call, (void)run_plugin;
    return RankRun::ended(Outcome::Detected, who + ": device memory in a build without CUDA");
#endif
  }

 private:
  const collcheck_backend_v1& plugin_;
  void* context_;
  std::string name_;
  Capabilities capabilities_;
  World& world_;
#if COLLCHECK_HAVE_CUDA
  std::unique_ptr<cuda::RankStream> stream_;
#endif
};

}  // namespace

Result<std::vector<RankBackendSpec>> plugin_backend_specs(std::string_view options, std::string_view spec) {
  const std::size_t colon = options.find(':');
  const std::string path(options.substr(0, colon));
  Result<const collcheck_backend_v1*> plugin = load_plugin(path);
  if (!plugin) return plugin.error();
  Result<std::vector<PluginOption>> parsed =
      parse_plugin_options(colon == std::string_view::npos ? std::string_view{} : options.substr(colon + 1));
  if (!parsed) return Error{"--backend", quoted_input(spec) + ": " + parsed.error().text()};
  Result<Capabilities> capabilities = plugin_capabilities(**plugin, path, *parsed);
  if (!capabilities) return capabilities.error();
  RankBackendSpec made;
  made.name = std::string(spec);
  made.capabilities = *capabilities;
  made.world_memory = library_temporaries;
  made.same_host_environment = pinned_plugin_environment(*plugin, path);
#if COLLCHECK_HAVE_CUDA
  // A plugin on device memory where there is no GPU: nothing is launched, and the reason said.
  if (capabilities->memory == "device") made.cannot_run_here = cuda::cuda_cannot_run_here();
#endif
  made.make = [plugin = *plugin, path, given = *parsed, name = made.name,
               capabilities = *capabilities](World& world) -> Result<std::unique_ptr<RankBackend>> {
    OutOfBand oob{world, {}};
    void* context = nullptr;
    std::array<char, 1024> error{};
    const std::vector<collcheck_option_v1> abi = abi_options(given);
    if (plugin->init(world.rank(), world.size(), abi.data(), static_cast<int>(abi.size()), &out_of_band_allgather, &oob,
                     &context, error.data(), error.size()) != COLLCHECK_PLUGIN_OK) {
      std::string why = plugin_message(error.data(), error.size(), "no message");
      if (!oob.error.empty()) why += " (" + oob.error + ")";
      return plugin_error(path, "init failed on rank " + std::to_string(world.rank()) + " of " +
                                    std::to_string(world.size()) + ": " + why);
    }
    return std::unique_ptr<RankBackend>(
        std::make_unique<PluginRankBackend>(*plugin, context, name, capabilities, world));
  };
  std::vector<RankBackendSpec> specs;
  specs.push_back(std::move(made));
  return specs;
}

}  // namespace collcheck
