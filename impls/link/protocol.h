// The link protocol of our executors, written once: the settings with their defaults, the jittered
// retransmission timer, the receiver's side (what to do with a piece) and the sender's side
// (go-back-N with bounded retries, reorders held back). Time and delivery stay the executor's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "impls/link/hook.h"

namespace collcheck {

// The protocol works as follows. Every stream (from, to, channel) numbers its messages from 0;
// a message travels in pieces (one piece: the whole message on `sim`), each labelled with its
// sequence number, its offset, its transmission and the checksum of the bytes the sender meant
// to send. The receiver knows the position due next (byte b of message m) and judges every
// piece against it: one before it is a duplicate, dropped; one at it, intact, is taken; anything
// else is a gap (a message lost or overtaken) or damage. Unreliable, a gap, damage or a silence
// longer than the timeout ends the run. Reliable, the receiver asks the sender to go back to the
// due position, at most once per retransmission interval for the same position, and again when
// nothing useful came for its patience (the interval, jittered by a quarter so that asks cannot
// keep landing in the down half of a flapping link); the sender sends that message and every
// later one again, each as one more attempt, and gives up when the message asked for has been
// asked for more than `retries` times. A reorder holds a message back behind the stream's next
// one, at most for the reorder window; the last message of a call has no next one and is never
// held. What a position, a time and a transmission are is the executor's: virtual seconds and
// events on `sim`, real seconds and shared-memory or TCP pieces on `proc`.

// The clock an executor runs the protocol on: its default timeout (the smaller of
// `default_timeout` and `deadline_share` of the run's deadline; a timeout the user gives is
// clamped to that share of the deadline too, so that a lost message is `detected` before the
// run is a `hang`) and its reorder window.
struct LinkClock {
  double default_timeout;
  double deadline_share;
  double reorder_window;
};
// `sim`: virtual seconds, exact; a reordered message waits 1 ms at most.
inline constexpr LinkClock kVirtualClock{0.5, 0.5, 0.001};
// `proc`: real seconds; 50 ms of reorder window, so that a loaded or sanitized process still posts
// the next message within it.
inline constexpr LinkClock kRealClock{2.0, 1.0, 0.05};

// Retransmission timers take (retries + kRetransmitSpare) intervals to fill the timeout, and
// are jittered by kRetransmitJitter of the interval either way.
inline constexpr int kRetransmitSpare = 3;
inline constexpr double kRetransmitJitter = 0.25;

// LinkProtocol with the executor's defaults resolved.
struct LinkSettings {
  bool checksums = true;
  bool check_last = true;  // false: a stream's last message of each call is not checked
  bool reliable = false;
  bool forever = false;   // never give up waiting (a negative timeout: mutant:no-timeout)
  double timeout = 0;     // seconds a wait may see nothing new
  double retransmit = 0;  // reliable: seconds of silence before asking again (before jitter)
  double reorder_window = 0;
  int retries = LinkProtocol{}.retries;

  // A wait for a message that needs `travel` seconds on its link (its route's latency plus its
  // bytes over the narrowest bandwidth) may see nothing new for the timeout plus that travel (when
  // reliable, the receiver's patience before asking again is likewise the retransmission interval
  // plus it): a large message on a slow link is never given up on while it is still on the wire.
  double timeout_for(double travel) const { return timeout + travel; }
  // Whether message `sequence` of a stream with `per_call` messages per call has its checksums
  // checked.
  bool checks(std::uint64_t sequence, std::uint64_t per_call) const {
    return checksums && (check_last || per_call == 0 || sequence % per_call + 1 < per_call);
  }
};
LinkSettings resolve(const LinkProtocol& protocol, const LinkClock& clock, double deadline);

// Draws the jittered retransmission intervals of one participant or process, from `seed`.
class RetransmitJitter {
 public:
  explicit RetransmitJitter(std::uint64_t seed = 0) : seed_(seed) {}
  // Within [1 - kRetransmitJitter, 1 + kRetransmitJitter] of `interval`.
  double draw(double interval) { return drawn(++draws_, interval); }
  // The same draw taken apart: the number of the next one now, its interval later (an executor
  // that arms a timer now and may never need its interval).
  std::uint64_t take_number() { return ++draws_; }
  double drawn(std::uint64_t number, double interval) const;
  // The least any draw can give for `interval`.
  static double least(double interval) { return interval * (1 - kRetransmitJitter); }

 private:
  std::uint64_t seed_;
  std::uint64_t draws_ = 0;
};

// One piece as it arrives: where it lies, which transmission it is, and its checksum.
struct PieceLabel {
  std::uint64_t sequence = 0;
  std::size_t offset = 0;
  std::size_t bytes = 0;
  std::uint64_t sum = 0;
  std::uint32_t attempt = 0;
};

// What the receiver does with a piece (named apart from the oracle's Verdict on an output).
enum class PieceVerdict {
  Take,        // at the due position, intact
  Duplicate,   // before the due position: already taken
  OutOfOrder,  // past the due position: something before it is missing
  Overlong,    // runs past the end of its message
  Damaged,     // its bytes do not match its checksum
};

// The receiver's end of one stream.
class LinkReceiver {
 public:
  std::uint64_t due_message() const { return due_message_; }
  std::size_t due_byte() const { return due_byte_; }

  // What to do with `piece` (its bytes: `data`) of a message of `message_bytes` bytes.
  PieceVerdict judge(const PieceLabel& piece, std::span<const std::byte> data, std::size_t message_bytes,
                     const LinkSettings& settings) const;
  // Takes a piece judged Take at time `now`; true when its message is complete (the next is due).
  bool take(std::size_t bytes, std::size_t message_bytes, double now);

  // The stream is not silent at `now`: something arrived (`sim`: anything; `proc`: a receive
  // starts waiting on it). Taking a piece and asking count too.
  void heard(double now) { quiet_since_ = now; }
  double quiet_since() const { return quiet_since_; }

  // Reliable: whether to ask the sender to go back to the due position now (not while a request
  // for it is outstanding: asked, and quiet since for no longer than the retransmission interval);
  // if so, it is recorded and, given `patience`, the next wait drawn from it (null where the
  // executor times its waits itself).
  bool ask(double now, const LinkSettings& settings, RetransmitJitter* patience);
  // Records a request to go back to the due position at `now`, outstanding or not (a timer's).
  void ask_anyway(double now, const LinkSettings& settings, RetransmitJitter* patience);
  // Reliable: whether the stream has been quiet for longer than the receiver's patience.
  bool impatient(double now, const LinkSettings& settings) const;

 private:
  std::uint64_t due_message_ = 0;
  std::size_t due_byte_ = 0;
  double quiet_since_ = 0;  // when the stream last brought something, or the receiver asked
  double patience_ = 0;     // 0: the retransmission interval
  bool asked_ = false;
  std::uint64_t asked_message_ = 0;
  std::size_t asked_byte_ = 0;
};

// The sender's end of one stream: each kept message's transmissions and the times it was asked for.
class LinkSender {
 public:
  // Message `sequence` is the last of its call when `per_call` messages make a call: never held.
  static bool may_hold(std::uint64_t sequence, std::uint64_t per_call) { return sequence % per_call + 1 < per_call; }

  std::uint32_t attempt(std::uint64_t sequence) const;  // 0 for a message never sent again
  // Counts one more transmission of `sequence`; returns its attempt number.
  std::uint32_t retransmit(std::uint64_t sequence) { return ++record(sequence).attempt; }
  // The receiver asked to go back to `sequence` once more: false when it has been asked for more
  // than `retries` times, and the stream gives up.
  bool asked_again(std::uint64_t sequence, const LinkSettings& settings) {
    return static_cast<int>(++record(sequence).asked) <= settings.retries;
  }
  // The receiver has taken every message before `sequence`: their records are forgotten (none
  // kept, the common case, costs a comparison).
  void acknowledged(std::uint64_t sequence) {
    if (records_.empty()) {
      if (first_ < sequence) first_ = sequence;
      return;
    }
    forget_records(sequence);
  }

 private:
  struct Record {
    std::uint32_t attempt = 0;  // transmissions so far, less one
    std::uint32_t asked = 0;    // times the receiver asked to go back to it
  };
  Record& record(std::uint64_t sequence);
  void forget_records(std::uint64_t sequence);
  std::size_t kept() const { return records_.size() - head_; }

  // The records kept, from records_[head_] (message first_) on: a vector read from an offset, its
  // forgotten front dropped once it is half, so that a stream that keeps none allocates nothing
  // (a simulation at 16,384 ranks has 32,768 of them) and moves without throwing.
  std::uint64_t first_ = 0;
  std::size_t head_ = 0;
  std::vector<Record> records_;
};

// The words a link's fault ends a run with, the same on every executor: the stream as its
// receiver sees it ("rank 1: from rank 0 on channel 2 (call 3)", participants named as the
// schedule names them), then what went wrong with it.
std::string link_stream_text(const std::string& to, const std::string& from, int channel, std::uint64_t call);
// A piece the receiver neither took nor dropped (`verdict`), against the position due in a
// message of `message_bytes`.
std::string link_fault_text(PieceVerdict verdict, const PieceLabel& piece, const LinkReceiver& receiver,
                            std::size_t message_bytes);
// Reliable: the sender gave up on message `sequence`.
std::string link_gave_up_text(std::uint64_t sequence, const LinkSettings& settings);

}  // namespace collcheck
