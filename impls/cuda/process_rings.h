// The cuda engine's message streams when its participants are processes of a world, one per rank
// (`ALGORITHM@cuda:mode=processes`, `ALGORITHM@cuda-host:mode=processes`): where each ring's slots,
// headers and control words lie, reached from both its ends; RingsAcross, what the engine asks of
// any such placement (this one by shared memory and CUDA IPC, ib_rings.h's by RDMA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "impls/backend/world.h"
#include "impls/cuda/device.h"
#include "impls/cuda/slot_ring.h"
#include "impls/worlds/shared_segment.h"

namespace collcheck::cuda {

// The rings between the processes of a world, however their ends reach each other.
class RingsAcross {
 public:
  explicit RingsAcross(World& world) : world_(world) {}
  virtual ~RingsAcross() = default;
  RingsAcross(const RingsAcross&) = delete;
  RingsAcross& operator=(const RingsAcross&) = delete;

  int rank() const { return world_.rank(); }
  bool hosts(int participant, int nranks) const { return host_rank(participant, nranks) == world_.rank(); }

  // Collective: every member calls it with the same rings (shape set), `devices` holding the
  // device of each participant it hosts (null for the others). Sets every ring's slots, headers
  // and control where this process is one of its ends. Throws std::runtime_error, on every member
  // alike where a member failed before the exchange.
  virtual void place(std::vector<std::unique_ptr<SlotRing>>& rings, int nranks,
                     const std::vector<Device*>& devices) = 0;
  virtual void stop_everyone() = 0;  // the run ends on every process
  virtual bool stopped() const = 0;  // some process ended it
  // Why the rings themselves stopped the run (a link failed), or "" (a process stopped it).
  virtual std::string why_stopped() const { return {}; }
  // Every member is done with the others' memory: says so and waits, at most `patience` seconds,
  // until the others have; false when some had not.
  virtual bool finish(double patience) = 0;

 protected:
  World& world_;
};

// Process rings work as follows. Every process runs the participants whose host_rank is its own,
// and every process finds the same rings in the same order (the engine reads them from the whole
// schedule), so each works out alone where any ring lies in its receiver's memory (the `RingLayout`):
// the receiving process's segment holds its `RunWords`, then each inbound ring's RingControl and
// slot headers, then, on devices without handles (the host), each inbound ring's slots. On a device
// with handles (CUDA) the slots of each receiving participant are one allocation of its device,
// which senders in other processes open by its IPC handle (a sender in the same process, a world of
// threads, takes the address itself). The members swap where their segments are and their handles
// in one allgather, map and open the others', meet (a barrier) and unlink their segments' names. A
// process that stops the run stores `stop` in every segment, and every process's participants read
// their own. At the end each process says in its segment that it is done with the others' memory
// and waits until every other one has said so (`finish`) before anything is unmapped or freed, so
// that no sender writes into memory its receiver has let go; a process gone (killed by a fault
// plan) or stuck is waited for only so long, and then the world is not to be used again.
class ProcessRings final : public RingsAcross {
 public:
  explicit ProcessRings(World& world) : RingsAcross(world) {}
  ~ProcessRings() override;

  void place(std::vector<std::unique_ptr<SlotRing>>& rings, int nranks, const std::vector<Device*>& devices) override;
  void stop_everyone() override;
  bool stopped() const override;
  bool finish(double patience) override;

  // What a process tells the others: its error before the exchange (empty: none), its pid, where
  // its segment is, and for each receiving participant it hosts the address and handle of its slots.
  struct Announcement {
    std::string error;
    std::uint64_t pid = 0;
    SegmentPlace place;
    std::vector<std::uint64_t> participants, addresses;
    std::vector<std::vector<std::byte>> handles;
  };

 private:
  void map_others(const std::vector<Announcement>& all);
  void open_others(const std::vector<Announcement>& all, const std::vector<std::unique_ptr<SlotRing>>& rings,
                   int nranks, Device& local, std::vector<std::byte*>& block_of);

  struct Opened {
    Device* device;
    std::byte* memory;
  };

  SegmentPlace own_place_;
  std::byte* own_ = nullptr;
  std::vector<std::byte*> segments_;        // per rank, mapped here (own_ at this rank)
  std::vector<std::size_t> segment_bytes_;  // per rank
  std::vector<DeviceBytes> blocks_;         // the slots of the receiving participants hosted here
  std::vector<Opened> opened_;              // other processes' slots opened by handle
};

}  // namespace collcheck::cuda
