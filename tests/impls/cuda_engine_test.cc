// The cuda transport's engine driven directly on the host device: the same bits as the simulated
// fabric on the same schedules (ranks and switches, several calls, messages of many pieces through
// rings of two slots, MSCCL thread blocks with dependencies), timed calls on the buffers the call
// before left, the staging pool's reuse, and faults at its send hook ending `detected` or `ok` as
// the link protocol says, through the slots and with peer reads (p2p=on); and mode=processes on
// worlds of threads (every ring's ends meeting in shared memory, one process's stop reaching the
// others). Threaded: the tsan preset runs it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/backend/rank_backend.h"
#include "impls/backend/world.h"
#include "impls/cuda/device.h"
#include "impls/cuda/process_rings.h"
#include "impls/cuda/slot_engine.h"
#include "impls/link/guarded_buffer.h"
#include "impls/registry.h"
#include "impls/sim/sim_backend.h"
#include "impls/sim/simulator.h"
#include "reference/case.h"

namespace collcheck {
namespace {

Case case_of(std::string_view text) { return parse_case(text).value(); }

// What the simulated fabric gives for `calls` calls of `schedule`, with the engine's guard zones.
SimulatedRun simulated(const Schedule& schedule, int calls = 1) {
  SimulationOptions sim(7, nullptr, true);
  sim.guard = kGuardElements;
  sim.calls = calls;
  return simulate(schedule, sim_fabric(schedule.nranks()), sim);
}

// The engine's run of `schedule` must end with the outputs and inputs the simulated fabric gives.
void expect_same_as_sim(const Schedule& schedule, cuda::EngineOptions options, int calls = 1) {
  options.guard = kGuardElements;
  options.calls = calls;
  const SimulatedRun want = simulated(schedule, calls);
  ASSERT_TRUE(want.completed) << want.error;
  const cuda::EngineRun got = cuda::run_engine(schedule, options);
  ASSERT_TRUE(got.completed) << got.error;
  ASSERT_EQ(got.earlier_outputs, want.earlier_outputs);
  EXPECT_EQ(got.outputs, want.outputs);
  EXPECT_EQ(got.inputs, want.inputs);
  for (bool intact : got.guards_intact) EXPECT_TRUE(intact);
}

// Every algorithm on a case of 5 ranks in pieces of 64 over two channels, run with `options`.
void expect_every_algorithm_as_sim(const cuda::EngineOptions& options) {
  for (const Algorithm& algorithm : all_algorithms()) {
    Case c = case_of("allreduce/i32/sum/n=1000/ranks=5/root=1/outofplace/offset=1/values=exact/seed=3");
    c.collective = algorithm.collective;
    Knobs knobs;
    knobs.chunk = 64;
    knobs.channels = 2;
    Result<Schedule> schedule = make_schedule(algorithm.name, c, knobs);
    if (!schedule) continue;  // a shape the algorithm does not take
    SCOPED_TRACE(std::string(algorithm.name) + " " + to_string(c));
    expect_same_as_sim(stored(std::move(schedule).value()), options);
  }
}

TEST(CudaEngine, RunsEveryAlgorithmAsTheSimulatedFabricDoes) { expect_every_algorithm_as_sim({}); }

TEST(CudaEngine, CallsFollowEachOtherOnTheSameRings) {
  const Case c = case_of("allreduce/f32/avg/n=777/ranks=4/root=0/inplace/offset=0/values=exact/seed=5");
  expect_same_as_sim(make_schedule("ring", c).value(), {}, 3);
}

// What a timed run is measured by: when the slowest rank returned from each call, in order.
TEST(CudaEngine, EachCallsEndIsTimed) {
  const Case c = case_of("allreduce/f32/sum/n=4096/ranks=3/root=0/outofplace/offset=0/values=exact/seed=5");
  cuda::EngineOptions options;
  options.calls = 4;
  const cuda::EngineRun run = cuda::run_engine(make_schedule("ring", c).value(), options);
  ASSERT_TRUE(run.completed) << run.error;
  ASSERT_EQ(run.call_ends.size(), 4u);
  EXPECT_GT(run.call_ends.front(), 0);
  for (std::size_t call = 1; call < run.call_ends.size(); ++call)
    EXPECT_GE(run.call_ends[call], run.call_ends[call - 1]);
}

// Timed calls (bench) run on the buffers as the call before left them, the inputs written once:
// in place, the second call of a sum all-reduce sums the first's outputs, n times the first sum.
// Outputs between calls are read back only where they are wanted.
TEST(CudaEngine, TimedCallsRunOnTheBuffersTheCallBeforeLeft) {
  const Case c = case_of("allreduce/u32/sum/n=999/ranks=3/root=0/inplace/offset=0/values=exact/seed=5");
  const Schedule schedule = make_schedule("ring", c).value();
  const SimulatedRun first = simulated(schedule);
  ASSERT_TRUE(first.completed) << first.error;
  cuda::EngineOptions options;
  options.guard = kGuardElements;
  options.calls = 2;
  options.inputs_once = true;
  options.earlier_outputs = false;
  const cuda::EngineRun run = cuda::run_engine(schedule, options);
  ASSERT_TRUE(run.completed) << run.error;
  for (int r = 0; r < c.nranks; ++r) {
    const auto rank = static_cast<std::size_t>(r);
    EXPECT_TRUE(run.earlier_outputs[0][rank].empty());
    const std::vector<std::byte>& once = first.outputs[rank];
    const std::vector<std::byte>& twice = run.outputs[rank];
    ASSERT_EQ(twice.size(), once.size());
    for (std::size_t at = 0; at + 4 <= once.size(); at += 4) {
      std::uint32_t sum = 0, again = 0;
      std::memcpy(&sum, once.data() + at, 4);
      std::memcpy(&again, twice.data() + at, 4);
      ASSERT_EQ(again, static_cast<std::uint32_t>(sum * 3U)) << "rank " << r << " byte " << at;
    }
  }
}

// A participant's staged messages take their memory from its pool and give it back: a message no
// larger than one given back allocates nothing.
TEST(StagingPool, ReusesTheMemoryOfMessagesDoneWith) {
  const std::unique_ptr<cuda::Device> device = cuda::make_host_device(0);
  cuda::StagingPool pool(*device);
  {
    const cuda::StagedBytes first = pool.take(1000);
    EXPECT_EQ(first.size(), 1000u);
    const cuda::StagedBytes second = pool.take(3000);
    EXPECT_EQ(pool.allocations(), 2u);
  }
  const cuda::StagedBytes small = pool.take(900);  // the 1024 bytes kept, not the 4096
  const cuda::StagedBytes large = pool.take(4000);
  EXPECT_EQ(pool.allocations(), 2u);
  const cuda::StagedBytes more = pool.take(10);  // every kept allocation is in use
  EXPECT_EQ(pool.allocations(), 3u);
  EXPECT_NE(small.data(), large.data());
}

// Rings of two 1 KiB slots: a message of many pieces waits for credits between them.
TEST(CudaEngine, MessagesOfManyPiecesPassThroughTwoSlots) {
  const Case c = case_of("allreduce/f64/sum/n=5000/ranks=3/root=0/outofplace/offset=0/values=exact/seed=9");
  cuda::EngineOptions options;
  options.ring_bytes = 1;  // the smallest shape: 2 slots of 1 KiB
  EXPECT_EQ(cuda::ring_shape(6, options.ring_bytes).slots, 2u);
  EXPECT_EQ(cuda::ring_shape(6, options.ring_bytes).slot_bytes, 1024u);
  expect_same_as_sim(make_schedule("ring", c).value(), options);
  expect_same_as_sim(make_schedule("innet", c).value(), options);
}

// On a GPU the slots are larger where the rings have room (each piece costs host round trips to
// the device), and a message of megabytes passes in a few pieces; the engine runs alike.
TEST(CudaEngine, DeviceSlotsAreLargerWhereTheRingsHaveRoom) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  EXPECT_EQ(cuda::ring_shape(4, 64 * kMiB).slot_bytes, cuda::kHostSlotBytes);
  EXPECT_EQ(cuda::ring_shape(4, 64 * kMiB, cuda::kDeviceSlotBytes).slots, 8u);
  EXPECT_EQ(cuda::ring_shape(4, 64 * kMiB, cuda::kDeviceSlotBytes).slot_bytes, 2 * kMiB);
  EXPECT_EQ(cuda::ring_shape(16, 64 * kMiB, cuda::kDeviceSlotBytes).slots, 4u);
  EXPECT_EQ(cuda::ring_shape(16, 64 * kMiB, cuda::kDeviceSlotBytes).slot_bytes, kMiB);
  const Case c = case_of("allreduce/f32/sum/n=1500000/ranks=2/root=0/outofplace/offset=0/values=exact/seed=4");
  cuda::EngineOptions options;
  options.largest_slot = cuda::kDeviceSlotBytes;
  expect_same_as_sim(make_schedule("ring", c).value(), options);
}

// MSCCL thread blocks as streams of one participant, ordered by their dependencies.
TEST(CudaEngine, RunsMscclThreadBlocksWithDependencies) {
  const std::string file = std::string(COLLCHECK_MSCCL_DIR) + "/allreduce_1step_4gpu.xml";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " is not there";
  Result<SimVariant> variant = schedule_file_variant(file);
  ASSERT_TRUE(variant.ok()) << variant.error().text();
  const Case c = case_of("allreduce/i64/sum/n=96/ranks=4/root=0/inplace/offset=0/values=exact/seed=2");
  Result<Schedule> schedule = variant->schedule(c, Knobs{});
  ASSERT_TRUE(schedule.ok()) << schedule.error().text();
  expect_same_as_sim(*schedule, {});
}

// Does to the first message (or every one) what it is told.
class OneFault final : public LinkHook {
 public:
  explicit OneFault(SendDecision decision, bool corrupt, bool every)
      : decision_(decision), corrupt_(corrupt), every_(every) {}
  SendDecision on_send(const Message& message, std::span<std::byte> payload) override {
    if (!every_ && (message.from != 0 || message.sequence != 0)) return {};
    if (corrupt_ && !payload.empty()) payload[0] ^= std::byte{1};
    return decision_;
  }
  double deadline() const override { return 5; }

 private:
  SendDecision decision_;
  bool corrupt_, every_;
};

const Case kFaultCase = case_of("allreduce/u32/sum/n=300/ranks=3/root=0/outofplace/offset=0/values=exact/seed=1");

// Through the slots, or with `peer_reads` from the senders' staged bytes, lent in rings of two slots.
cuda::EngineRun run_with(LinkHook& hook, bool reliable = false, bool peer_reads = false) {
  cuda::EngineOptions options;
  options.hook = &hook;
  options.peer_reads = peer_reads;
  if (peer_reads) options.ring_bytes = 1;
  options.deadline = 5;
  options.protocol.timeout = 0.3;
  options.protocol.reliable = reliable;
  return cuda::run_engine(make_schedule("ring", kFaultCase).value(), options);
}

// Each first transmission of rank 0's messages lost, corrupted or held back in turn; every
// retransmission (attempt 1 on) left alone, or, `forever`, lost too.
class FirstAttempts final : public LinkHook {
 public:
  explicit FirstAttempts(bool forever = false) : forever_(forever) {}
  SendDecision on_send(const Message& message, std::span<std::byte> payload) override {
    SendDecision decision;
    if (message.from != 0 || (message.attempt > 0 && !forever_)) return decision;
    if (forever_ && message.sequence == 1) decision.drop = true;
    if (forever_) return decision;
    switch (message.sequence % 3) {
      case 0: decision.drop = true; break;
      case 1:
        if (!payload.empty()) payload[0] ^= std::byte{4};
        break;
      default: decision.reorder = true;
    }
    return decision;
  }
  double deadline() const override { return 5; }

 private:
  bool forever_;
};

// Reliable: what was lost, damaged or reordered the first time goes again (go-back-N, asked by
// the receiver) and the outputs are the simulated fabric's; the same faults without it end the
// run `detected`; a message lost on every attempt is given up after the retries, `detected`.
TEST(CudaEngine, ReliableModeRetransmitsWhatTheFirstAttemptsLost) {
  for (const bool peer_reads : {false, true}) {  // a retransmission the hook changes is staged afresh
    FirstAttempts first;
    const cuda::EngineRun unreliable = run_with(first, false, peer_reads);
    EXPECT_TRUE(unreliable.detected) << unreliable.error;
    FirstAttempts again;
    const cuda::EngineRun run = run_with(again, true, peer_reads);
    ASSERT_TRUE(run.completed) << run.error;
    const SimulatedRun want = simulate(make_schedule("ring", kFaultCase).value(), sim_fabric(3), SimulationOptions{});
    EXPECT_EQ(run.outputs, want.outputs);
    for (bool intact : run.guards_intact) EXPECT_TRUE(intact);
  }
  FirstAttempts forever(true);
  const cuda::EngineRun lost = run_with(forever, true);
  EXPECT_TRUE(lost.detected) << lost.error;
  EXPECT_FALSE(lost.hang);
  EXPECT_NE(lost.error.find("message 1 not taken after " + std::to_string(LinkProtocol{}.retries) + " retransmissions"),
            std::string::npos)
      << lost.error;
}

TEST(CudaEngine, ACorruptedMessageIsDetectedByItsChecksum) {
  for (const bool peer_reads : {false, true}) {
    OneFault corrupt({}, true, false);
    const cuda::EngineRun run = run_with(corrupt, false, peer_reads);
    EXPECT_FALSE(run.completed);
    EXPECT_TRUE(run.detected) << run.error;
    EXPECT_NE(run.error.find("from rank 0"), std::string::npos) << run.error;
    EXPECT_NE(run.error.find("checksum"), std::string::npos) << run.error;
  }
}

TEST(CudaEngine, ALostMessageIsDetectedByTheLinkTimeout) {
  SendDecision drop;
  drop.drop = true;
  OneFault lose(drop, false, true);  // every message: no later one shows a gap, only silence
  const cuda::EngineRun run = run_with(lose);
  EXPECT_TRUE(run.detected) << run.error;
  EXPECT_FALSE(run.hang);
  EXPECT_NE(run.error.find("did not arrive within the link timeout"), std::string::npos) << run.error;
}

// Held back behind the stream's next message: the receiver sees a gap, which without
// retransmission ends the run.
TEST(CudaEngine, AReorderedMessageArrivesAfterItsSuccessorAndIsDetected) {
  SendDecision behind;
  behind.reorder = true;
  OneFault reorder(behind, false, false);
  const cuda::EngineRun run = run_with(reorder);
  EXPECT_TRUE(run.detected) << run.error;
  EXPECT_NE(run.error.find("message 1 arrived where message 0 was due"), std::string::npos) << run.error;
}

TEST(CudaEngine, DuplicatesAndDelaysChangeNothing) {
  for (const bool peer_reads : {false, true}) {
    SendDecision twice;
    twice.duplicates = 2;
    twice.delay = 0.01;
    OneFault again(twice, false, true);
    const cuda::EngineRun run = run_with(again, false, peer_reads);
    ASSERT_TRUE(run.completed) << run.error;
    const SimulatedRun want = simulate(make_schedule("ring", kFaultCase).value(), sim_fabric(3), SimulationOptions{});
    EXPECT_EQ(run.outputs, want.outputs);
  }
}

// Peer reads (p2p=on): the receiver reads each piece in the sender's staged message. Every
// algorithm gives the simulated fabric's bits, and messages of many pieces pass through two slots,
// each lending its bytes until read (the faults' tests above run both ways).
TEST(CudaEnginePeerReads, RunEveryAlgorithmAsTheSimulatedFabricDoes) {
  cuda::EngineOptions options;
  options.peer_reads = true;
  expect_every_algorithm_as_sim(options);
  const Case many = case_of("allreduce/f64/sum/n=5000/ranks=3/root=0/outofplace/offset=0/values=exact/seed=9");
  options.ring_bytes = 1;  // 2 slots of 1 KiB: a message's later pieces wait for its first ones to be read
  expect_same_as_sim(make_schedule("ring", many).value(), options, 3);
  expect_same_as_sim(make_schedule("innet", many).value(), options);
}

// p2p=on is an option of @cuda and @cuda-host in one process; across processes it is refused.
TEST(CudaEnginePeerReads, TheOptionIsReadAndChecked) {
  const auto error_of = [](const char* spec) {
    Result<std::vector<std::unique_ptr<Backend>>> made = make_backends(spec, BackendOptions{});
    return made.ok() ? std::string("accepted") : made.error().message;
  };
  EXPECT_EQ(error_of("ring@cuda-host:p2p=on,chunk=8"), "accepted");
  EXPECT_EQ(error_of("all@cuda-host:p2p=off"), "accepted");
  EXPECT_NE(error_of("ring@cuda-host:p2p=yes").find("p2p=yes: must be on or off"), std::string::npos);
  EXPECT_NE(error_of("ring@cuda-host:p2p=on,mode=processes").find("not with mode=processes"), std::string::npos);
  EXPECT_NE(error_of("ring@cuda-host:colour=red").find("retries, mode, p2p"), std::string::npos);
  cuda::EngineOptions options;
  options.peer_reads = true;
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(1);
  options.world = worlds.front().get();
  const Case c = case_of("allreduce/f32/sum/n=64/ranks=1/root=0/outofplace/offset=0/values=exact/seed=1");
  EXPECT_NE(cuda::run_engine(make_schedule("ring", c).value(), options).error.find("one address space"),
            std::string::npos);
}

}  // namespace
}  // namespace collcheck

namespace collcheck {
namespace {

// mode=processes on a world of threads: each member runs the engine for the participants it
// hosts, every member with the same options; their runs, rank by rank.
std::vector<cuda::EngineRun> run_as_processes(const Schedule& schedule, cuda::EngineOptions options) {
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(schedule.nranks());
  std::vector<cuda::EngineRun> runs(worlds.size());
  std::vector<std::thread> members;
  for (std::size_t rank = 0; rank < worlds.size(); ++rank) {
    members.emplace_back([&, rank] {
      cuda::EngineOptions mine = options;
      mine.world = worlds[rank].get();
      runs[rank] = cuda::run_engine(schedule, mine);
    });
  }
  for (std::thread& member : members) member.join();
  return runs;
}

// Every ring's two ends find the same slots, headers and control words however the rings fall
// among the processes (switches hosted beside ranks, several channels, many rings per receiver):
// each member's outputs are the simulated fabric's for its own ranks, and empty for the others'.
TEST(CudaEngineProcesses, EachProcessRunsItsRanksAsTheSimulatedFabricDoes) {
  for (const std::string_view algorithm : {"ring", "innet", "pairwise", "tree"}) {
    Case c = case_of("allreduce/i32/sum/n=1000/ranks=4/root=1/outofplace/offset=1/values=exact/seed=3");
    if (algorithm == "pairwise") c.collective = Collective::AllToAll;
    Knobs knobs;
    knobs.chunk = 64;
    knobs.channels = 2;
    const Schedule schedule = stored(make_schedule(algorithm, c, knobs).value());
    SCOPED_TRACE(std::string(algorithm));
    const SimulatedRun want = simulated(schedule);
    ASSERT_TRUE(want.completed) << want.error;
    cuda::EngineOptions options;
    options.guard = kGuardElements;
    options.ring_bytes = 64 << 10;  // small rings: messages of many pieces
    const std::vector<cuda::EngineRun> runs = run_as_processes(schedule, options);
    for (std::size_t rank = 0; rank < runs.size(); ++rank) {
      ASSERT_TRUE(runs[rank].completed) << "rank " << rank << ": " << runs[rank].error;
      for (std::size_t other = 0; other < runs.size(); ++other) {
        if (other == rank) {
          EXPECT_EQ(runs[rank].outputs[other], want.outputs[other]) << "rank " << rank;
          EXPECT_EQ(runs[rank].inputs[other], want.inputs[other]) << "rank " << rank;
        } else {
          EXPECT_TRUE(runs[rank].outputs[other].empty());
        }
      }
    }
  }
}

// The end of a run across processes: a process waits for the others to be done with its memory,
// but only so long; one that never says so (gone, or stuck) leaves the waiting one `false` (its
// world broken) instead of holding it.
TEST(CudaEngineProcesses, FinishingWaitsForTheOthersOnlySoLong) {
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(2);
  std::vector<std::unique_ptr<cuda::ProcessRings>> across(2);
  std::vector<std::unique_ptr<cuda::Device>> devices(2);
  std::vector<std::vector<std::unique_ptr<cuda::SlotRing>>> rings(2);
  std::vector<std::thread> members;
  for (std::size_t rank = 0; rank < 2; ++rank) {
    members.emplace_back([&, rank] {
      devices[rank] = cuda::make_host_device(static_cast<int>(rank));
      for (int from = 0; from < 2; ++from) {  // 0 -> 1 and 1 -> 0, made alike by both
        auto& ring = rings[rank].emplace_back(std::make_unique<cuda::SlotRing>());
        ring->from = from;
        ring->to = 1 - from;
        ring->shape = cuda::RingShape{2, 1024};
      }
      std::vector<cuda::Device*> hosted(2, nullptr);
      hosted[rank] = devices[rank].get();
      across[rank] = std::make_unique<cuda::ProcessRings>(*worlds[rank]);
      across[rank]->place(rings[rank], 2, hosted);
    });
  }
  for (std::thread& member : members) member.join();
  // Both ends of each ring found the same words.
  EXPECT_EQ(rings[0][0]->control->taken.load(), 0u);
  rings[0][0]->control->taken.store(5);
  EXPECT_EQ(rings[1][0]->control->taken.load(), 5u);
  const auto began = std::chrono::steady_clock::now();
  EXPECT_FALSE(across[0]->finish(0.2)) << "rank 1 never said it was done";
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  EXPECT_GE(waited, 0.2);
  EXPECT_LT(waited, 2.0);
  EXPECT_TRUE(across[1]->finish(1)) << "rank 0 had said so";
  EXPECT_TRUE(across[0]->finish(1));
}

// `mode=processes` names a backend across processes, one spec per algorithm, named as written with
// the mode last; a bad mode, a mode given twice and an unknown option are refused, naming what is
// allowed; `mode=threads` stays in this process.
TEST(CudaEngineProcesses, TheModeOptionIsReadAndChecked) {
  const auto error_of = [](const char* spec) {
    Result<std::vector<std::unique_ptr<Backend>>> made = make_backends(spec, BackendOptions{});
    return made.ok() ? std::string("accepted") : made.error().message;
  };
  EXPECT_TRUE(runs_across_processes("ring@cuda-host:mode=processes"));
  EXPECT_TRUE(runs_across_processes("ring@cuda:chunk=4,mode=processes"));
  EXPECT_FALSE(runs_across_processes("ring@cuda-host:mode=threads"));
  EXPECT_FALSE(runs_across_processes("ring@cuda-host"));
  EXPECT_FALSE(runs_across_processes("ring@cudafoo:mode=processes"));
  EXPECT_NE(error_of("ring@cudafoo:mode=processes").find("transport 'cudafoo'"), std::string::npos);
  const Result<std::vector<RankBackendSpec>> specs = rank_backend_specs("all@cuda-host:chunk=3,mode=processes");
  ASSERT_TRUE(specs.ok()) << specs.error().text();
  EXPECT_EQ(specs->size(), algorithm_variant_names().size());
  EXPECT_EQ(specs->front().name, algorithm_variant_names().front() + "@cuda-host:chunk=3,mode=processes");
  EXPECT_EQ(specs->front().capabilities.chunk, 3u);
  EXPECT_EQ(rank_backend_specs("ring@cuda-host:mode=processes,reliable=on")->front().name,
            "ring@cuda-host:mode=processes,reliable=on")
      << "named as written";
  EXPECT_NE(error_of("ring@cuda-host:mode=fibers").find("mode=fibers: must be threads or processes"),
            std::string::npos);
  EXPECT_NE(error_of("ring@cuda-host:mode=processes,mode=threads").find("mode given twice"), std::string::npos);
  EXPECT_NE(error_of("ring@cuda-host:colour=red,mode=processes").find("retries, mode, p2p"), std::string::npos);
  EXPECT_EQ(error_of("ring@cuda-host:mode=threads,chunk=8"), "accepted");
}

// A process that ends the run stops every other at once: rank 1 finds rank 0's first message
// damaged, and rank 2, which waits on rank 1 with a link timeout beyond the deadline, ends
// `detected` by the stop, not `hang` at the deadline.
TEST(CudaEngineProcesses, OneProcessStoppingStopsEveryOther) {
  OneFault corrupt({}, true, false);
  cuda::EngineOptions options;
  options.hook = &corrupt;
  options.deadline = 8;
  options.protocol.timeout = 30;
  const auto began = std::chrono::steady_clock::now();
  const std::vector<cuda::EngineRun> runs = run_as_processes(make_schedule("ring", kFaultCase).value(), options);
  for (std::size_t rank = 0; rank < runs.size(); ++rank) {
    EXPECT_TRUE(runs[rank].detected) << "rank " << rank << ": " << runs[rank].error;
    EXPECT_FALSE(runs[rank].hang) << "rank " << rank << ": " << runs[rank].error;
  }
  EXPECT_NE(runs[1].error.find("checksum"), std::string::npos) << runs[1].error;
  EXPECT_NE(runs[2].error.find("another rank ended the run"), std::string::npos) << runs[2].error;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(), 5);
}

}  // namespace
}  // namespace collcheck
