// Rings over RDMA (ib_rings.h says how they work): the layout, the slots' memory, the exchange over
// the world, the stop and the last words; ib_courier.cc has the courier.
#include "impls/cuda/ib_rings.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

#include <unistd.h>

#include "impls/backend/world.h"
#include "impls/ib/ibverbs.h"
#include "impls/schedule/schedule.h"
#include "impls/worlds/wire.h"

namespace collcheck::cuda {
namespace {

constexpr std::size_t kLine = 64;
// Device slots are allocated in whole 2 MiB pieces, which cudaMalloc aligns so, for dma-buf's page
// alignment.
constexpr std::size_t kDmaBufGranule = std::size_t{2} << 20;

std::size_t round_up(std::size_t bytes, std::size_t to) { return (bytes + to - 1) / to * to; }

}  // namespace

// What each process tells the others: its error, its words, its queue pairs (one to each of its
// neighbours), and per ring it is an end of: the receiver's slots and headers, or the sender's image
// of the control words.
struct IbRings::Announcement {
  std::string error;
  std::uint64_t words = 0, words_key = 0;
  struct Pair {
    std::uint64_t rank = 0;          // the neighbour it is to
    std::vector<std::byte> address;  // a QueuePairAddress
  };
  std::vector<Pair> pairs;
  struct End {
    std::uint64_t index = 0, sending = 0, slots = 0, slots_key = 0, words = 0;
  };
  std::vector<End> ends;
};

namespace {

using Announcement = IbRings::Announcement;

std::vector<std::byte> encode(const Announcement& a) {
  wire::Writer out;
  out.text(a.error);
  out.u64(a.words);
  out.u64(a.words_key);
  out.u64(a.pairs.size());
  for (const Announcement::Pair& pair : a.pairs) {
    out.u64(pair.rank);
    out.bytes(pair.address);
  }
  out.u64(a.ends.size());
  for (const Announcement::End& end : a.ends) {
    for (std::uint64_t value : {end.index, end.sending, end.slots, end.slots_key, end.words}) out.u64(value);
  }
  return std::move(out.data());
}

Announcement decode(std::span<const std::byte> in) {
  wire::Reader reader(in);
  Announcement a;
  a.error = reader.text();
  a.words = reader.u64();
  a.words_key = reader.u64();
  const std::uint64_t pairs = reader.u64();
  for (std::uint64_t q = 0; q < pairs && reader.ok(); ++q) {
    Announcement::Pair pair;
    pair.rank = reader.u64();
    pair.address = reader.bytes();
    a.pairs.push_back(std::move(pair));
  }
  const std::uint64_t ends = reader.u64();
  for (std::uint64_t k = 0; k < ends && reader.ok(); ++k) {
    Announcement::End end;
    for (std::uint64_t* value : {&end.index, &end.sending, &end.slots, &end.slots_key, &end.words})
      *value = reader.u64();
    a.ends.push_back(end);
  }
  if (!reader.ok()) throw std::runtime_error("rings over RDMA: a short announcement");
  return a;
}

}  // namespace

// A remote ring end's slots: in the device's memory (host memory on the host; on a GPU registered
// by dma-buf), or in host memory the device reaches (staging, where no dma-buf could be had).
struct SlotMemory {
  Device* device = nullptr;
  std::byte* data = nullptr;
  bool staged = false;
  SlotMemory() = default;
  SlotMemory(const SlotMemory&) = delete;
  SlotMemory& operator=(const SlotMemory&) = delete;
  ~SlotMemory() {
    if (data == nullptr) return;
    if (staged) device->release_host(data);
    else device->release(data);
  }
};

namespace {

// Allocates `bytes` of slots for `device` and registers them with `verbs`: the region, and how (for
// the rings' description).
ib::MemoryRegion register_slots(ib::Device& verbs, Device& device, std::size_t bytes, SlotMemory& memory,
                                std::string& how) {
  memory.device = &device;
  const unsigned access = ib::LocalWrite | ib::RemoteWrite;
  std::string why;
  if (!device.memory_is_host()) {
    const std::size_t whole = round_up(bytes, kDmaBufGranule);
    memory.data = device.allocate(whole);
    std::uint64_t offset = 0;
    const int fd = device.dmabuf_of(memory.data, whole, offset, why);
    if (fd >= 0) {
      Result<ib::MemoryRegion> region = verbs.register_dmabuf(fd, offset, whole, memory.data, access);
      ::close(fd);
      if (region) {
        how = "device memory by dma-buf";
        return *region;
      }
      why = region.error().message;
    }
    device.release(std::exchange(memory.data, nullptr));
    memory.data = device.allocate_host(bytes);
    memory.staged = true;
  } else {
    memory.data = device.allocate(bytes);
  }
  Result<ib::MemoryRegion> region = verbs.register_memory(memory.data, bytes, access);
  if (!region) throw std::runtime_error(region.error().text());
  how = memory.staged ? "host memory the GPU reaches (host staging: " + why + ")" : "host memory";
  return *region;
}

}  // namespace

std::string rdma_slots_text(Device& device, const ib::VerbsChoice& choice) {
  std::unique_ptr<ib::Verbs> owned;
  Result<std::unique_ptr<ib::Device>> verbs = ib::open_chosen(choice, owned);
  if (!verbs) return verbs.error().message;
  try {
    SlotMemory memory;
    std::string how;
    const ib::MemoryRegion region = register_slots(**verbs, device, kDmaBufGranule, memory, how);
    (*verbs)->deregister(region);
    return (*verbs)->name() + ": " + how;
  } catch (const std::exception& failure) {
    return (*verbs)->name() + ": " + failure.what();
  }
}

IbRings::IbRings(World& world, ib::VerbsChoice choice) : RingsAcross(world), choice_(std::move(choice)) {}

IbRings::~IbRings() {
  quit_.store(true, std::memory_order_release);
  if (courier_thread_.joinable()) courier_thread_.join();
  for (const ib::MemoryRegion& region : regions_) device_->deregister(region);
}

std::atomic<std::uint64_t>& IbRings::run_word(std::size_t offset) const {
  return *std::launder(reinterpret_cast<std::atomic<std::uint64_t>*>(words_ + offset));
}

// The device, its completion queues, a queue pair to each neighbour with its receives posted, and
// the words registered: "" or why not.
std::string IbRings::open_verbs(int receives_per_pair) {
  Result<std::unique_ptr<ib::Device>> device = ib::open_chosen(choice_, owned_verbs_);
  if (!device) return device.error().text();
  device_ = std::move(*device);
  const int depth = kQueueDepth * std::max(static_cast<int>(neighbours_.size()), 1);
  Result<std::unique_ptr<ib::CompletionQueue>> sends = device_->create_completion_queue(depth);
  Result<std::unique_ptr<ib::CompletionQueue>> receives = device_->create_completion_queue(depth);
  if (!sends || !receives) return (sends ? receives.error() : sends.error()).text();
  sends_ = std::move(*sends);
  receives_ = std::move(*receives);
  Result<ib::MemoryRegion> words = device_->register_memory(words_, words_bytes_, ib::LocalWrite | ib::RemoteWrite);
  if (!words) return words.error().text();
  regions_.push_back(*words);
  words_key_ = words->remote_key;
  pairs_.resize(static_cast<std::size_t>(nranks_));
  outstanding_.assign(static_cast<std::size_t>(nranks_), 0);
  for (const int q : neighbours_) {
    Result<std::unique_ptr<ib::QueuePair>> made = device_->create_queue_pair(*sends_, *receives_, kQueueDepth);
    if (!made) return made.error().text();
    pairs_[static_cast<std::size_t>(q)] = std::move(*made);
    for (int r = 0; r < receives_per_pair; ++r) {
      if (Status posted = pairs_[static_cast<std::size_t>(q)]->post_receive(static_cast<std::uint64_t>(q)); !posted)
        return posted.error().text();
    }
  }
  return {};
}

// The run words, then each remote ring's control words and headers (the ring, or its image): the
// remotes, the words allocated, and where each remote ring's words start.
std::vector<std::size_t> IbRings::lay_out(std::vector<std::unique_ptr<SlotRing>>& rings) {
  std::size_t end = round_up(kDoneWords + 8 * static_cast<std::size_t>(nranks_), kLine);
  std::vector<std::size_t> at(rings.size(), 0);
  for (std::size_t r = 0; r < rings.size(); ++r) {
    SlotRing& ring = *rings[r];
    const bool sends = hosts(ring.from, nranks_), receives = hosts(ring.to, nranks_);
    if (sends == receives) continue;  // both ends here (placed as in one process), or neither
    remote_of_[r] = static_cast<int>(remotes_.size());
    Remote remote;
    remote.ring = &ring;
    remote.index = static_cast<int>(r);
    remote.sending = sends;
    remote.peer = host_rank(sends ? ring.to : ring.from, nranks_);
    remotes_.push_back(remote);
    at[r] = end;
    end += round_up(sizeof(RingControl), kLine) + round_up(ring.shape.slots * sizeof(SlotHeader), kLine);
  }
  neighbours_.clear();
  for (const Remote& remote : remotes_) neighbours_.push_back(remote.peer);
  std::sort(neighbours_.begin(), neighbours_.end());
  neighbours_.erase(std::unique(neighbours_.begin(), neighbours_.end()), neighbours_.end());
  words_bytes_ = end;
  std::size_t room = words_bytes_ + kLine;
  words_storage_ = std::make_unique<std::byte[]>(room);
  void* aligned = words_storage_.get();
  words_ = static_cast<std::byte*>(std::align(kLine, words_bytes_, aligned, room));
  std::memset(words_, 0, words_bytes_);
  for (std::size_t offset = 0; offset < kDoneWords + 8 * static_cast<std::size_t>(nranks_); offset += 8) {
    new (words_ + offset) std::atomic<std::uint64_t>(0);
  }
  run_word(kOneWord).store(1);
  return at;
}

// Every ring this process is an end of, placed: both ends here, as in one address space; one end,
// its words in the registered words and its slots registered with the verbs, opened here. What
// this process announces (or the error it met).
IbRings::Announcement IbRings::set_up_ends(std::vector<std::unique_ptr<SlotRing>>& rings,
                                           const std::vector<Device*>& devices, const std::vector<std::size_t>& at) {
  Announcement mine;
  int receives_per_pair = 8;
  try {
    for (std::size_t r = 0; r < rings.size(); ++r) {
      SlotRing& ring = *rings[r];
      const bool sends = hosts(ring.from, nranks_), receives = hosts(ring.to, nranks_);
      if (sends && receives) {
        ring.place_here(*devices[static_cast<std::size_t>(ring.to)]);
      } else if (sends || receives) {
        ring.control = new (words_ + at[r]) RingControl;
        ring.headers = reinterpret_cast<SlotHeader*>(words_ + at[r] + round_up(sizeof(RingControl), kLine));
        for (std::size_t k = 0; k < ring.shape.slots; ++k) new (ring.headers + k) SlotHeader;
        if (receives) receives_per_pair += static_cast<int>(ring.shape.slots);
      }
    }
    if (std::string error = open_verbs(std::min(receives_per_pair, kQueueDepth)); !error.empty())
      throw std::runtime_error(error);
    for (Remote& remote : remotes_) register_end(remote, devices, mine);
    mine.words = reinterpret_cast<std::uintptr_t>(words_);
    mine.words_key = words_key_;
    for (const int q : neighbours_) {
      const ib::QueuePairAddress address = pairs_[static_cast<std::size_t>(q)]->address();
      const auto* bytes = reinterpret_cast<const std::byte*>(&address);
      mine.pairs.push_back(Announcement::Pair{static_cast<std::uint64_t>(q), {bytes, bytes + sizeof address}});
    }
  } catch (const std::exception& failure) {
    mine.error = failure.what();
  }
  return mine;
}

// A remote ring end's slots, allocated and registered; what the other end needs of it, announced.
void IbRings::register_end(Remote& remote, const std::vector<Device*>& devices, Announcement& mine) {
  SlotRing& ring = *remote.ring;
  Device& device = *devices[static_cast<std::size_t>(remote.sending ? ring.from : ring.to)];
  slots_.push_back(std::make_unique<SlotMemory>());
  std::string how;
  const ib::MemoryRegion slots =
      register_slots(*device_, device, ring.shape.slots * ring.shape.slot_bytes, *slots_.back(), how);
  ring.slots = slots_.back()->data;
  regions_.push_back(slots);
  if (!remote.sending && !device.memory_is_host() && !slots_.back()->staged) remote.flush = &device;
  if (description_.empty()) description_ = "; slots in " + how;
  remote.slots_key = slots.local_key;
  const void* words = remote.sending ? static_cast<void*>(ring.control) : static_cast<void*>(ring.headers);
  mine.ends.push_back(Announcement::End{static_cast<std::uint64_t>(remote.index), remote.sending ? 1U : 0U,
                                        reinterpret_cast<std::uintptr_t>(ring.slots), slots.remote_key,
                                        reinterpret_cast<std::uintptr_t>(words)});
}

// Connects the queue pair to each neighbour with the neighbour's to this rank (every process finds
// the same rings, so a neighbour has this one for its own) and learns where each remote ring's
// other end lies: "" or the first failure to connect.
std::string IbRings::connect_all(const std::vector<Announcement>& all) {
  std::string error;
  peer_words_.assign(all.size(), 0);
  peer_words_key_.assign(all.size(), 0);
  for (std::size_t q = 0; q < all.size(); ++q) {
    peer_words_[q] = all[q].words;
    peer_words_key_[q] = static_cast<std::uint32_t>(all[q].words_key);
  }
  for (const int q : neighbours_) {
    const auto neighbour = static_cast<std::size_t>(q);
    const auto theirs = std::find_if(
        all[neighbour].pairs.begin(), all[neighbour].pairs.end(),
        [this](const Announcement::Pair& pair) { return pair.rank == static_cast<std::uint64_t>(rank()); });
    if (theirs == all[neighbour].pairs.end()) {
      error = "rank " + std::to_string(q) + " has no queue pair to rank " + std::to_string(rank()) +
              ", which shares a ring with it";
      break;
    }
    ib::QueuePairAddress address;
    std::memcpy(&address, theirs->address.data(), std::min(theirs->address.size(), sizeof address));
    if (Status connected = pairs_[neighbour]->connect(address); !connected) {
      error = "connecting to rank " + std::to_string(q) + ": " + connected.error().text();
      break;
    }
  }
  for (Remote& remote : remotes_) {
    for (const Announcement::End& other : all[static_cast<std::size_t>(remote.peer)].ends) {
      if (other.index != static_cast<std::uint64_t>(remote.index) || (other.sending != 0) == remote.sending) continue;
      remote.remote_slots = other.slots;
      remote.remote_slots_key = static_cast<std::uint32_t>(other.slots_key);
      remote.remote_words = other.words;
    }
  }
  return error;
}

void IbRings::place(std::vector<std::unique_ptr<SlotRing>>& rings, int nranks, const std::vector<Device*>& devices) {
  nranks_ = nranks;
  remote_of_.assign(rings.size(), -1);
  const std::vector<std::size_t> at = lay_out(rings);
  std::vector<Announcement> all;
  for (const std::vector<std::byte>& bytes : world_.allgather(encode(set_up_ends(rings, devices, at))))
    all.push_back(decode(bytes));
  for (std::size_t q = 0; q < all.size(); ++q) {
    if (!all[q].error.empty()) throw std::runtime_error("rank " + std::to_string(q) + ": " + all[q].error);
  }
  // A failure to connect is known only here: told to every member, so that each throws alike.
  const std::string error = first_failure(world_, connect_all(all));
  if (!error.empty()) throw std::runtime_error(error);
  description_ = device_->name() + (description_.empty() ? "; no ring between processes here" : description_);
  world_.barrier();  // every queue pair connected before anything is written
  courier_thread_ = std::thread([this] { courier(); });
}

void IbRings::stop_everyone() {
  if (words_ == nullptr) return;
  run_word(kStopWord).store(1, std::memory_order_release);
  stop_asked_.store(true, std::memory_order_release);
}

bool IbRings::stopped() const {
  return failed_.load(std::memory_order_acquire) ||
         (words_ != nullptr && run_word(kStopWord).load(std::memory_order_acquire) != 0);
}

std::string IbRings::why_stopped() const {
  const std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_.empty() ? failure_ : failure_ + " (" + description_ + ")";
}

bool IbRings::finish(double patience) {
  if (!courier_thread_.joinable()) return true;
  finishing_.store(true, std::memory_order_release);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(patience));
  const auto heard_everyone = [&] {  // every neighbour: no other process writes into this one's memory
    if (!last_word_said_.load(std::memory_order_acquire)) return false;
    for (const int q : neighbours_) {
      if (run_word(kDoneWords + 8 * static_cast<std::size_t>(q)).load(std::memory_order_acquire) == 0) return false;
    }
    return outstanding_total_.load(std::memory_order_relaxed) == 0;
  };
  bool everyone = false;
  while (!(everyone = heard_everyone()) && !failed_.load(std::memory_order_acquire) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  quit_.store(true, std::memory_order_release);
  courier_thread_.join();
  return everyone;
}

}  // namespace collcheck::cuda
