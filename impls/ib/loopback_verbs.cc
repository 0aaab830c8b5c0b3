// The in-process loopback of the verbs interface (see loopback_verbs.h).
//
// It works as follows. One Fabric per make_loopback_verbs holds, under one lock, every queue
// pair by number and every registered region by key, each region tagged with its device's
// protection domain. Posting queues a request on its queue pair; nothing is carried out at post
// time. Progress (run on every post and every poll of any completion queue of the fabric) walks
// the queue pairs with queued writes and carries out each one's in order, stopping at the first that
// cannot go yet: it checks the local key and range, finds the connected peer, checks the remote
// key, range, protection domain and permission, and for a write with immediate the peer's first
// posted receive (none: receiver not ready, retried until the limit); then it copies the bytes
// (read now, so a sender that changed them after posting sends the changed bytes, as hardware
// may; an aligned 8-byte word with release order, see land()), completes the peer's receive with the immediate and
// length, and completes the write if signalled. A failure completes the request with its status and puts the queue pair
// in error (and the peer's too where the peer saw it: a remote access error), flushing everything outstanding on it;
// later posts to it complete as Flushed.
#include "impls/ib/loopback_verbs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>

namespace collcheck::ib {
namespace {

using Clock = std::chrono::steady_clock;

// A write's bytes at their target. An aligned 8-byte write (a counter such as a FIFO's tail or
// head, which the peer reads with an atomic load) is stored atomically with release order, so the
// bytes written before it on the queue pair happen before a reader that sees it; the rest is a
// plain copy, as a NIC's DMA is.
void land(std::byte* to, const std::byte* from, std::size_t bytes) {
  const auto aligned = [](const std::byte* at) {
    return reinterpret_cast<std::uintptr_t>(at) % alignof(std::uint64_t) == 0;
  };
  if (bytes == sizeof(std::uint64_t) && aligned(to) && aligned(from)) {
    // The source word too may be a counter its owner is updating (another thread carries writes out).
    auto* source = reinterpret_cast<std::uint64_t*>(const_cast<std::byte*>(from));
    const std::uint64_t word = std::atomic_ref<std::uint64_t>(*source).load(std::memory_order_acquire);
    std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(to)).store(word, std::memory_order_release);
    return;
  }
  if (bytes > 0) std::memcpy(to, from, bytes);
}

// An RDMA address travels as an integer (verbs.h); here, in one process, it is a pointer again.
std::byte* remote_pointer(std::uint64_t address) {
  return reinterpret_cast<std::byte*>(address);  // NOLINT(performance-no-int-to-ptr): the wire's address
}

struct Region {
  std::byte* address = nullptr;
  std::size_t bytes = 0;
  unsigned access = 0;
  std::uint64_t domain = 0;

  bool covers(const std::byte* start, std::size_t length) const {
    return start >= address && length <= bytes && static_cast<std::size_t>(start - address) <= bytes - length;
  }
};

struct QueueState {
  std::deque<Completion> done;
};

enum class PairState { Reset, Ready, Error };

struct PairRecord {
  std::uint32_t number = 0;
  std::uint64_t domain = 0;
  QueueState* sends = nullptr;
  QueueState* receives = nullptr;
  PairState state = PairState::Reset;
  std::uint32_t peer = 0;
  bool link_down = false;
  std::deque<WriteRequest> queued;
  std::deque<std::uint64_t> posted_receives;
  bool waiting_for_receive = false;
  Clock::time_point waiting_since{};
};

struct Fabric {
  explicit Fabric(LoopbackOptions given) : options(given) {}

  std::mutex mutex;
  LoopbackOptions options;
  std::uint32_t next_number = 0x10;
  std::uint32_t next_key = 0x1000;
  std::uint64_t next_domain = 1;
  std::map<std::uint32_t, PairRecord> pairs;
  std::map<std::uint32_t, Region> by_local_key, by_remote_key;
  std::set<std::uint32_t> busy;  // queue pairs with queued writes: the only ones progress visits

  // The queue pair enters the error state: everything outstanding on it completes as Flushed.
  void fail(PairRecord& pair) {
    pair.state = PairState::Error;
    for (const WriteRequest& request : pair.queued)
      pair.sends->done.push_back(
          {request.work_id, CompletionStatus::Flushed, CompletionKind::Write, 0, 0, pair.number});
    pair.queued.clear();
    for (std::uint64_t id : pair.posted_receives)
      pair.receives->done.push_back({id, CompletionStatus::Flushed, CompletionKind::Receive, 0, 0, pair.number});
    pair.posted_receives.clear();
  }

  // The front request ends with `status`, and the queue pair (and, where it saw the failure,
  // the peer's) in error.
  void fail_front(PairRecord& pair, CompletionStatus status, PairRecord* peer) {
    const WriteRequest request = pair.queued.front();
    pair.queued.pop_front();
    pair.sends->done.push_back({request.work_id, status, CompletionKind::Write, 0, 0, pair.number});
    fail(pair);
    if (peer != nullptr && peer->state != PairState::Error) fail(*peer);
  }

  // What stands in the way of the front request, or Success when it can be carried out now.
  // `peer` is set where the peer exists.
  CompletionStatus check_front(PairRecord& pair, PairRecord*& peer) {
    const WriteRequest& request = pair.queued.front();
    peer = nullptr;
    auto local = by_local_key.find(request.local_key);
    if (request.bytes > 0 && (local == by_local_key.end() || local->second.domain != pair.domain ||
                              !local->second.covers(request.local, request.bytes)))
      return CompletionStatus::LocalProtection;
    auto found = pairs.find(pair.peer);
    if (pair.link_down || found == pairs.end() || found->second.state != PairState::Ready ||
        found->second.peer != pair.number)
      return CompletionStatus::RetryExceeded;
    peer = &found->second;
    auto remote = by_remote_key.find(request.remote_key);
    std::byte* target = remote_pointer(request.remote_address);
    if (request.bytes > 0 &&
        (remote == by_remote_key.end() || remote->second.domain != peer->domain ||
         (remote->second.access & RemoteWrite) == 0 || !remote->second.covers(target, request.bytes)))
      return CompletionStatus::RemoteAccess;
    return CompletionStatus::Success;
  }

  // Carries out the queued writes of one queue pair, in order, as far as they can go.
  void progress(PairRecord& pair) {
    while (pair.state == PairState::Ready && !pair.queued.empty()) {
      PairRecord* peer = nullptr;
      const CompletionStatus status = check_front(pair, peer);
      if (status != CompletionStatus::Success) {
        fail_front(pair, status, status == CompletionStatus::RemoteAccess ? peer : nullptr);
        return;
      }
      const WriteRequest request = pair.queued.front();
      if (request.with_immediate && peer->posted_receives.empty()) {
        if (!pair.waiting_for_receive) {
          pair.waiting_for_receive = true;
          pair.waiting_since = Clock::now();
        }
        const double waited = std::chrono::duration<double>(Clock::now() - pair.waiting_since).count();
        if (options.receiver_not_ready_retries < 7 &&
            waited > options.receiver_not_ready_retries * options.receiver_not_ready_seconds)
          fail_front(pair, CompletionStatus::ReceiverNotReady, nullptr);
        return;
      }
      pair.waiting_for_receive = false;
      land(remote_pointer(request.remote_address), request.local, request.bytes);
      if (request.with_immediate) {
        const std::uint64_t receive = peer->posted_receives.front();
        peer->posted_receives.pop_front();
        peer->receives->done.push_back({receive, CompletionStatus::Success, CompletionKind::Receive, request.immediate,
                                        static_cast<std::uint32_t>(request.bytes), peer->number});
      }
      if (request.signaled)
        pair.sends->done.push_back(
            {request.work_id, CompletionStatus::Success, CompletionKind::Write, 0, 0, pair.number});
      pair.queued.pop_front();
    }
  }

  void progress_all() {
    for (auto it = busy.begin(); it != busy.end();) {
      auto found = pairs.find(*it);
      if (found != pairs.end()) progress(found->second);
      if (found == pairs.end() || found->second.queued.empty()) it = busy.erase(it);
      else ++it;
    }
  }
};

class LoopbackQueue final : public CompletionQueue {
 public:
  explicit LoopbackQueue(std::shared_ptr<Fabric> fabric) : fabric_(std::move(fabric)) {}

  std::size_t poll(std::span<Completion> out) override {
    const std::lock_guard<std::mutex> lock(fabric_->mutex);
    fabric_->progress_all();
    std::size_t n = 0;
    while (n < out.size() && !state_.done.empty()) {
      out[n++] = state_.done.front();
      state_.done.pop_front();
    }
    return n;
  }
  QueueState& state() { return state_; }

 private:
  std::shared_ptr<Fabric> fabric_;
  QueueState state_;
};

class LoopbackPair final : public QueuePair {
 public:
  LoopbackPair(std::shared_ptr<Fabric> fabric, std::uint32_t number) : fabric_(std::move(fabric)), number_(number) {}
  ~LoopbackPair() override {
    const std::lock_guard<std::mutex> lock(fabric_->mutex);
    fabric_->pairs.erase(number_);
  }

  QueuePairAddress address() const override {
    QueuePairAddress address;
    address.number = number_;
    address.lid = 1;
    return address;
  }

  Status connect(const QueuePairAddress& peer) override {
    const std::lock_guard<std::mutex> lock(fabric_->mutex);
    PairRecord& pair = fabric_->pairs.at(number_);
    if (pair.state != PairState::Reset)
      return Error{"ib", "queue pair " + std::to_string(number_) + " is connected already"};
    pair.peer = peer.number;
    pair.state = PairState::Ready;
    return Ok{};
  }

  Status post_write(const WriteRequest& request) override {
    const std::lock_guard<std::mutex> lock(fabric_->mutex);
    PairRecord& pair = fabric_->pairs.at(number_);
    if (pair.state == PairState::Reset)
      return Error{"ib", "a write posted to queue pair " + std::to_string(number_) + " before it was connected"};
    pair.queued.push_back(request);
    fabric_->busy.insert(number_);
    if (pair.state == PairState::Error) fabric_->fail(pair);
    fabric_->progress_all();
    return Ok{};
  }

  Status post_receive(std::uint64_t work_id) override {
    const std::lock_guard<std::mutex> lock(fabric_->mutex);
    PairRecord& pair = fabric_->pairs.at(number_);
    pair.posted_receives.push_back(work_id);
    if (pair.state == PairState::Error) fabric_->fail(pair);
    fabric_->progress_all();
    return Ok{};
  }

  bool in_error() const override {
    const std::lock_guard<std::mutex> lock(fabric_->mutex);
    return fabric_->pairs.at(number_).state == PairState::Error;
  }

 private:
  std::shared_ptr<Fabric> fabric_;
  std::uint32_t number_;
};

class LoopbackDevice final : public Device {
 public:
  LoopbackDevice(std::shared_ptr<Fabric> fabric, std::uint64_t domain) : fabric_(std::move(fabric)), domain_(domain) {}

  std::string name() const override { return "loopback (in-process)"; }

  Result<MemoryRegion> register_memory(std::byte* address, std::size_t bytes, unsigned access) override {
    if (address == nullptr && bytes > 0) return Error{"ib", "registering a null address"};
    const std::lock_guard<std::mutex> lock(fabric_->mutex);
    MemoryRegion region{address, bytes, fabric_->next_key, fabric_->next_key + 1, 0};
    fabric_->next_key += 2;
    const Region record{address, bytes, access, domain_};
    fabric_->by_local_key[region.local_key] = record;
    fabric_->by_remote_key[region.remote_key] = record;
    return region;
  }

  void deregister(const MemoryRegion& region) override {
    const std::lock_guard<std::mutex> lock(fabric_->mutex);
    fabric_->by_local_key.erase(region.local_key);
    fabric_->by_remote_key.erase(region.remote_key);
  }

  Result<std::unique_ptr<CompletionQueue>> create_completion_queue(int /*depth*/) override {
    return std::unique_ptr<CompletionQueue>(std::make_unique<LoopbackQueue>(fabric_));
  }

  Result<std::unique_ptr<QueuePair>> create_queue_pair(CompletionQueue& sends, CompletionQueue& receives,
                                                       int /*depth*/) override {
    auto* send_queue = dynamic_cast<LoopbackQueue*>(&sends);
    auto* receive_queue = dynamic_cast<LoopbackQueue*>(&receives);
    if (send_queue == nullptr || receive_queue == nullptr) return Error{"ib", "completion queues of another device"};
    const std::lock_guard<std::mutex> lock(fabric_->mutex);
    const std::uint32_t number = fabric_->next_number++;
    PairRecord& pair = fabric_->pairs[number];
    pair.number = number;
    pair.domain = domain_;
    pair.sends = &send_queue->state();
    pair.receives = &receive_queue->state();
    return std::unique_ptr<QueuePair>(std::make_unique<LoopbackPair>(fabric_, number));
  }

 private:
  std::shared_ptr<Fabric> fabric_;
  std::uint64_t domain_;
};

class LoopbackVerbs final : public Verbs {
 public:
  explicit LoopbackVerbs(LoopbackOptions options) : fabric_(std::make_shared<Fabric>(options)) {}
  std::string name() const override { return "loopback"; }
  Result<std::vector<std::string>> devices() override { return std::vector<std::string>{"loopback"}; }
  Result<std::unique_ptr<Device>> open(const std::string& device, int /*port*/, int /*gid_index*/) override {
    if (!device.empty() && device != "loopback") return Error{"dev", "the loopback has one device, loopback"};
    const std::lock_guard<std::mutex> lock(fabric_->mutex);
    return std::unique_ptr<Device>(std::make_unique<LoopbackDevice>(fabric_, fabric_->next_domain++));
  }

  bool break_link(std::uint32_t number) {
    const std::lock_guard<std::mutex> lock(fabric_->mutex);
    auto found = fabric_->pairs.find(number);
    if (found == fabric_->pairs.end()) return false;
    found->second.link_down = true;
    fabric_->busy.insert(number);
    auto peer = fabric_->pairs.find(found->second.peer);
    if (peer != fabric_->pairs.end()) {
      peer->second.link_down = true;
      fabric_->busy.insert(peer->first);
    }
    fabric_->progress_all();
    return true;
  }

  std::size_t queue_pairs() const {
    const std::lock_guard<std::mutex> lock(fabric_->mutex);
    return fabric_->pairs.size();
  }

 private:
  std::shared_ptr<Fabric> fabric_;
};

}  // namespace

std::string_view name(CompletionStatus status) {
  switch (status) {
    case CompletionStatus::Success: return "success";
    case CompletionStatus::LocalProtection: return "local protection error";
    case CompletionStatus::RemoteAccess: return "remote access error";
    case CompletionStatus::ReceiverNotReady: return "receiver-not-ready retries exceeded";
    case CompletionStatus::RetryExceeded: return "transport retries exceeded";
    case CompletionStatus::Flushed: return "flushed";
    case CompletionStatus::Other: return "other error";
  }
  return "?";
}

std::unique_ptr<Verbs> make_loopback_verbs(LoopbackOptions options) { return std::make_unique<LoopbackVerbs>(options); }

Verbs& process_loopback() {
  static LoopbackVerbs loopback{LoopbackOptions{}};
  return loopback;
}

bool break_loopback_link(Verbs& loopback, std::uint32_t number) {
  auto* verbs = dynamic_cast<LoopbackVerbs*>(&loopback);
  return verbs != nullptr && verbs->break_link(number);
}

std::size_t loopback_queue_pairs(Verbs& loopback) {
  const auto* verbs = dynamic_cast<const LoopbackVerbs*>(&loopback);
  return verbs != nullptr ? verbs->queue_pairs() : 0;
}

}  // namespace collcheck::ib
