// The proc engine's `ib` links (ProcLinks::Ib): each RDMA stream's place at both ends, pushing a
// piece by RDMA, and the receiver's credits going back (rdma_links.h has the links themselves).
//
// It works as follows. The FIFO of a stream between two processes stays in the receiver's
// segment, registered for remote writes. The sender's Outbound reads its credits from a shadow
// control block in its own registered memory (out.fifo.control points there), which the receiver
// keeps up to date by RDMA: its head after each piece it takes, its acknowledgements and rewind
// requests (reliable). A piece is copied with its header into one of the stream's staging slots
// (reused once that slot's last write has completed), written into the receiver's slot, and the
// stream's new tail written after it with RDMA_WRITE_WITH_IMM, which lands after the piece on the
// same queue pair; the receiver reads its FIFO as on shared memory. Credits that find the queue
// pair full are written from the progress loop. Every write is signalled; a failed one fails the
// run with the queue pair's status ("transport retries exceeded": a link down or a peer gone).
#include <algorithm>

#include "impls/proc/progress.h"

namespace collcheck {

using namespace proc;

namespace {

// Where a word lies in a FifoControl (its members are atomics: no offsetof).
std::size_t offset_in_control(std::atomic<std::uint64_t> FifoControl::*member) {
  static const FifoControl probe{};
  return static_cast<std::size_t>(reinterpret_cast<const std::byte*>(&(probe.*member)) -
                                  reinterpret_cast<const std::byte*>(&probe));
}

constexpr std::size_t kStagingSlotsAtMost = 4;

}  // namespace

Status ProcTransport::State::plan_rdma(const std::map<Key, std::uint64_t>& per_call,
                                       std::map<Key, std::size_t>& fifo_index, const std::vector<std::size_t>& fifos) {
  RdmaLinks& rdma = *peers.rdma;
  // Every stream's shadow at its sender: its ordinal among that sender's RDMA streams.
  std::map<int, std::size_t> shadows_of;
  std::map<Key, std::size_t> shadow_index;
  for (const auto& entry : per_call) {
    if (via_rdma(entry.first)) shadow_index[entry.first] = shadows_of[host(entry.first.from)]++;
  }
  std::size_t strides = 0;
  for (const auto& [sender, count] : shadows_of) {
    if (count > RdmaLinks::kShadows) {
      return Error{"ib", "rank " + std::to_string(sender) + " sends on " + std::to_string(count) +
                             " RDMA streams; the ib links hold " + std::to_string(RdmaLinks::kShadows)};
    }
  }
  for (const Outbound& out : outbound) {
    if (via_rdma(out.key)) strides += fifo_shape(fifos[static_cast<std::size_t>(host(out.key.to))]).stride();
  }
  const std::size_t slots = strides == 0 ? 0 : std::min(kStagingSlotsAtMost, RdmaLinks::kStagingBytes / strides);
  if (strides > 0 && slots == 0) {
    return Error{"ib", "this rank's RDMA streams need " + std::to_string(strides) +
                           " bytes of staging; the ib links hold " + std::to_string(RdmaLinks::kStagingBytes)};
  }
  std::byte* staging = rdma.staging();
  for (Outbound& out : outbound) {
    if (!via_rdma(out.key)) continue;
    const int to = host(out.key.to);
    const FifoShape shape = fifo_shape(fifos[static_cast<std::size_t>(to)]);
    const std::size_t at = fifo_index.at(out.key) * shape.bytes();
    out.fifo = Fifo{rdma.shadow(shadow_index.at(out.key)), nullptr, shape};
    out.rdma.active = true;
    const int lane = out.key.channel % rdma.lanes();
    out.rdma.slots = rdma.segment_of(to, lane, at + sizeof(FifoControl));
    out.rdma.tail = rdma.segment_of(to, lane, at + offset_in_control(&FifoControl::tail));
    out.rdma.immediate = fifo_index.at(out.key);
    out.rdma.staging = staging;
    out.rdma.staging_slots = slots;
    out.rdma.staged.assign(slots, 0);
    staging += slots * shape.stride();
  }
  for (Inbound& in : inbound) {
    if (!via_rdma(in.key)) continue;
    in.rdma.active = true;
    in.rdma.shadow = rdma.shadow_of(host(in.key.from), in.key.channel % rdma.lanes(), shadow_index.at(in.key), 0);
  }
  return Ok{};
}

// The shadows the receivers write this process's credits into, back to a FIFO's first words.
void ProcTransport::State::reset_shadows() {
  for (Outbound& out : outbound) {
    if (!out.rdma.active) continue;
    for (auto word :
         {&FifoControl::tail, &FifoControl::head, &FifoControl::acked, &FifoControl::rewind_to, &FifoControl::rewinds})
      (out.fifo.control->*word).store(0, std::memory_order_relaxed);
  }
}

// The message's next `n` bytes as one piece written into the receiver's FIFO by RDMA; false
// when there is no credit, no free staging slot or no room on the queue pair yet.
bool ProcTransport::State::push_rdma(Outbound& out, const Outgoing& message, std::size_t n) {
  RdmaLinks& rdma = *peers.rdma;
  const std::size_t staging_slot = out.tail % out.rdma.staging_slots;
  const std::uint64_t last = out.rdma.staged[staging_slot];
  if (!credit(out) || (last != 0 && rdma.completed(out.rdma.slots) < last) || !rdma.room(out.rdma.slots)) return false;
  const std::size_t stride = out.fifo.shape.stride();
  std::byte* slot = out.rdma.staging + staging_slot * stride;
  fill_slot(out, message, n, message.payload(message.pushed), slot);
  RemoteWords remote = out.rdma.slots;
  remote.address += (out.tail % out.fifo.shape.slots) * stride;
  const Result<std::uint64_t> piece = rdma.write(slot, kSlotHeader + n, remote);
  out.fifo.control->tail.store(++out.tail, std::memory_order_release);
  const Result<std::uint64_t> tail =
      rdma.write(reinterpret_cast<const std::byte*>(&out.fifo.control->tail), sizeof(std::uint64_t), out.rdma.tail,
                 static_cast<long>(out.rdma.immediate));
  if (!piece || !tail) {
    fail(participant_name(out.key.from) + " to " + participant_name(out.key.to) + ": " +
         (piece ? tail.error() : piece.error()).text());
    return false;
  }
  out.rdma.staged[staging_slot] = *piece + 1;
  return true;
}

// The receiver's head, and its acknowledgement and rewind words, into the sender's shadow; true
// when anything was written.
bool ProcTransport::State::write_credits(Inbound& in) {
  RdmaLinks& rdma = *peers.rdma;
  const auto word = [&](std::atomic<std::uint64_t> FifoControl::*member) {
    return reinterpret_cast<const std::byte*>(&(in.fifo.control->*member));
  };
  const auto at = [&](std::atomic<std::uint64_t> FifoControl::*member) {
    RemoteWords target = in.rdma.shadow;
    target.address += offset_in_control(member);
    return target;
  };
  bool wrote = false;
  if (in.rdma.head_dirty && rdma.room(in.rdma.shadow)) {
    const Result<std::uint64_t> written =
        rdma.write(word(&FifoControl::head), sizeof(std::uint64_t), at(&FifoControl::head));
    if (!written) fail(written.error().text());
    in.rdma.head_dirty = false;
    wrote = true;
  }
  if (in.rdma.words_dirty && rdma.room(in.rdma.shadow)) {  // acked, rewind_to and rewinds lie side by side
    const std::size_t bytes =
        offset_in_control(&FifoControl::rewinds) + sizeof(std::uint64_t) - offset_in_control(&FifoControl::acked);
    const Result<std::uint64_t> written = rdma.write(word(&FifoControl::acked), bytes, at(&FifoControl::acked));
    if (!written) fail(written.error().text());
    in.rdma.words_dirty = false;
    wrote = true;
  }
  return wrote;
}

}  // namespace collcheck
