// Fault plans as data: which faults (drop, delay, corrupt, link down, straggler, kill, ...) hit
// which link or rank, from when, and how hard; with a text form that parses back exactly.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reference/result.h"

namespace collcheck {

// The plan language (`--faults`):
//
//   plan   := "none" | "" | fault (";" fault)*
//   fault  := kind (":" key "=" value)*
//   kind   := drop | delay | corrupt | duplicate | reorder | link-down | link-flap
//           | straggler | stop | kill
//   target keys (at most one; none means every message):
//     link=A->B   messages rank A sends to rank B (one direction)
//     rank=R      messages rank R sends
//   trigger keys (all given ones must hold; defaults make the fault apply at once, always):
//     at=S        from S seconds after the start of the run (virtual seconds on `sim`), 0..86400
//     after=K     from the target's message K on (0-based, counted in send order)
//     offset=B    from the message that holds byte B of the target's traffic (in send order)
//     p=P         each message independently with probability P, 0 < P <= 1
//     times=N     to at most N messages (0: no limit)
//     message=M   only the first or the last message of its stream (sender, receiver, channel) in
//                 each call, first sent or sent again: first | last (default: any message)
//   parameters:
//     ms=M        delay: fixed milliseconds added; straggler: fixed milliseconds per message
//     jitter=J    delay: plus a uniform draw from [0, J) milliseconds per message
//                 (ms and jitter 0..86400000)
//     bits=N      corrupt: bits flipped per message, 1..64
//     where=W     corrupt: where in the message the bits flip: any (default) | first (its first
//                 byte) | last (its last byte) | tail (the bytes after its last whole 8-byte word;
//                 its last byte when there are none) | boundary (the two bytes either side of a
//                 power of two from 8, drawn per message: chunk and piece edges)
//     period=M    link-flap: milliseconds of one down-up cycle (down first, half each), 0 < M <= 86400000
//     factor=F    straggler: the rank's messages take F times their transfer time, 1..1000000
//   numbers: the grammar of reference/numbers.h (no sign, hex, nan or inf).
//
// Which keys a kind takes: drop, delay, corrupt, duplicate and reorder take any target and
// every trigger key; link-down (for good) and link-flap need `link` and take only `at`;
// straggler, stop and kill need `rank` and take only `at` (they are events in time).
// Keys left at their defaults are not printed, so to_string(parse(text)) is canonical and
// parse(to_string(plan)) == plan for every plan that parses or validates.
//
// Example: drop:link=2->3:p=0.01;delay:rank=5:ms=50;corrupt:link=0->1:after=3:bits=1;
//          link-down:link=1->2:at=0.002;straggler:rank=3:factor=4;kill:rank=2:at=0.001

enum class FaultKind { Drop, Delay, Corrupt, Duplicate, Reorder, LinkDown, LinkFlap, Straggler, Stop, Kill };
inline constexpr std::size_t fault_kind_count = 10;

const std::array<FaultKind, fault_kind_count>& all_fault_kinds();
std::string_view to_string(FaultKind);                 // `link-down`
Result<FaultKind> parse_fault_kind(std::string_view);  // errors list the kinds

struct Target {
  enum class Scope { All, Link, Rank };
  Scope scope = Scope::All;
  int from = 0;  // Link: the sending rank
  int to = 0;    // Link: the receiving rank
  int rank = 0;  // Rank: the sending rank

  // Only the fields the scope uses count.
  bool operator==(const Target& other) const {
    if (scope != other.scope) return false;
    if (scope == Scope::Link) return from == other.from && to == other.to;
    return scope == Scope::All || rank == other.rank;
  }
};

// Which messages of a stream's call a trigger takes (`message=`).
enum class StreamPosition { Any, First, Last };

// Where in a message a corruption flips its bits (`where=`).
enum class BytePlace { Any, First, Last, Tail, Boundary };

struct Trigger {
  double at = 0;             // seconds from the start of the run
  std::uint64_t after = 0;   // the target's message number
  std::uint64_t offset = 0;  // byte offset into the target's traffic
  double p = 1;              // probability per message
  std::uint64_t times = 0;   // most messages affected; 0: no limit
  StreamPosition message = StreamPosition::Any;

  bool operator==(const Trigger&) const = default;
};

struct Fault {
  FaultKind kind = FaultKind::Drop;
  Target target;
  Trigger trigger;
  double ms = 0;                     // delay, straggler
  double jitter = 0;                 // delay, milliseconds
  int bits = 1;                      // corrupt
  BytePlace where = BytePlace::Any;  // corrupt
  double period = 1;                 // link-flap, milliseconds
  double factor = 1;                 // straggler

  bool operator==(const Fault&) const = default;
};

struct FaultPlan {
  std::vector<Fault> faults;

  bool empty() const { return faults.empty(); }
  bool operator==(const FaultPlan&) const = default;
};

std::string to_string(const Fault&);
std::string to_string(const FaultPlan&);  // `none` for the empty plan

// Errors are Error{"--faults", ...} naming the item (1-based) and the key, with what is allowed.
Result<FaultPlan> parse_fault_plan(std::string_view text);

// Checks every value's range and every target against a world of `nranks` ranks.
Status validate(const FaultPlan&, int nranks);

// Candidates for the shrinker, each strictly simpler than `plan`: one fault removed, one
// trigger later (at, after, offset) or on any message, or one fault milder (lower p, fewer
// times, fewer bits, bits anywhere, shorter delay and jitter, smaller factor). Empty for the
// empty plan.
std::vector<FaultPlan> simpler(const FaultPlan& plan);

}  // namespace collcheck
