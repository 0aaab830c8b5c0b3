// The one place every executor's sends and waits pass through: fault injection hooks in here,
// and here our executors' link protocol (checksums, sequence numbers, timeouts, retransmission)
// is configured, so that a fault ends in `ok` or `detected`, never in a wrong answer or a hang.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "reference/collective.h"
#include "reference/dtype.h"

namespace collcheck {

// Room a sender keeps with each of its links for its hook's own use (Message::link_memo): zeroed
// when the link is made, and handed with that link's messages only, to one hook. The fault
// injector keeps there the link's part of its first fault's draws: in the record a simulator reads
// for the send anyway, where a table of the injector's own cost a cache line more per message at
// 16,384 ranks.
struct LinkMemo {
  std::uint64_t word = 0;  // 0: nothing kept yet
};

struct Message {
  int from = 0;
  int to = 0;
  int channel = 0;
  std::uint64_t sequence = 0;  // per (from, to, channel), from 0
  std::size_t bytes = 0;
  double time = 0;             // when it was sent (seconds; virtual on `sim`)
  int attempt = 0;             // 0: first transmission; k: k-th retransmission (reliable mode)
  std::uint64_t per_call = 0;  // messages on this stream per call (sequence % per_call: which);
                               // 0: not known (a socket's send calls)
  // The sender's memo for this link (LinkMemo); none where it keeps none (a socket's sends).
  LinkMemo* link_memo = nullptr;
};

// What happens to one transmission of a message on the wire. The executor computed the
// message's checksum before the hook saw the payload, so a changed payload is a corruption the
// receiver can detect.
struct SendDecision {
  bool drop = false;     // this transmission never arrives
  double delay = 0;      // seconds added to its arrival
  int duplicates = 0;    // extra copies of it arrive after it
  bool reorder = false;  // it arrives after the stream's next message (the last one is not held)
};

class LinkHook {
 public:
  virtual ~LinkHook() = default;
  // Called for every transmission before it enters the fabric; may change the payload.
  virtual SendDecision on_send(const Message&, std::span<std::byte> /*payload*/) { return {}; }
  // The deadline, in seconds from the start of the run, past which a participant still waiting
  // is a hang: the harness's limit, not the executor's own timeout (LinkProtocol::timeout).
  virtual double deadline() const { return 60; }
};

// How our executors (`sim`, `proc`) protect their messages. Every message carries a sequence
// number per (from, to, channel) and every piece of it a checksum of the bytes the sender meant
// to send; the receiver checks both before it uses a byte. Without `reliable`, a checksum that
// does not match, a sequence gap, or a wait longer than `timeout` fails the run, and the rank
// that saw it tells every other rank to stop: the run ends `detected` on every rank, bounded by
// `timeout` plus one message's travel. With `reliable`, the receiver asks the sender to go back
// to the missing or damaged message (go-back-N), up to `retries` times per message, so transient
// faults end in `ok`; only what outlasts the retries (a dead rank, a link down for good) is
// `detected`.
struct LinkProtocol {
  bool checksums = true;   // false: bytes are used unchecked (mutant:no-checksum)
  bool check_last = true;  // false: the last message of a stream's call is used unchecked
                           // (mutant:last-unchecked)
  bool reliable = false;   // retransmit lost and damaged messages
  double timeout = 0;      // seconds a wait may see nothing new; 0: the executor's default;
                           // negative: wait for ever (mutant:no-timeout); clamped below the
                           // deadline and extended by the message's travel (protocol.h)
  double retransmit = 0;   // reliable: seconds of silence before a missing message is asked
                           // for again; 0: the executor's default (timeout / (retries + 3))
  // Reliable: retransmissions of one message before giving up. Each attempt through a link that
  // flaps with even halves gets through with odds 1/2 (the timers are jittered far beyond a flap's
  // period), so 20 give up on such a transient fault once in 2^21 messages; 7 gave up once in 256,
  // which real-clock runs of the cuda engine showed.
  int retries = 20;
};

// The checksum of a piece of a message: CRC-32C of each quarter of its 8-byte words (checksum_body.h),
// folded with its length into 64 bits. Every error of up to three flipped bits within a stream
// is caught (CRC-32C's Hamming distance at these lengths), and any other with odds 1 - 2^-32.
std::uint64_t checksum(std::span<const std::byte> bytes);
// Copies `from` to `to` (which must not overlap it) and returns checksum(from), in one pass.
// `around_cache`: the copy goes to memory with non-temporal stores where `to` is 64-byte aligned
// (and x86 has them), ordered before the function returns (a store that publishes the bytes may
// follow): for a FIFO slot that another core reads next.
std::uint64_t copy_with_checksum(std::byte* to, std::span<const std::byte> from, bool around_cache = false);
// out[i] = a[i] ⊕ b[i] for `count` elements as reduce_elements_fast computes them (`out` may be `a`
// or `b`), the results also copied to `copy` (which overlaps none of them; around the cache as
// copy_with_checksum's), returning the checksum of the results: a received piece reduced into place
// and stored into the next FIFO slot. In one pass over the bytes for float32 and float64 sums,
// averages and products where the CPU folds (checksum.cc), reduce and copy_with_checksum otherwise.
std::uint64_t reduce_with_checksum(DType, RedOp, const std::byte* a, const std::byte* b, std::byte* out,
                                   std::byte* copy, std::size_t count, bool around_cache = false);

// The ways a CPU may take the checksum, each giving the same value (tests compare them; the two
// functions above take the fastest this CPU has): checksum_body.h's loop (what a device runs), the
// crc32 instruction (x86 with SSE 4.2), folding by carry-less multiplication (x86 with AVX-512 and
// VPCLMULQDQ).
enum class ChecksumWay : std::uint8_t { Portable, Crc32, Folding };
bool has_checksum_way(ChecksumWay);
// copy_with_checksum (or, with `to` null, checksum) taken the way asked, which this CPU must have.
std::uint64_t copy_with_checksum_by(ChecksumWay, std::byte* to, std::span<const std::byte> from, bool around_cache);

}  // namespace collcheck
