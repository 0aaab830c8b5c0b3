// Process rings (process_rings.h says how they work): the layout every process works out alike,
// the exchange of segments and handles, and the stop every process reads.
#include "impls/cuda/process_rings.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <new>
#include <stdexcept>
#include <thread>

#include "impls/schedule/schedule.h"
#include "impls/worlds/wire.h"

namespace collcheck::cuda {
namespace {

constexpr std::size_t kLine = 64;
constexpr std::size_t kSlotAlignment = 256;

std::size_t round_up(std::size_t bytes, std::size_t to) { return (bytes + to - 1) / to * to; }

// The first words of every process's segment.
struct RunWords {
  alignas(kLine) std::atomic<std::uint64_t> stop{0};
  alignas(kLine) std::atomic<std::uint64_t> done{0};  // the owner is done with the others' memory
};

// Where every ring lies in its receiver's memory, worked out alike by every process.
struct RingLayout {
  std::vector<std::size_t> control_at;     // per ring: its RingControl in the receiving process's segment
  std::vector<std::size_t> slots_at;       // per ring: its slots in the segment, or in its receiver's block
  std::vector<std::size_t> segment_bytes;  // per rank
  std::vector<std::size_t> block_bytes;    // per participant: its slots' allocation (devices with handles)

  RingLayout(const std::vector<std::unique_ptr<SlotRing>>& rings, int nranks, int nparticipants,
             bool slots_in_segment) {
    const auto ranks = static_cast<std::size_t>(nranks);
    control_at.resize(rings.size());
    slots_at.resize(rings.size());
    segment_bytes.assign(ranks, round_up(sizeof(RunWords), kLine));
    block_bytes.assign(static_cast<std::size_t>(nparticipants), 0);
    for (std::size_t r = 0; r < rings.size(); ++r) {
      std::size_t& end = segment_bytes[static_cast<std::size_t>(host_rank(rings[r]->to, nranks))];
      control_at[r] = end;
      end += round_up(sizeof(RingControl), kLine) + round_up(rings[r]->shape.slots * sizeof(SlotHeader), kLine);
    }
    for (std::size_t r = 0; r < rings.size(); ++r) {
      const std::size_t bytes = round_up(rings[r]->shape.slots * rings[r]->shape.slot_bytes, kSlotAlignment);
      std::size_t& end = slots_in_segment ? segment_bytes[static_cast<std::size_t>(host_rank(rings[r]->to, nranks))]
                                          : block_bytes[static_cast<std::size_t>(rings[r]->to)];
      end = round_up(end, kSlotAlignment);
      slots_at[r] = end;
      end += bytes;
    }
  }
};

// An announcement in the control channel's wire form (impls/worlds/wire.h).
std::vector<std::byte> encode(const ProcessRings::Announcement& a) {
  wire::Writer out;
  out.text(a.error);
  out.u64(a.pid);
  out.text(a.place);
  out.u64(a.participants.size());
  for (std::size_t k = 0; k < a.participants.size(); ++k) {
    out.u64(a.participants[k]);
    out.u64(a.addresses[k]);
    out.bytes(a.handles[k]);
  }
  return std::move(out.data());
}

ProcessRings::Announcement decode(std::span<const std::byte> in) {
  wire::Reader reader(in);
  ProcessRings::Announcement a;
  a.error = reader.text();
  a.pid = reader.u64();
  a.place = reader.text();
  const std::uint64_t count = reader.u64();
  for (std::uint64_t k = 0; k < count && reader.ok(); ++k) {
    a.participants.push_back(reader.u64());
    a.addresses.push_back(reader.u64());
    a.handles.push_back(reader.bytes());
  }
  if (!reader.ok()) throw std::runtime_error("process rings: a short announcement");
  return a;
}

// The first device of `devices` (this process's participants' own).
Device* any_device(const std::vector<Device*>& devices) {
  for (Device* device : devices) {
    if (device != nullptr) return device;
  }
  throw std::runtime_error("process rings: this process hosts no participant");
}

}  // namespace

ProcessRings::~ProcessRings() {
  for (const Opened& opened : opened_) opened.device->close_shared(opened.memory);
  for (std::size_t rank = 0; rank < segments_.size(); ++rank) {
    if (segments_[rank] != nullptr) ::munmap(segments_[rank], segment_bytes_[rank]);
  }
  if (segments_.empty() && own_ != nullptr) ::munmap(own_, segment_bytes_.at(static_cast<std::size_t>(rank())));
  if (!own_place_.empty()) unlink_segment(own_place_);
}

namespace {

// The words of every ring this process receives on, in its own segment, made before anyone maps it.
void set_up_inbound_words(std::byte* own, const std::vector<std::unique_ptr<SlotRing>>& rings, int nranks, int rank,
                          const RingLayout& layout) {
  new (own) RunWords;
  for (std::size_t r = 0; r < rings.size(); ++r) {
    if (host_rank(rings[r]->to, nranks) != rank) continue;
    std::byte* control = own + layout.control_at[r];
    new (control) RingControl;
    auto* headers = reinterpret_cast<SlotHeader*>(control + round_up(sizeof(RingControl), kLine));
    for (std::size_t k = 0; k < rings[r]->shape.slots; ++k) new (headers + k) SlotHeader;
  }
}

// A device with handles: each receiving participant's slots, one allocation, announced.
void share_blocks(const std::vector<Device*>& devices, const RingLayout& layout, std::vector<DeviceBytes>& blocks,
                  std::vector<std::byte*>& block_of, ProcessRings::Announcement& mine) {
  for (std::size_t p = 0; p < devices.size(); ++p) {
    if (devices[p] == nullptr || layout.block_bytes[p] == 0) continue;
    blocks.emplace_back(*devices[p], layout.block_bytes[p]);
    block_of[p] = blocks.back().data();
    mine.participants.push_back(p);
    mine.addresses.push_back(reinterpret_cast<std::uintptr_t>(block_of[p]));
    mine.handles.push_back(devices[p]->share(block_of[p]));
  }
}

}  // namespace

void ProcessRings::place(std::vector<std::unique_ptr<SlotRing>>& rings, int nranks,
                         const std::vector<Device*>& devices) {
  const auto me = static_cast<std::size_t>(rank());
  Device* local = any_device(devices);
  const bool by_handle = local->shares_by_handle();
  const RingLayout layout(rings, nranks, static_cast<int>(devices.size()), !by_handle);
  segment_bytes_ = layout.segment_bytes;

  // This process's segment and slots; a failure is announced, so that every member throws alike.
  Announcement mine;
  mine.pid = static_cast<std::uint64_t>(::getpid());
  std::vector<std::byte*> block_of(devices.size(), nullptr);
  try {
    Result<SegmentPlace> created = create_segment(world_.job(), rank(), segment_bytes_[me], own_, "--backend");
    if (!created) throw std::runtime_error(created.error().message);
    own_place_ = *created;
    mine.place = own_place_;
    set_up_inbound_words(own_, rings, nranks, rank(), layout);
    if (by_handle) share_blocks(devices, layout, blocks_, block_of, mine);
  } catch (const std::exception& failure) {
    mine.error = failure.what();
  }
  std::vector<Announcement> all;
  for (const std::vector<std::byte>& bytes : world_.allgather(encode(mine))) all.push_back(decode(bytes));
  for (std::size_t q = 0; q < all.size(); ++q) {
    if (!all[q].error.empty()) throw std::runtime_error("rank " + std::to_string(q) + ": " + all[q].error);
  }
  map_others(all);
  open_others(all, rings, nranks, *local, block_of);
  for (std::size_t r = 0; r < rings.size(); ++r) {
    SlotRing& ring = *rings[r];
    if (!hosts(ring.from, nranks) && !hosts(ring.to, nranks)) continue;
    std::byte* segment = segments_[static_cast<std::size_t>(host_rank(ring.to, nranks))];
    ring.control = reinterpret_cast<RingControl*>(segment + layout.control_at[r]);
    ring.headers = reinterpret_cast<SlotHeader*>(segment + layout.control_at[r] + round_up(sizeof(RingControl), kLine));
    ring.slots =
        by_handle ? block_of[static_cast<std::size_t>(ring.to)] + layout.slots_at[r] : segment + layout.slots_at[r];
  }
  world_.barrier();
  unlink_segment(own_place_);
  own_place_.clear();
}

// The others' segments, mapped here.
void ProcessRings::map_others(const std::vector<Announcement>& all) {
  const auto me = static_cast<std::size_t>(rank());
  segments_.assign(all.size(), nullptr);
  segments_[me] = own_;
  for (std::size_t q = 0; q < all.size(); ++q) {
    if (q == me) continue;
    std::string error;
    segments_[q] = map_segment(all[q].place, segment_bytes_[q], error);
    if (segments_[q] == nullptr) throw std::runtime_error("rank " + std::to_string(q) + "'s segment: " + error);
  }
}

// The slots of the other processes' receivers that this process sends to, opened by their handles
// (in a world of threads, the same address space: their addresses as they are).
void ProcessRings::open_others(const std::vector<Announcement>& all,
                               const std::vector<std::unique_ptr<SlotRing>>& rings, int nranks, Device& local,
                               std::vector<std::byte*>& block_of) {
  const auto me = static_cast<std::size_t>(rank());
  std::vector<bool> sent_to(block_of.size(), false);  // by a participant of this process
  for (const std::unique_ptr<SlotRing>& ring : rings) {
    if (hosts(ring->from, nranks)) sent_to[static_cast<std::size_t>(ring->to)] = true;
  }
  for (std::size_t q = 0; q < all.size(); ++q) {
    for (std::size_t k = 0; k < all[q].participants.size(); ++k) {
      if (q == me || all[q].participants[k] >= sent_to.size() || !sent_to[all[q].participants[k]]) continue;
      std::byte*& block = block_of[static_cast<std::size_t>(all[q].participants[k])];
      if (all[q].pid == all[me].pid) {
        block = reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(all[q].addresses[k]));  // NOLINT
        continue;
      }
      block = local.open_shared(all[q].handles[k]);
      opened_.push_back({&local, block});
    }
  }
}

void ProcessRings::stop_everyone() {
  for (std::byte* segment : segments_) {
    if (segment != nullptr) reinterpret_cast<RunWords*>(segment)->stop.store(1, std::memory_order_release);
  }
}

bool ProcessRings::stopped() const {
  return own_ != nullptr && reinterpret_cast<const RunWords*>(own_)->stop.load(std::memory_order_acquire) != 0;
}

bool ProcessRings::finish(double patience) {
  if (own_ == nullptr) return true;
  reinterpret_cast<RunWords*>(own_)->done.store(1, std::memory_order_release);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(patience));
  for (std::byte* segment : segments_) {
    if (segment == nullptr) continue;
    while (reinterpret_cast<const RunWords*>(segment)->done.load(std::memory_order_acquire) == 0) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return true;
}

}  // namespace collcheck::cuda
