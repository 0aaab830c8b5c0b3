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
// the race check, each message's send's clock beside it (race_check.h); proven by XOR symmetry,
// the order its blocks were turned in.
struct Queue {
  std::vector<Contents> messages;
  std::vector<std::vector<std::uint32_t>> clocks;
  std::vector<std::uint64_t> orders;  // by XOR symmetry, how each message's blocks turn (Turning::order)
  std::size_t head = 0;

  bool empty() const { return head == messages.size(); }
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
      recent.queues[1] = &queues_[key];
    }
    std::swap(recent.keys[0], recent.keys[1]);
    std::swap(recent.queues[0], recent.queues[1]);
    return *recent.queues[0];
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
