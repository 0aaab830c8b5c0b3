// The `proc` transport: runs the participants of a Schedule that live in this process, exchanging
// messages with the other members of a World over shared memory (one host) or TCP (between hosts).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "impls/backend/world.h"
#include "impls/ib/verbs.h"
#include "impls/link/hook.h"
#include "impls/schedule/schedule.h"
#include "impls/sim/simulator.h"
#include "reference/result.h"

namespace collcheck {

// How processes reach each other: `auto` uses shared memory between processes on one host and
// TCP between hosts; `shm` refuses a world that spans hosts; `tcp` uses TCP (loopback on one
// host) between every two processes, so that one host can test that path; `ib` (the `ib`
// transport, ALGORITHM@ib) moves every message between two processes by RDMA writes into the
// receiver's FIFO (rdma_links.h), the processes meeting and stopping each other as with `auto`.
enum class ProcLinks { Auto, Shm, Tcp, Ib };
std::string_view name(ProcLinks);
Result<ProcLinks> parse_proc_links(std::string_view text);  // auto, shm, tcp

// The links, and for `ib` which verbs (the in-process loopback, whose ranks must be threads of
// one process, or libibverbs) and which device, port and GID index.
struct ProcLinkOptions {
  ProcLinks links = ProcLinks::Auto;
  ib::VerbsChoice verbs;
  int queue_pairs = 0;  // per peer (ib): a stream of channel c takes pair c mod this; 0: the channels
};

// The shape of every message stream: a bounded FIFO of slots per (from, to, channel). A
// message travels in pieces of at most one slot; up to kProcSlots pieces are in flight. Every
// piece carries its message's sequence number, its transmission and a checksum, checked by the
// receiver before it uses a byte (impls/hook.h, LinkProtocol, says what follows from that).
inline constexpr std::size_t kProcSlotBytes = std::size_t{128} << 10;
inline constexpr std::size_t kProcSlots = 8;
// The pipeline chunk (elements) of `ALGORITHM@proc` when the user gives none: a slot of float32,
// so that a ring's next step starts as soon as one slot of the last has landed (best of 2^14 to
// 2^18 on two ranks; docs/performance.md has the figures, and what it costs ranks that outnumber
// the cores).
inline constexpr std::size_t kProcDefaultChunk = kProcSlotBytes / sizeof(float);

// Where a participant's buffers are (after in-place aliasing); switches have only scratch.
struct ProcBuffers {
  std::byte* input = nullptr;
  std::byte* output = nullptr;
  std::byte* scratch = nullptr;
};

struct ProcRunOptions {
  LinkHook* hook = nullptr;     // every send passes through it; null: none
  ReductionOverride reduction;  // null members: the standard contract
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double deadline = 60;   // seconds from `start` after which a wait ends the run
  LinkProtocol protocol;  // checksums, timeout, reliable mode (impls/hook.h)
};

class ProcTransport {
 public:
  // Collective: every member calls it once; maps the peers' segments and opens the sockets.
  static Result<std::unique_ptr<ProcTransport>> connect(World&, const ProcLinkOptions&);
  ~ProcTransport();
  ProcTransport(const ProcTransport&) = delete;
  ProcTransport& operator=(const ProcTransport&) = delete;

  // Collective, at the start of every case: lays out the message streams of `schedule`,
  // empties this process's inbound ones, and meets the others (World::barrier).
  Status begin(const Schedule& schedule, const ProcRunOptions& options);
  // One call: every step of every participant hosted here, once; `buffers` is indexed by
  // participant (entries of participants hosted elsewhere are ignored). Calls after the first
  // follow at once, with no barrier; message sequence numbers continue.
  Status run_call(std::span<const ProcBuffers> buffers);
  // The end of a run: says this process is done and waits until every other one is, so that a
  // failure anywhere (a damaged last message too) fails the run on every process.
  Status finish();

  std::string links() const;  // what this process uses: "shm", "tcp", "shm+tcp" or "ib (DEVICE)"
  // An RDMA link failed (its queue pair stays in error): no later case can run on this transport.
  bool broken() const;
  // Messages this process sent again because their receivers asked (reliable), over every case.
  std::uint64_t sent_again() const;
  // Pieces this process pushed on to the next rank as they landed (receive and forward), over every case.
  std::uint64_t forwarded() const;

  struct State;

 private:
  explicit ProcTransport(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace collcheck
