// The courier of the rings over RDMA (ib_rings.h says how they work): the thread that ships each
// sender's pieces and each receiver's control words, sets the flags of pieces that landed, and
// passes on the stop and the last words.
#include <array>
#include <thread>

#include "impls/cuda/ib_rings.h"

namespace collcheck::cuda {
namespace {

// A work request's id: the peer's rank below; above, for a control word's write, its remote's
// place in remotes_ plus one.
std::uint64_t work_id(int peer, int control_of = -1) {
  return (static_cast<std::uint64_t>(control_of + 1) << 32) | static_cast<std::uint32_t>(peer);
}

// The header's part a sender writes: everything after the flag.
std::size_t label_offset() {
  const SlotHeader header;
  return static_cast<std::size_t>(reinterpret_cast<const std::byte*>(&header.label) -
                                  reinterpret_cast<const std::byte*>(&header));
}

}  // namespace

// Posts one write to `peer` (signalled, so that its completion frees its room): false where the
// queue pair has no room for it now.
bool IbRings::post(int peer, const std::byte* local, std::size_t bytes, std::uint32_t local_key, std::uint64_t remote,
                   std::uint32_t remote_key, long immediate, std::uint64_t id) {
  int& outstanding = outstanding_[static_cast<std::size_t>(peer)];
  if (outstanding >= kQueueDepth - 1) return false;
  const ib::WriteRequest request{.work_id = id,
                                 .local = local,
                                 .bytes = bytes,
                                 .local_key = local_key,
                                 .remote_address = remote,
                                 .remote_key = remote_key,
                                 .with_immediate = immediate >= 0,
                                 .immediate = immediate >= 0 ? static_cast<std::uint32_t>(immediate) : 0,
                                 .signaled = true};
  if (Status posted = pairs_[static_cast<std::size_t>(peer)]->post_write(request); !posted) {
    fail("posting an RDMA write to rank " + std::to_string(peer) + ": " + posted.error().text());
    return false;
  }
  ++outstanding;
  outstanding_total_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Every piece whose flag the sender set in its image, in piece order: its bytes, then its label
// with the immediate that names the ring.
bool IbRings::ship_pieces(Remote& remote) {
  SlotRing& ring = *remote.ring;
  bool moved = false;
  const std::size_t label_at = label_offset();
  const std::size_t label_bytes = sizeof(SlotHeader) - label_at;
  while (outstanding_[static_cast<std::size_t>(remote.peer)] < kQueueDepth - 2) {
    SlotHeader& header = ring.header(remote.next);
    if (header.ready.load(std::memory_order_acquire) != remote.next + 1) break;
    const std::uint64_t place = remote.next % ring.shape.slots;
    const std::size_t length = std::min(header.label.bytes, ring.shape.slot_bytes);
    if (length > 0 &&
        !post(remote.peer, ring.slot(remote.next), length, remote.slots_key,
              remote.remote_slots + place * ring.shape.slot_bytes, remote.remote_slots_key, -1, work_id(remote.peer))) {
      break;
    }
    const auto* label = reinterpret_cast<const std::byte*>(&header) + label_at;
    if (!post(remote.peer, label, label_bytes, regions_.front().local_key,
              remote.remote_words + place * sizeof(SlotHeader) + label_at,
              peer_words_key_[static_cast<std::size_t>(remote.peer)], remote.index, work_id(remote.peer))) {
      break;
    }
    ++remote.next;
    moved = true;
  }
  return moved;
}

// The receiver's control words that changed since they were last written, each straight from the
// word into the sender's image of it, once the last such writes have completed.
bool IbRings::ship_control(Remote& remote) {
  if (remote.in_flight > 0) return false;
  RingControl& control = *remote.ring->control;
  // The order the sender reads them in: rewinds after rewind_to, so rewinds is read first here.
  const std::uint64_t rewinds = control.rewinds.load(std::memory_order_acquire);
  const std::array<std::uint64_t, 4> now{control.taken.load(std::memory_order_acquire),
                                         control.acked.load(std::memory_order_acquire),
                                         control.rewind_to.load(std::memory_order_relaxed), rewinds};
  const std::array<const std::atomic<std::uint64_t>*, 4> words{&control.taken, &control.acked, &control.rewind_to,
                                                               &control.rewinds};
  const auto base = reinterpret_cast<std::uintptr_t>(&control);
  bool moved = false;
  for (std::size_t w = 0; w < words.size(); ++w) {
    if (now[w] == remote.written[w]) continue;
    const std::uint64_t offset = reinterpret_cast<std::uintptr_t>(words[w]) - base;
    if (!post(remote.peer, reinterpret_cast<const std::byte*>(words[w]), sizeof(std::uint64_t),
              regions_.front().local_key, remote.remote_words + offset,
              peer_words_key_[static_cast<std::size_t>(remote.peer)], -1,
              work_id(remote.peer, static_cast<int>(&remote - remotes_.data())))) {
      break;
    }
    remote.written[w] = now[w];
    ++remote.in_flight;
    moved = true;
  }
  return moved;
}

// Writes 1 into the run word at `word_offset` of every neighbour: false until all went.
bool IbRings::tell_neighbours(std::size_t word_offset) {
  for (const int q : neighbours_) {
    if (!post(q, words_ + kOneWord, sizeof(std::uint64_t), regions_.front().local_key,
              peer_words_[static_cast<std::size_t>(q)] + word_offset, peer_words_key_[static_cast<std::size_t>(q)], -1,
              work_id(q))) {
      return false;
    }
  }
  return true;
}

bool IbRings::nothing_to_ship() const {
  for (const Remote& remote : remotes_) {
    if (remote.sending && remote.ring->header(remote.next).ready.load(std::memory_order_acquire) == remote.next + 1)
      return false;
    if (!remote.sending && remote.in_flight > 0) return false;
  }
  return true;
}

// Drains both completion queues: a piece landed sets its flag (and its receive is posted again);
// a failed completion stops the run. Whether any came.
bool IbRings::poll_completions() {
  std::array<ib::Completion, 32> done;
  bool moved = false;
  for (std::size_t count = sends_->poll(done); count > 0; count = sends_->poll(done)) {
    moved = true;
    for (std::size_t c = 0; c < count; ++c) written(done[c]);
  }
  for (std::size_t count = receives_->poll(done); count > 0; count = receives_->poll(done)) {
    moved = true;
    for (std::size_t c = 0; c < count; ++c) landed(done[c]);
  }
  return moved;
}

// A write of this process's completed: its room freed, a control word's write no longer in flight.
void IbRings::written(const ib::Completion& done) {
  const auto peer = static_cast<std::size_t>(done.work_id & 0xFFFFFFFFU);
  --outstanding_[peer];
  outstanding_total_.fetch_sub(1, std::memory_order_relaxed);
  if (const std::uint64_t control_of = done.work_id >> 32; control_of > 0)
    --remotes_[static_cast<std::size_t>(control_of - 1)].in_flight;
  if (done.status != ib::CompletionStatus::Success)
    fail("the RDMA link to rank " + std::to_string(peer) + ": " + std::string(ib::name(done.status)));
}

// A piece of the ring the immediate names landed here: made visible to the device where it is
// device memory, then its flag set; its receive posted again.
void IbRings::landed(const ib::Completion& done) {
  const auto peer = static_cast<std::size_t>(done.work_id & 0xFFFFFFFFU);
  if (done.status != ib::CompletionStatus::Success) {
    fail("the RDMA link from rank " + std::to_string(peer) + ": " + std::string(ib::name(done.status)));
    return;
  }
  const int index = done.immediate < remote_of_.size() ? remote_of_[done.immediate] : -1;
  if (index < 0 || remotes_[static_cast<std::size_t>(index)].sending) {
    fail("rank " + std::to_string(peer) + " wrote a piece for ring " + std::to_string(done.immediate) +
         ", which this rank does not receive on");
    return;
  }
  Remote& remote = remotes_[static_cast<std::size_t>(index)];
  if (remote.flush != nullptr) remote.flush->flush_remote_writes();
  remote.ring->header(remote.next).ready.store(remote.next + 1, std::memory_order_release);
  ++remote.next;
  if (Status posted = pairs_[peer]->post_receive(peer); !posted) fail(posted.error().text());
}

void IbRings::courier() {
  while (!quit_.load(std::memory_order_acquire)) {
    bool moved = poll_completions();
    if (!failed_.load(std::memory_order_acquire)) {
      for (Remote& remote : remotes_) moved = (remote.sending ? ship_pieces(remote) : ship_control(remote)) || moved;
      if (stop_asked_.load(std::memory_order_acquire) && !stop_told_) stop_told_ = moved = tell_neighbours(kStopWord);
      if (finishing_.load(std::memory_order_acquire) && !last_word_said_.load(std::memory_order_relaxed) &&
          nothing_to_ship() && tell_neighbours(kDoneWords + 8 * static_cast<std::size_t>(rank()))) {
        last_word_said_.store(true, std::memory_order_release);
        moved = true;
      }
    }
    if (!moved) std::this_thread::yield();
  }
}

void IbRings::fail(const std::string& why) {
  {
    const std::lock_guard<std::mutex> lock(failure_mutex_);
    if (failure_.empty()) failure_ = why;
  }
  failed_.store(true, std::memory_order_release);
}

}  // namespace collcheck::cuda
