// The cuda engine's state and its steps, shared by slot_engine.cc (set-up, the participants'
// loop, calls) and slot_messages.cc (sends and receives through the rings); slot_engine.h says how
// it works.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "impls/cuda/device.h"
#include "impls/cuda/process_rings.h"
#include "impls/cuda/slot_engine.h"
#include "impls/cuda/slot_ring.h"

namespace collcheck::cuda {

inline double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

struct StreamState {
  std::vector<int> steps;
  std::size_t next = 0;
  bool waiting = false;
  Clock::time_point quiet_since;  // when the step it waits on last heard anything
};

struct ParticipantState {
  int participant = 0;
  std::vector<StreamState> streams;
  std::vector<StepLink> links;  // per step
  std::vector<std::uint8_t> done;
  std::size_t remaining = 0;
  std::vector<int> outbound;  // the rings it sends on
  int call = 0;
  int returned = -1;         // the last call whose steps have all run (a rank returned from it)
  double between_calls = 0;  // seconds spent between calls reading outputs back, left out of call_ends
  std::unique_ptr<Device> device;
  std::unique_ptr<StagingPool> staging;  // its sends' staged bytes, on `device`
  DeviceGuardedBuffer input, output, scratch;
  RetransmitJitter patience;  // reliable: each wait before asking again, drawn (no two in step)
};

enum class Progress { Done, Waiting, Failed };

// The rings found so far while the participants' steps are read, and each participant's sends and
// receives counted per ring.
struct RingIndex {
  std::map<std::tuple<int, int, int>, int> ring_of;              // (from, to, channel)
  std::map<std::pair<int, int>, std::uint64_t> sends, receives;  // (ring, participant): steps so far
};

class Engine {
 public:
  Engine(const Schedule& schedule, const EngineOptions& options)
      : schedule_(schedule), options_(options), element_(size_of(schedule.shape.dtype)),
        settings_(resolve(options.protocol, kRealClock, options.deadline)) {}

  EngineRun run();

 private:
  void set_up();
  void place_rings();
  void finish_across();
  bool hosted(int participant) const { return across_ == nullptr || across_->hosts(participant, schedule_.nranks()); }
  // The run is over for this process: stopped here, or by another process.
  bool halted() const { return stopped_.load(std::memory_order_acquire) || (across_ != nullptr && across_->stopped()); }
  void link_step(ParticipantState& state, std::size_t k, const Step& step, RingIndex& links);
  void set_up_buffers(ParticipantState& state);
  void stop_at_deadline(ParticipantState& state);
  void record_return(ParticipantState& state);
  void participant_main(ParticipantState& state);
  bool advance(ParticipantState& state, StreamState& stream);
  Progress run_step(ParticipantState& state, StreamState& stream, int index);
  Progress receive(ParticipantState& state, StreamState& stream, int index, const Step& step);
  void land(ParticipantState& state, const Step& step, const PieceLabel& label, const std::byte* data);
  Progress keep_waiting(ParticipantState& state, const StreamState& stream, SlotRing& ring, std::uint64_t wanted,
                        Clock::time_point now);
  void post(ParticipantState& state, int index, const Step& step);
  void decide(Device& device, SlotRing& ring, Outgoing& out, Clock::time_point now);
  bool pump(Device& device, SlotRing& ring);
  void push_piece(Device& device, SlotRing& ring, Outgoing& front, std::size_t piece);
  bool heed_receiver(Device& device, SlotRing& ring);
  void rewind(Device& device, SlotRing& ring, std::uint64_t to);
  void ask(ParticipantState& state, SlotRing& ring, Clock::time_point now);
  void next_call(ParticipantState& state);
  bool finished(const ParticipantState& state) const;
  PieceVerdict judge(Device& device, const SlotRing& ring, const PieceLabel& label, const std::byte* data,
                     std::size_t message_bytes, std::byte* copy_to) const;
  std::vector<std::byte> final_output(ParticipantState& state);
  std::byte* at(ParticipantState& state, BufferKind buffer, std::size_t offset);
  void reduce(Device& device, const std::byte* a, const std::byte* b, std::byte* out, std::size_t count) const;
  void copy(Device& device, std::byte* to, const std::byte* from, std::size_t bytes) const;
  // Ends the run for every participant, with the first error given.
  void stop(bool detected, bool hang, const std::string& error);
  std::string stream_text(const SlotRing& ring, std::uint64_t sequence) const {
    return link_stream_text(participant_name(schedule_, ring.to), participant_name(schedule_, ring.from), ring.channel,
                            ring.per_call == 0 ? 0 : sequence / ring.per_call);
  }

  const Schedule& schedule_;
  const EngineOptions& options_;
  const std::size_t element_;
  const LinkSettings settings_;
  Clock::time_point start_, deadline_;
  Clock::time_point running_since_;  // the participants' threads start
  std::vector<ParticipantState> participants_;
  std::vector<std::unique_ptr<SlotRing>> rings_;
  std::atomic<bool> stopped_{false};
  std::mutex error_mutex_;
  EngineRun result_;
  // Declared last, so destroyed first: what it opened of other processes' memory goes before the
  // devices it was opened on.
  std::unique_ptr<RingsAcross> across_;
};

}  // namespace collcheck::cuda
