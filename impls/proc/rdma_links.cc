// The proc transport's RDMA links (see rdma_links.h): set-up over the world's allgather, writes,
// and the completion queues.
#include "impls/proc/rdma_links.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "impls/backend/world.h"
#include "impls/ib/ibverbs.h"
#include "impls/ib/loopback_verbs.h"
#include "impls/proc/progress.h"

namespace collcheck::proc {
namespace {

constexpr int kPairShift = 40;  // a write's work id: queue pair << kPairShift | ordinal

std::vector<std::byte> as_bytes(const void* data, std::size_t bytes) {
  const auto* begin = static_cast<const std::byte*>(data);
  return {begin, begin + bytes};
}

}  // namespace

Result<std::unique_ptr<RdmaLinks>> RdmaLinks::connect(World& world, std::byte* segment, std::size_t bytes,
                                                      const ProcLinkOptions& options) {
  std::unique_ptr<RdmaLinks> links(new RdmaLinks);
  const auto size = static_cast<std::size_t>(world.size());
  const int rank = world.rank();
  std::string error;
  links->lanes_ = std::max(options.queue_pairs, 1);
  const std::size_t pairs = size * static_cast<std::size_t>(links->lanes_);
  links->pairs_.resize(pairs);
  links->posted_.assign(pairs, 0);
  links->completed_.assign(pairs, 0);
  links->staging_.assign(kStagingBytes, std::byte{0});
  links->shadow_bytes_.assign(kShadows * sizeof(FifoControl), std::byte{0});
  Published mine;
  std::vector<ib::QueuePairAddress> addresses(pairs);
  error = links->open(segment, bytes, options, rank, mine, addresses);
  error = first_failure(world, error);
  if (!error.empty()) return Error{"ib", error};
  std::vector<std::byte> blob = as_bytes(&mine, sizeof mine);
  const std::vector<std::byte> tail = as_bytes(addresses.data(), addresses.size() * sizeof(ib::QueuePairAddress));
  blob.insert(blob.end(), tail.begin(), tail.end());
  const std::vector<std::vector<std::byte>> all = world.allgather(blob);
  links->segments_.resize(size);
  links->shadows_.resize(size);
  for (std::size_t q = 0; q < size; ++q) {
    Published theirs;
    std::memcpy(&theirs, all[q].data(), sizeof theirs);
    links->segments_[q] = Region{reinterpret_cast<std::byte*>(theirs.segment), theirs.segment_key};  // NOLINT
    links->shadows_[q] = Region{reinterpret_cast<std::byte*>(theirs.shadows), theirs.shadow_key};    // NOLINT
    for (int lane = 0; lane < links->lanes_ && q != static_cast<std::size_t>(rank) && error.empty(); ++lane) {
      ib::QueuePairAddress peer;  // theirs to us on this lane
      const std::size_t at = links->pair_of(rank, lane);
      std::memcpy(&peer, all[q].data() + sizeof theirs + at * sizeof peer, sizeof peer);
      Status connected = links->pairs_[links->pair_of(static_cast<int>(q), lane)]->connect(peer);
      if (!connected) error = "connecting to rank " + std::to_string(q) + ": " + connected.error().text();
    }
  }
  error = first_failure(world, error);
  if (!error.empty()) return Error{"ib", error};
  return links;
}

// Opens the device, registers the three areas, makes the queue pairs to every peer with their
// receives posted; fills in what this process publishes. "" or why not.
std::string RdmaLinks::open(std::byte* segment, std::size_t bytes, const ProcLinkOptions& options, int rank,
                            Published& mine, std::vector<ib::QueuePairAddress>& addresses) {
  Result<std::unique_ptr<ib::Device>> device = ib::open_chosen(options.verbs, owned_verbs_);
  if (!device) return device.error().text();
  device_ = std::move(*device);
  const int pairs = static_cast<int>(pairs_.size());
  Result<std::unique_ptr<ib::CompletionQueue>> sends = device_->create_completion_queue(kQueueDepth * pairs);
  Result<std::unique_ptr<ib::CompletionQueue>> receives = device_->create_completion_queue(kQueueDepth * pairs);
  if (!sends || !receives) return (sends ? receives.error() : sends.error()).text();
  sends_ = std::move(*sends);
  receives_ = std::move(*receives);
  const std::pair<std::byte*, std::size_t> areas[] = {
      {segment, bytes}, {staging_.data(), staging_.size()}, {shadow_bytes_.data(), shadow_bytes_.size()}};
  const unsigned access[] = {ib::LocalWrite | ib::RemoteWrite, ib::LocalWrite, ib::LocalWrite | ib::RemoteWrite};
  for (std::size_t i = 0; i < 3; ++i) {
    Result<ib::MemoryRegion> region = device_->register_memory(areas[i].first, areas[i].second, access[i]);
    if (!region) return region.error().text();
    regions_.push_back(*region);
  }
  mine = Published{reinterpret_cast<std::uint64_t>(segment), reinterpret_cast<std::uint64_t>(shadow_bytes_.data()),
                   regions_[0].remote_key, regions_[2].remote_key};
  for (std::size_t pair = 0; pair < pairs_.size(); ++pair) {
    if (pair / static_cast<std::size_t>(lanes_) == static_cast<std::size_t>(rank)) continue;
    Result<std::unique_ptr<ib::QueuePair>> made = device_->create_queue_pair(*sends_, *receives_, kQueueDepth);
    if (!made) return made.error().text();
    pairs_[pair] = std::move(*made);
    addresses[pair] = pairs_[pair]->address();
    for (int r = 0; r < kQueueDepth; ++r) {
      if (Status posted = pairs_[pair]->post_receive(pair); !posted) return posted.error().text();
    }
  }
  return {};
}

RdmaLinks::~RdmaLinks() {
  pairs_.clear();
  if (device_ != nullptr) {
    for (const ib::MemoryRegion& region : regions_) device_->deregister(region);
  }
  sends_.reset();
  receives_.reset();
  device_.reset();
}

std::string RdmaLinks::device_name() const { return device_ != nullptr ? device_->name() : "none"; }

FifoControl* RdmaLinks::shadow(std::size_t index) const {
  return reinterpret_cast<FifoControl*>(const_cast<std::byte*>(shadow_bytes_.data()) + index * sizeof(FifoControl));
}

RemoteWords RdmaLinks::segment_of(int peer, int lane, std::size_t offset) const {
  const Region& region = segments_[static_cast<std::size_t>(peer)];
  return RemoteWords{peer, lane, reinterpret_cast<std::uint64_t>(region.base + offset), region.key};
}

RemoteWords RdmaLinks::shadow_of(int peer, int lane, std::size_t index, std::size_t offset) const {
  const Region& region = shadows_[static_cast<std::size_t>(peer)];
  return RemoteWords{peer, lane, reinterpret_cast<std::uint64_t>(region.base + index * sizeof(FifoControl) + offset),
                     region.key};
}

std::vector<std::uint64_t> RdmaLinks::posted_per_lane(int peer) const {
  const auto first = posted_.begin() + static_cast<std::ptrdiff_t>(pair_of(peer, 0));
  return {first, first + lanes_};
}

const ib::MemoryRegion* RdmaLinks::local_region(const std::byte* at, std::size_t bytes) const {
  for (const ib::MemoryRegion& region : regions_) {
    if (at >= region.address && static_cast<std::size_t>(at - region.address) + bytes <= region.bytes) return &region;
  }
  return nullptr;
}

bool RdmaLinks::room(const RemoteWords& to) const {
  const std::size_t pair = pair_of(to.peer, to.lane);
  return posted_[pair] - completed_[pair] + 2 <= static_cast<std::uint64_t>(kQueueDepth);
}

Result<std::uint64_t> RdmaLinks::write(const std::byte* local, std::size_t bytes, const RemoteWords& to,
                                       long immediate) {
  const std::size_t q = pair_of(to.peer, to.lane);
  const ib::MemoryRegion* region = local_region(local, bytes);
  if (region == nullptr) return Error{"ib", "an RDMA write from memory that is not registered"};
  ib::WriteRequest request;
  request.work_id = (static_cast<std::uint64_t>(q) << kPairShift) | posted_[q];
  request.local = local;
  request.bytes = bytes;
  request.local_key = region->local_key;
  request.remote_address = to.address;
  request.remote_key = to.key;
  request.with_immediate = immediate >= 0;
  request.immediate = immediate >= 0 ? static_cast<std::uint32_t>(immediate) : 0;
  if (Status posted = pairs_[q]->post_write(request); !posted) return posted.error();
  return posted_[q]++;
}

std::string RdmaLinks::poll(bool& moved) {
  ib::Completion done[32];
  for (std::size_t n; (n = sends_->poll(done)) > 0;) {
    moved = true;
    for (std::size_t i = 0; i < n; ++i) sent(done[i]);
  }
  for (std::size_t n; (n = receives_->poll(done)) > 0;) {
    moved = true;
    for (std::size_t i = 0; i < n; ++i) received(done[i]);
  }
  return failure_;
}

// A write's completion: counted, and a failure kept.
void RdmaLinks::sent(const ib::Completion& done) {
  const auto pair = static_cast<std::size_t>(done.work_id >> kPairShift);
  if (pair < completed_.size()) ++completed_[pair];
  if (done.status != ib::CompletionStatus::Success && failure_.empty())
    failure_ = "the RDMA link to rank " + std::to_string(pair / static_cast<std::size_t>(lanes_)) + ": " +
               std::string(ib::name(done.status));
}

// A receive an immediate consumed: posted again, so that the peer's next write finds one.
void RdmaLinks::received(const ib::Completion& done) {
  const auto pair = static_cast<std::size_t>(done.work_id);
  if (done.status != ib::CompletionStatus::Success) {
    if (failure_.empty())
      failure_ = "the RDMA link from rank " + std::to_string(pair / static_cast<std::size_t>(lanes_)) + ": " +
                 std::string(ib::name(done.status));
    return;
  }
  if (pair >= pairs_.size() || pairs_[pair] == nullptr) return;
  if (Status again = pairs_[pair]->post_receive(pair); !again && failure_.empty()) failure_ = again.error().text();
}

std::string RdmaLinks::drain(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    bool moved = false;
    if (std::string failed = poll(moved); !failed.empty()) return failed;
    bool all = true;
    for (std::size_t q = 0; q < posted_.size(); ++q) all = all && posted_[q] == completed_[q];
    if (all) return {};
    if (std::chrono::steady_clock::now() >= end)
      return "RDMA writes still outstanding after " + std::to_string(seconds) + " s";
    std::this_thread::yield();
  }
}

}  // namespace collcheck::proc
