// Where the cuda engine's rings over RDMA (`net=ib`, ib_rings.h) put their slots, on the verbs'
// loopback: host memory as it is on the host; on a device whose memory is not host memory, its
// memory by dma-buf where the device exports one and the verbs take it, else host memory the
// device reaches (host staging), with the reason, and the descriptor closed either way; and a link
// that goes down in the middle of a run stopping it `detected` with the link's words and where the
// slots were. The rings' data path runs under the conformance suite
// (`all@cuda-host:...,mode=processes,net=ib,verbs=loopback`).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/backend/world.h"
#include "impls/cuda/device.h"
#include "impls/cuda/ib_rings.h"
#include "impls/cuda/slot_engine.h"
#include "impls/ib/loopback_verbs.h"
#include "impls/link/guarded_buffer.h"
#include "reference/case.h"

namespace collcheck::cuda {
namespace {

// The host device under another name, as a GPU would be seen: its memory is not host memory, and
// it exports dma-buf descriptors (a memfd's, which no verbs could map) only when told to.
class DeviceAsAGpu final : public Device {
 public:
  explicit DeviceAsAGpu(bool exports) : host_(make_host_device(0)), exports_(exports) {}
  std::string name() const override { return "a GPU"; }
  std::byte* allocate(std::size_t bytes) override { return host_->allocate(bytes); }
  void release(std::byte* memory) override { host_->release(memory); }
  void write(std::byte* to, const std::byte* from, std::size_t bytes) override { host_->write(to, from, bytes); }
  void read(std::byte* to, const std::byte* from, std::size_t bytes) override { host_->read(to, from, bytes); }
  void fill(std::byte* to, std::byte value, std::size_t bytes) override { host_->fill(to, value, bytes); }
  void copy(std::byte* to, const std::byte* from, std::size_t bytes) override { host_->copy(to, from, bytes); }
  std::uint64_t checksum(const std::byte* data, std::size_t bytes) override { return host_->checksum(data, bytes); }
  std::uint64_t copy_with_checksum(std::byte* to, const std::byte* from, std::size_t bytes) override {
    return host_->copy_with_checksum(to, from, bytes);
  }
  void reduce(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
              std::size_t count) override {
    host_->reduce(dtype, op, a, b, out, count);
  }
  void finish_average(DType dtype, std::byte* data, std::size_t count, int nranks) override {
    host_->finish_average(dtype, data, count, nranks);
  }
  int dmabuf_of(std::byte* /*memory*/, std::size_t bytes, std::uint64_t& offset, std::string& why) override {
    if (!exports_) {
      why = "this GPU exports no dma-buf";
      return -1;
    }
    exported = ::memfd_create("collcheck-dmabuf-test", 0);
    if (exported >= 0 && ::ftruncate(exported, static_cast<off_t>(bytes)) != 0) why = "ftruncate failed";
    offset = 0;
    return exported;
  }
  std::byte* allocate_host(std::size_t bytes) override {
    ++staged;
    return host_->allocate(bytes);
  }
  void release_host(std::byte* memory) override { host_->release(memory); }

  int exported = -1;
  int staged = 0;

 private:
  std::unique_ptr<Device> host_;
  bool exports_;
};

ib::VerbsChoice loopback() {
  ib::VerbsChoice choice;
  choice.loopback = true;
  return choice;
}

TEST(IbRingsSlots, OnTheHostAreHostMemory) {
  const std::unique_ptr<Device> host = make_host_device(0);
  EXPECT_EQ(rdma_slots_text(*host, loopback()), "loopback (in-process): host memory");
}

TEST(IbRingsSlots, ADeviceWithoutDmaBufIsStagedInHostMemoryItReaches) {
  DeviceAsAGpu gpu(false);
  EXPECT_EQ(rdma_slots_text(gpu, loopback()),
            "loopback (in-process): host memory the GPU reaches (host staging: this GPU exports no dma-buf)");
  EXPECT_EQ(gpu.staged, 1);
}

// The device exports a descriptor, the loopback takes none: staged with the verbs' reason, the
// descriptor closed.
TEST(IbRingsSlots, ADmaBufTheVerbsRefuseIsStagedAndItsDescriptorClosed) {
  DeviceAsAGpu gpu(true);
  const std::string text = rdma_slots_text(gpu, loopback());
  EXPECT_EQ(
      text,
      "loopback (in-process): host memory the GPU reaches (host staging: loopback (in-process) registers no dma-buf)");
  EXPECT_EQ(gpu.staged, 1);
  ASSERT_GE(gpu.exported, 0);
  EXPECT_EQ(::fcntl(gpu.exported, F_GETFD), -1) << "the dma-buf descriptor was left open";
}

// Takes every queue pair of this process's loopback down as rank 0 stages its third message, as a
// cable pulled in the middle of a run: the writes after it fail (RetryExceeded).
class LinksDown final : public LinkHook {
 public:
  SendDecision on_send(const Message& message, std::span<std::byte> /*payload*/) override {
    if (message.from != 0 || message.sequence != 2 || done_.exchange(true)) return {};
    for (std::uint32_t number = 0; number < kQueuePairNumbers; ++number)
      ib::break_loopback_link(ib::process_loopback(), number);
    return {};
  }
  double deadline() const override { return 20; }

 private:
  static constexpr std::uint32_t kQueuePairNumbers = 1 << 16;
  std::atomic<bool> done_{false};
};

TEST(IbRingsRuns, ALinkThatGoesDownStopsTheRunWithItsWords) {
  const Case c = parse_case("allreduce/u32/sum/n=60000/ranks=2/root=0/outofplace/offset=0/values=exact/seed=1").value();
  Knobs knobs;
  knobs.chunk = 4096;
  const Schedule schedule = stored(make_schedule("ring", c, knobs).value());
  LinksDown hook;
  EngineOptions options;
  options.guard = kGuardElements;
  options.ring_bytes = 64 << 10;
  options.hook = &hook;
  options.deadline = 20;
  options.rdma = loopback();
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(2);
  std::vector<EngineRun> runs(2);
  {
    std::vector<std::jthread> members;
    members.reserve(2);
    for (std::size_t rank = 0; rank < 2; ++rank) {
      members.emplace_back([&, rank] {
        EngineOptions mine = options;
        mine.world = worlds[rank].get();
        runs[rank] = run_engine(schedule, mine);
      });
    }
  }
  bool named = false;
  for (const EngineRun& run : runs) {
    EXPECT_FALSE(run.completed);
    EXPECT_TRUE(run.detected) << run.error;
    named = named || (run.error.find("the RDMA link") != std::string::npos &&
                      run.error.find("transport retries exceeded") != std::string::npos &&
                      run.error.find("(loopback (in-process); slots in host memory)") != std::string::npos);
  }
  EXPECT_TRUE(named) << runs[0].error << "\n" << runs[1].error;
}

}  // namespace
}  // namespace collcheck::cuda
