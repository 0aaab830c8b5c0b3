// Where the cuda engine's rings over RDMA (`net=ib`, ib_rings.h) put their slots, on the verbs'
// loopback: host memory as it is on the host; on a device whose memory is not host memory, its
// memory by dma-buf where the device exports one and the verbs take it, else host memory the
// device reaches (host staging), with the reason, and the descriptor closed either way; and a link
// that goes down in the middle of a run stopping it `detected` with the link's words and where the
// slots were; queue pairs only to the processes a ring joins, and a stop passed on to the rest. The rings' data path
// runs under the conformance suite
// (`all@cuda-host:...,mode=processes,net=ib,verbs=loopback`).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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

// Runs the ring all-reduce `c` on its ranks as members of a world of threads, its rings between
// them over the loopback's verbs, every send passing `hook`; each rank's run.
std::vector<EngineRun> run_over_rdma(const Case& c, LinkHook& hook, double timeout) {
  Knobs knobs;
  knobs.chunk = 4096;
  const Schedule schedule = stored(make_schedule("ring", c, knobs).value());
  EngineOptions options;
  options.guard = kGuardElements;
  options.ring_bytes = 64 << 10;
  options.hook = &hook;
  options.protocol.timeout = timeout;
  options.deadline = 60;
  options.rdma = loopback();
  const auto ranks = static_cast<std::size_t>(c.nranks);
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(c.nranks);
  std::vector<EngineRun> runs(ranks);
  {
    std::vector<std::jthread> members;
    members.reserve(ranks);
    for (std::size_t rank = 0; rank < ranks; ++rank) {
      members.emplace_back([&, rank] {
        EngineOptions mine = options;
        mine.world = worlds[rank].get();
        runs[rank] = run_engine(schedule, mine);
      });
    }
  }
  return runs;
}

TEST(IbRingsRuns, ALinkThatGoesDownStopsTheRunWithItsWords) {
  const Case c = parse_case("allreduce/u32/sum/n=60000/ranks=2/root=0/outofplace/offset=0/values=exact/seed=1").value();
  LinksDown hook;
  const std::vector<EngineRun> runs = run_over_rdma(c, hook, LinkProtocol{}.timeout);
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

// Counts the loopback's queue pairs as rank 0 stages its third message (every rank's are made and
// connected before anything is sent); with `damage`, flips a byte of that message after its
// checksum was taken, so that rank 1 finds it damaged and stops the run.
class QueuePairsSeen final : public LinkHook {
 public:
  explicit QueuePairsSeen(bool damage) : damage_(damage) {}
  SendDecision on_send(const Message& message, std::span<std::byte> payload) override {
    if (message.from != 0 || message.sequence != 2 || message.attempt != 0) return {};
    seen = ib::loopback_queue_pairs(ib::process_loopback());
    if (damage_ && !payload.empty()) payload[0] ^= std::byte{0x08};
    return {};
  }

  std::atomic<std::size_t> seen{0};

 private:
  bool damage_;
};

// A process has queue pairs to the processes it shares a ring with, not to every other one: on a
// ring of 6 ranks, 2 each (12 in all, where a pair to every other rank made 30); the run completes.
TEST(IbRingsRuns, QueuePairsGoOnlyToTheProcessesARingJoins) {
  const Case c = parse_case("allreduce/u32/sum/n=60000/ranks=6/root=0/outofplace/offset=0/values=exact/seed=1").value();
  QueuePairsSeen hook(false);
  const std::vector<EngineRun> runs = run_over_rdma(c, hook, LinkProtocol{}.timeout);
  for (const EngineRun& run : runs) EXPECT_TRUE(run.completed) << run.error;
  EXPECT_EQ(hook.seen.load(), 12u);
}

// A stop reaches ranks that share no ring with the rank that stopped: rank 1 finds rank 0's message
// damaged and stops the run; ranks 3 and 4 hear it only as it is passed on (rank 1 has queue pairs
// to ranks 0 and 2 alone). Every rank ends `detected` at once, the others saying another rank
// ended the run, none waiting out its 30 s link timeout (an engine that does not stop its own
// neighbours when another's stop ends its run fails here: ranks 3 and 5 time out instead).
TEST(IbRingsRuns, AStopIsPassedOnToRanksThatShareNoRingWithTheStopper) {
  const Case c = parse_case("allreduce/u32/sum/n=60000/ranks=6/root=0/outofplace/offset=0/values=exact/seed=1").value();
  QueuePairsSeen hook(true);
  const auto began = std::chrono::steady_clock::now();
  const std::vector<EngineRun> runs = run_over_rdma(c, hook, 30);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(), 20);
  for (std::size_t rank = 0; rank < runs.size(); ++rank) {
    const EngineRun& run = runs[rank];
    EXPECT_FALSE(run.completed) << "rank " << rank;
    EXPECT_TRUE(run.detected) << "rank " << rank << ": " << run.error;
    const std::string expected = rank == 1 ? "failed its checksum" : "another rank ended the run";
    EXPECT_NE(run.error.find(expected), std::string::npos) << "rank " << rank << ": " << run.error;
  }
}

}  // namespace
}  // namespace collcheck::cuda
