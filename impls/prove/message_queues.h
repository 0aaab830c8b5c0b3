// The prover's messages in flight: per link (from, to, channel) a FIFO of the contents sent and
// not yet received, sends being buffered. Private to impls/prove/.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "impls/prove/element_buffers.h"

namespace collcheck::provenance {

// Messages from one participant to another on one channel, in order, received from `head`; with
// the race check, each message's send's clock beside it (race_check.h); where the two ends must agree
// on something the contents do not show, what the send said of it (`keys`).
struct Queue {
  std::vector<Contents> messages;
  std::vector<std::vector<std::uint32_t>> clocks;
  // By XOR symmetry, how each message's blocks turn (Turning::order); proven in pieces, where on the
  // collective's line it was sent from (PieceLine::place).
  std::vector<std::uint64_t> keys;
  std::size_t head = 0;
  std::uint64_t key = 0;  // its link and channel, as MessageQueues keeps it

  bool empty() const { return head == messages.size(); }
  // Forgets the messages taken once they are half the queue (a ring's sender stays a message ahead,
  // so its queue never empties: kept, the taken ones were n^2 records at n ranks, 8 GB at 16,384).
  void drop_taken() {
    if (empty()) {
      messages.clear();
      clocks.clear();
      keys.clear();
      head = 0;
    } else if (head >= kDropAfter && 2 * head >= messages.size()) {
      const auto taken = static_cast<std::ptrdiff_t>(head);
      messages.erase(messages.begin(), messages.begin() + taken);
      if (!clocks.empty()) clocks.erase(clocks.begin(), clocks.begin() + taken);
      if (!keys.empty()) keys.erase(keys.begin(), keys.begin() + taken);
      head = 0;
    }
  }

 private:
  static constexpr std::size_t kDropAfter = 64;
};

// One participant's end of a link, for the report of a message never received.
struct LinkEnds {
  int from, to, channel;
};

class MessageQueues {
 public:
  // For `participants` participants, of which the first `callers` ask for queues.
  MessageQueues(int participants, int callers)
      : participants_(static_cast<std::uint64_t>(participants)), recent_(static_cast<std::size_t>(callers)) {}

  // The queue from one participant to another on one channel, as participant `caller` (one end)
  // asks for it. The last two a participant asked for are kept by it (a ring's rank uses two):
  // the hash map's nodes stay where they are, and a lookup costs a cache miss or two.
  Queue& queue(int caller, int from, int to, int channel) {
    const std::uint64_t link = static_cast<std::uint64_t>(from) * participants_ + static_cast<std::uint64_t>(to);
    const std::uint64_t key = link * kChannels + static_cast<std::uint64_t>(channel);
    Recent& recent = recent_[static_cast<std::size_t>(caller)];
    if (recent.keys[0] == key) return *recent.queues[0];
    if (recent.keys[1] != key) {
      recent.keys[1] = key;
      Queue& queue = queues_[key];
      queue.key = key;
      recent.queues[1] = &queue;
    }
    std::swap(recent.keys[0], recent.keys[1]);
    std::swap(recent.queues[0], recent.queues[1]);
    return *recent.queues[0];
  }

  // Forgets an emptied queue where there are more queues than a few per participant (pairwise
  // exchange has one per pair of ranks: n^2 of them, 2 GB at 4096 ranks, kept), and where the
  // participants at its ends, which may keep it as a recent one, let go of it.
  void forget_if_empty(const Queue& queue) {
    if (!queue.empty() || queues_.size() <= kQueuesKeptPerParticipant * participants_) return;
    const std::uint64_t key = queue.key;
    const std::uint64_t link = key / kChannels;
    for (const std::uint64_t end : {link / participants_, link % participants_}) {
      if (end >= recent_.size()) continue;
      Recent& recent = recent_[static_cast<std::size_t>(end)];
      for (std::size_t k = 0; k < recent.keys.size(); ++k) {
        if (recent.keys[k] == key) recent.keys[k] = kNoQueue;
      }
    }
    queues_.erase(key);
  }

  // A link with a message still waiting, if any.
  std::optional<LinkEnds> waiting() const {
    for (const auto& [key, queue] : queues_) {
      if (queue.empty()) continue;
      const std::uint64_t link = key / kChannels;
      return LinkEnds{static_cast<int>(link / participants_), static_cast<int>(link % participants_),
                      static_cast<int>(key % kChannels)};
    }
    return std::nullopt;
  }

 private:
  static constexpr std::uint64_t kChannels = 65536;  // more than a schedule has (at most 64)
  static constexpr std::uint64_t kNoQueue = ~std::uint64_t{0};
  static constexpr std::uint64_t kQueuesKeptPerParticipant = 4;

  // Keys (from, to, channel) in 64 bits, mixed (splitmix64's finalizer) to spread a ring's.
  struct KeyHash {
    std::size_t operator()(std::uint64_t key) const {
      key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ULL;
      key = (key ^ (key >> 27)) * 0x94d049bb133111ebULL;
      return static_cast<std::size_t>(key ^ (key >> 31));
    }
  };
  struct Recent {
    std::array<std::uint64_t, 2> keys{kNoQueue, kNoQueue};
    std::array<Queue*, 2> queues{};
  };

  std::uint64_t participants_;
  std::unordered_map<std::uint64_t, Queue, KeyHash> queues_;
  std::vector<Recent> recent_;  // per caller
};

}  // namespace collcheck::provenance
