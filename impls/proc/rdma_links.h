// The proc transport's RDMA links (`ALGORITHM@ib`): reliable-connected queue pairs to every other
// process, one per `lane` (a stream of channel c takes lane c mod the lanes, so that each channel
// has a queue pair of its own to each peer, as NCCL's channels have their connections), through
// the verbs interface of impls/ib/ (libibverbs, or the in-process loopback). The FIFOs stay where they are, in each
// receiver's segment, now registered for remote writes: a sender writes a piece into the receiver's slot with RDMA
// (from a registered staging slot of its own) and publishes the new tail with RDMA_WRITE_WITH_IMM; the receiver returns
// credits (its head), acknowledgements and rewind requests by RDMA into the sender's shadow of the FIFO's control
// block. progress.h says how the engine uses them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "impls/backend/world.h"
#include "impls/ib/verbs.h"
#include "impls/proc/transport.h"
#include "reference/result.h"

namespace collcheck::proc {

struct FifoControl;

// Where a stream's words live at the far end, for one RDMA write, and the queue pair it takes.
struct RemoteWords {
  int peer = -1;  // the world rank
  int lane = 0;   // which of the queue pairs to that peer
  std::uint64_t address = 0;
  std::uint32_t key = 0;
};

class RdmaLinks {
 public:
  // Staging bytes and shadow control blocks each process registers once.
  static constexpr std::size_t kStagingBytes = std::size_t{32} << 20;
  static constexpr std::size_t kShadows = 4096;
  static constexpr int kQueueDepth = 1024;

  // Collective: opens the device, registers this process's segment (`segment`, `bytes`), the
  // staging area and the shadows, and connects options.queue_pairs queue pairs (lanes) to every
  // other member. On an error every member returns one.
  static Result<std::unique_ptr<RdmaLinks>> connect(World& world, std::byte* segment, std::size_t bytes,
                                                    const ProcLinkOptions& options);
  ~RdmaLinks();
  RdmaLinks(const RdmaLinks&) = delete;
  RdmaLinks& operator=(const RdmaLinks&) = delete;

  std::string device_name() const;
  std::byte* staging() { return staging_.data(); }
  FifoControl* shadow(std::size_t index) const;
  int lanes() const { return lanes_; }
  // Rank `peer`'s segment at `offset`, and its shadow `index` at `offset` within it, over `lane`.
  RemoteWords segment_of(int peer, int lane, std::size_t offset) const;
  RemoteWords shadow_of(int peer, int lane, std::size_t index, std::size_t offset) const;

  // Posts an RDMA write of `bytes` local bytes (in the segment, staging or shadows) to `to` on its
  // lane; with an immediate when `immediate` >= 0. Returns the write's ordinal on its queue pair,
  // or an error. Post only where room(to): two more writes fit on the queue pair.
  Result<std::uint64_t> write(const std::byte* local, std::size_t bytes, const RemoteWords& to, long immediate = -1);
  bool room(const RemoteWords& to) const;
  // Writes on `to`'s queue pair completed so far (a write with ordinal n is done when this exceeds n).
  std::uint64_t completed(const RemoteWords& to) const { return completed_[pair_of(to.peer, to.lane)]; }
  // Writes posted so far on each lane to `peer` (what the tests look at).
  std::vector<std::uint64_t> posted_per_lane(int peer) const;
  // Drains the completion queues and reposts the receives immediates consumed: "" or the first
  // failure ("the RDMA link to rank 3: transport retries exceeded"); true in `moved` when any
  // completion came.
  std::string poll(bool& moved);
  // Waits (polling) until every write posted so far has completed or failed: "" or the failure.
  std::string drain(double seconds);
  bool failed() const { return !failure_.empty(); }

 private:
  // What each process tells every other one: where its segment and shadows are, with their keys
  // (then the address of its queue pair to each rank).
  struct Published {
    std::uint64_t segment = 0, shadows = 0;
    std::uint32_t segment_key = 0, shadow_key = 0;
  };
  struct Region {
    std::byte* base = nullptr;
    std::uint32_t key = 0;
  };
  RdmaLinks() = default;
  std::string open(std::byte* segment, std::size_t bytes, const ProcLinkOptions& options, int rank, Published& mine,
                   std::vector<ib::QueuePairAddress>& addresses);
  const ib::MemoryRegion* local_region(const std::byte* at, std::size_t bytes) const;
  void sent(const ib::Completion& done);
  void received(const ib::Completion& done);

  std::unique_ptr<ib::Verbs> owned_verbs_;  // libibverbs; the loopback is the process's own
  std::unique_ptr<ib::Device> device_;
  std::unique_ptr<ib::CompletionQueue> sends_, receives_;
  std::size_t pair_of(int peer, int lane) const {
    return static_cast<std::size_t>(peer) * static_cast<std::size_t>(lanes_) + static_cast<std::size_t>(lane);
  }

  int lanes_ = 1;
  std::vector<std::unique_ptr<ib::QueuePair>> pairs_;  // per rank and lane (pair_of); null to this one
  std::vector<std::byte> staging_;
  std::vector<std::byte> shadow_bytes_;
  std::vector<ib::MemoryRegion> regions_;          // segment, staging, shadows
  std::vector<Region> segments_, shadows_;         // every rank's, as it registered them
  std::vector<std::uint64_t> posted_, completed_;  // per queue pair
  std::string failure_;
};

}  // namespace collcheck::proc
