// The `cuda` transport's engine: every participant of a schedule on a thread of its own, messages
// through receiver-side rings of slots with completion flags, data moved and reduced by the
// kernels. `cuda-host` runs it with every buffer in host memory and the kernels on the host.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "impls/backend/world.h"
#include "impls/cuda/device.h"
#include "impls/ib/verbs.h"
#include "impls/link/hook.h"
#include "impls/link/protocol.h"
#include "impls/schedule/schedule.h"
#include "impls/sim/simulator.h"

namespace collcheck::cuda {

// The engine works as follows. Each participant (rank or switch) is one thread that runs its
// streams of steps as far as each can go without waiting, then pushes what it has posted, and
// yields when nothing moved. Every message stream (from, to, channel) has a `SlotRing` in the
// receiver's memory: `kSlots` slots of `slot_bytes` bytes, each with a header (the piece's
// sequence number, offset, length and checksum) and a completion flag, the number of the piece it
// holds plus one, stored with release order after the payload. The receiver reads the flag with
// acquire order, judges the piece with link/'s LinkReceiver (sequence, offset, checksum), copies
// or reduces it into place with a kernel, and counts it in the ring's `taken` word, which is the
// sender's credit. A send step stages its message in an `Outgoing` (one copy, checksummed per
// piece as it is copied) and completes at once, so that no schedule deadlocks on the bounded
// rings; the sender's thread pushes staged pieces into free slots as they come. The send hook
// sees each message once when it is staged: drop, delay, duplicate, hold back behind the next
// message (reorder) or change its bytes (after they were checksummed). A receive that hears
// nothing for the link timeout ends the run `detected` for every participant; a participant still
// waiting at the deadline ends it as a hang. Calls after the first follow at once on the same
// buffers, sequence numbers continuing.
//
// Reliable (`reliable=on`), a piece that is damaged, out of order or overlong is dropped instead,
// and the receiver asks the sender to go back to the message it expects (the ring's `rewind_to`,
// counted in `rewinds`), at once or when it has heard nothing for its jittered patience; each
// message it takes whole is acknowledged in the ring's `acked`. The sender keeps what it pushed in
// `sent` (with its `pristine` bytes where a hook may change them) until acknowledged, and on a
// request goes back: every message from the one asked for goes again through the hook as a new
// attempt (go-back-N); asked for more than `retries` times, it ends the run `detected`.
//
// With peer reads (EngineOptions::peer_reads) a slot's header also names its piece's place in the
// sender's `Outgoing`, the slot's own bytes stay unused, and the receiver reads the piece there;
// the sender keeps such bytes `lent` (SlotRing::lend) until the ring's `taken` word has passed
// every piece that points into them, and stages a retransmission that the hook sees into fresh
// bytes, so that no piece still in the ring changes under its reader.

// A slot on the host: a piece costs a few copies and a checksum there, so small slots lose little.
// On a GPU every piece costs several host round trips to the device (a copy or kernel launched,
// then waited for), tens of microseconds in all, so its slots are larger (kDeviceSlotBytes).
inline constexpr std::size_t kHostSlotBytes = std::size_t{64} << 10;
inline constexpr std::size_t kDeviceSlotBytes = std::size_t{2} << 20;

struct EngineOptions {
  std::size_t guard = 0;  // elements of guard zone around every buffer; ranges may run into it
  const std::vector<std::vector<std::byte>>* inputs = nullptr;  // given inputs, rank by rank
  int calls = 1;
  std::uint64_t call_seed_step = 1;  // call k's inputs: the case with seed + k * this
  // Timed (bench): the inputs are written once, before the first call, and every call after it
  // runs on the buffers as the one before left them (in place: on its outputs), as nccl-tests'
  // calls do; call_seed_step is not used.
  bool inputs_once = false;
  // Each call's outputs read back before the next (EngineRun::earlier_outputs); a timed run that
  // is not checked needs none. The reading is left out of call_ends.
  bool earlier_outputs = true;
  LinkHook* hook = nullptr;
  LinkProtocol protocol;
  double deadline = 60;                            // seconds from the start
  ReductionOverride reduction;                     // null members: the device's kernels; set: the host device only
  DeviceMaker make_device = make_host_device;      // each participant's device
  std::size_t ring_bytes = std::size_t{64} << 20;  // the slots of every ring together, at most
  std::size_t largest_slot = kHostSlotBytes;       // a slot's bytes where the rings have room
  // Peer reads (`p2p=on`): a piece's slot carries where it lies in the sender's staged message
  // instead of a copy of it, and the receiver copies or reduces it from there, reading its peer's
  // memory (one copy less per piece; on GPUs a read across peer access). The sender lends the
  // staged bytes until the receiver has consumed every piece that points into them, and a
  // retransmission that the hook may change is staged afresh. The participants must share an
  // address space: threads of one process (not `world`).
  bool peer_reads = false;
  // The participants are processes of this world, each running those whose host_rank is its own,
  // the rings between them in shared memory (process_rings.h); the run's results hold this
  // process's ranks only. Null: every participant is a thread of this process.
  World* world = nullptr;
  // With `world`: the rings between processes go over RDMA through these verbs (ib_rings.h) instead
  // of shared memory and CUDA IPC (`net=ib`).
  std::optional<ib::VerbsChoice> rdma;
};

// A run's results; with EngineOptions::world, the entries of ranks other processes run are empty.
struct EngineRun {
  bool completed = false;
  bool detected = false;  // the link protocol stopped the run (a fault, a silent stream)
  bool hang = false;      // a participant was still waiting at the deadline
  // Across processes: some process did not say it was done with this one's memory in time (gone, or
  // stuck); the world is not to be used again.
  bool world_broken = false;
  std::string error;
  std::vector<std::vector<std::vector<std::byte>>> earlier_outputs;  // [call][rank], calls before the last
  std::vector<std::vector<std::byte>> outputs, inputs;               // the last call's, per rank
  std::vector<bool> guards_intact;
  // Per call, when its slowest rank returned from it: seconds since the participants started
  // (after buffers, inputs and rings were set up), for timed runs.
  std::vector<double> call_ends;
};

// Runs `schedule` (stored, validated with options.guard of slack) on the engine.
EngineRun run_engine(const Schedule& schedule, const EngineOptions& options);

// The slots of one ring when `rings` rings share `ring_bytes`: 8 slots of `largest_slot` bytes
// (64 KiB on the host), fewer and smaller (down to 2 of 1 KiB) where many rings share the bytes.
struct RingShape {
  std::size_t slots = 8;
  std::size_t slot_bytes = kHostSlotBytes;
};
RingShape ring_shape(std::size_t rings, std::size_t ring_bytes, std::size_t largest_slot = kHostSlotBytes);

}  // namespace collcheck::cuda
