// The symbolic interpreter behind prove() works as follows. Every element is a set of (rank,
// index) input contributions, kept as runs of consecutive ranks modulo the rank count per index,
// so every ring partial sum (even one that wraps round rank n-1 to rank 0) stays one run and a
// tree's a run or two, even at thousands of ranks. Participants run from a worklist, each step
// as soon as it can; sends are buffered in per-link FIFO queues.
//
// Rotation symmetry. Let rho_r turn rank s into s+r (mod n), an offset of each buffer by the
// buffer's Turning (block b of every part becomes block b+r, element j of a block staying j),
// and a contribution (s, i) into (s+r, i turned as an input offset). find_rotation checks, for
// every rank r and step k, that rank r's step k is rho_r of rank 0's step k: same kind, channel,
// stream and waits, the peer turned, every range turned (a range inside one block, so that its
// image is one range with its elements in the same order). Then rho_1, and so every rho_r, maps
// the schedule onto itself. The run is determinate: a stream's steps run in order, the k-th
// send from a to b on a channel is met by the k-th receive there whatever the interleaving, so
// what every message and element holds, and whether a step ever runs, depend on the schedule
// alone (where a rank's streams race on an element, both proofs prove one interleaving). Run the ranks in lockstep
// rounds (each round every rank runs every step that is ready): by induction over the rounds rank r holds rho_r of what
// rank 0 holds and has run the same steps, and the k-th message from rank p to rank 0 on channel c is rho_p of the k-th
// message from rank 0 to rank -p on c. That is how `rotation_` runs rank 0 alone: a receive from p takes rank 0's own
// sends to -p, turned by p, and is ready exactly when that send has run. So rank 0 reads an undefined element, combines
// a contribution twice or waits forever exactly when every rank does, and rank r's outputs are rho_r of rank 0's. The
// last link is not assumed but checked (check_outputs_turn): for every rank r and output element i, what the collective
// requires of rank r's element T_r(i) is rho_r of what it requires of rank 0's i. Where any check fails, every rank
// runs (the full proof).
#include "impls/prove/proof.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "impls/prove/element_buffers.h"
#include "impls/prove/expected.h"
#include "impls/prove/message_queues.h"
#include "impls/prove/provenance.h"
#include "impls/prove/symmetry.h"
#include "impls/schedule/step_cursor.h"
#include "reference/counts.h"

namespace collcheck {
namespace {

// The steps a participant runs before the next one in the worklist has its turn.
constexpr std::size_t kStepsPerTurn = 64;

using provenance::combine;
using provenance::Element;
using provenance::Rotation;
using provenance::Run;
using provenance::show;
using provenance::Turning;
using provenance::Union;
using provenance::vector_blocks;
using provenance::VectorBlocks;
using provenance::wanted;

using provenance::Contents;
using provenance::Queue;

// An output element of a rank, and the step that wrote it last (-1: none yet).
struct Watch {
  int rank;
  std::size_t element;
  int writer;
};

class Interpreter {
 public:
  // With a rotation only rank 0 runs (the prose above says why that proves every rank).
  Interpreter(const Schedule& s, std::optional<Rotation> rotation)
      : s_(s), rotation_(rotation), simulated_(rotation ? 1 : s.nparticipants()), buffers_(s, simulated_),
        queues_(s.nparticipants(), simulated_) {
    const auto n = static_cast<std::size_t>(simulated_);
    done_.resize(n);
    streams_.resize(n);
    for (int p = 0; p < simulated_; ++p) make_streams(p);
  }

  void watch(const Watch& element) { watched_ = element; }  // records the step that writes it last
  std::optional<Watch> mismatch() const { return mismatch_; }
  // Made on demand, a participant had several streams: the proof stopped, the schedule must be stored.
  bool needs_stored() const { return several_streams_; }

  Proof run() {
    Proof proof;
    // A worklist of participants that may be able to move; a send wakes its receiver.
    std::deque<int> work;
    std::vector<bool> queued(static_cast<std::size_t>(simulated_), true);
    for (int p = 0; p < simulated_; ++p) work.push_back(p);
    while (!work.empty() && proof.ok) {
      const int p = work.front();
      work.pop_front();
      queued[static_cast<std::size_t>(p)] = false;
      advance(p, proof, [&](int woken) {
        if (woken < simulated_ && !queued[static_cast<std::size_t>(woken)]) {
          queued[static_cast<std::size_t>(woken)] = true;
          work.push_back(woken);
        }
      });
    }
    if (proof.ok) check_finished(proof);
    if (proof.ok) check_outputs(proof);
    if (proof.ok && rotation_) check_outputs_turn(proof);
    if (rotation_) {  // every rank ran rank 0's steps, turned
      proof.by_rotation = true;
      proof.steps *= static_cast<std::size_t>(s_.nranks());
      proof.messages *= static_cast<std::size_t>(s_.nranks());
    }
    return proof;
  }

 private:
  // One stream of a participant: its steps, the first not yet run where the cursor stands.
  struct Stream {
    StepCursor steps;
    std::size_t checked = 0;  // made on demand: the steps checked so far
    int stream = 0;           // made on demand: the stream of its first step
  };

  // The steps of participant p by stream, in order; one stream, the common case, keeps no list.
  // Made on demand, a participant is read as one stream, its steps checked as they come (and
  // found to have several streams, the proof stops: prove() then stores the schedule).
  void make_streams(int p) {
    const auto q = static_cast<std::size_t>(p);
    if (s_.on_demand()) {
      streams_[q].push_back(Stream{StepCursor(s_, p, StepCursor::kEveryStream, StepCursor::kUncounted)});
      return;
    }
    const auto& steps = s_.participants[q].steps;
    const bool one_stream =
        std::all_of(steps.begin(), steps.end(), [&](const Step& step) { return step.stream == steps.front().stream; });
    if (one_stream) {
      streams_[q].push_back(Stream{StepCursor(steps, {}, steps.size())});
      return;
    }
    std::map<int, std::vector<int>> by_stream;
    for (int k = 0; k < static_cast<int>(steps.size()); ++k)
      by_stream[steps[static_cast<std::size_t>(k)].stream].push_back(k);
    for (auto& [stream, indices] : by_stream) {
      const std::size_t size = indices.size();
      streams_[q].push_back(Stream{StepCursor(steps, std::move(indices), size)});
    }
  }

  // Reads a range into `values`; fails on an undefined element.
  bool read(int p, int step, const Range& range, Contents& values, Proof& proof) {
    std::size_t undefined = 0;
    if (buffers_.read(p, range, values, undefined)) return true;
    fail(proof, p, step,
         "reads " + std::string(name(range.buffer)) + " element " + std::to_string(undefined) +
             ", which nothing has written");
    return false;
  }

  void write(int p, int step, const Range& range, Contents& values) {
    const Element* stored = buffers_.write(p, range, values);
    if (!watched_ || watched_->rank != p) return;
    const Element* target =
        buffers_.storage(p, BufferKind::Output) + watched_->element;  // in place: any buffer may hold it
    const std::less<const Element*> before;
    if (!before(target, stored) && before(target, stored + range.count)) watched_->writer = step;
  }

  // The common case without allocating: two single runs of one index that meet end to end.
  bool merge_single(Element& a, const Element& b) const {
    if (a.runs().size() != 1 || b.runs().size() != 1) return false;
    const std::optional<Run> joined = provenance::join(a.runs()[0], b.runs()[0], nranks());
    if (joined) a.assign_single(*joined);
    return joined.has_value();
  }

  std::uint32_t nranks() const { return static_cast<std::uint32_t>(s_.nranks()); }

  // a ⊕ b elementwise; fails on a contribution combined twice.
  bool combine_into(int p, int step, const Range& range, std::vector<Element>& a, const std::vector<Element>& b,
                    Proof& proof) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (merge_single(a[i], b[i])) continue;
      Union u = combine(a[i].runs(), b[i].runs(), nranks());
      if (u.shared) {
        fail(proof, p, step,
             std::string(name(range.buffer)) + " element " + std::to_string(range.offset + i) + " would combine " +
                 show(std::span<const Run>(&*u.shared, 1), nranks()) + " twice");
        return false;
      }
      a[i].assign(std::move(u.runs));
    }
    return true;
  }

  // Runs the steps of p that can run now, stream by stream, until none can or the turn's
  // kStepsPerTurn have run; then p waits at the back of the worklist. No participant runs far
  // ahead of the rest, so few messages wait in the queues (running each rank until it blocks let
  // rank r of a ring run r steps ahead: n^2/2 messages queued at once, 100 MB at 2048 ranks).
  template <typename Wake>
  void advance(int p, Proof& proof, Wake wake) {
    const auto q = static_cast<std::size_t>(p);
    std::size_t turn = kStepsPerTurn;
    bool progress = true;
    while (progress && proof.ok) {
      progress = false;
      for (Stream& stream : streams_[q]) {
        while (!stream.steps.finished() && checked(p, stream, proof) && ready(p, stream.steps)) {
          const int k = stream.steps.index();
          const Step& step = stream.steps.step();
          if (!execute(p, k, step, proof)) return;
          if (!s_.participants[q].waits.empty()) mark_done(q, k);
          ++proof.steps;
          progress = true;
          if (step.sends()) wake(step.peer);
          stream.steps.next();
          if (--turn == 0) return wake(p);
        }
      }
    }
  }

  // A step made on demand is checked on its own the first time its stream stands at it (a
  // stored schedule was validated whole before the proof); a second stream stops the proof.
  bool checked(int p, Stream& stream, Proof& proof) {
    if (!s_.on_demand() || stream.checked > stream.steps.position()) return true;
    const Step& step = stream.steps.step();
    if (stream.steps.position() == 0) stream.stream = step.stream;
    if (step.stream != stream.stream) {
      several_streams_ = true;
      proof.ok = false;
      proof.message = describe(s_, p, stream.steps.index()) + ": a second stream, which a proof on demand cannot run";
      return false;
    }
    Status valid = validate_step(s_, p, stream.steps.index(), step);
    if (!valid) {
      proof.ok = false;
      proof.message = valid.error().message;
      return false;
    }
    stream.checked = stream.steps.position() + 1;
    return true;
  }

  void mark_done(std::size_t q, int k) {
    const auto index = static_cast<std::size_t>(k);
    if (done_[q].size() <= index) done_[q].resize(index + 1, false);
    done_[q][index] = true;
  }
  bool is_done(std::size_t q, int k) const {
    const auto index = static_cast<std::size_t>(k);
    return index < done_[q].size() && done_[q][index];
  }

  // Whether the step a stream of p stands at can run: its dependencies are done and, for a
  // receive, its message has arrived.
  bool ready(int p, const StepCursor& steps) {
    const auto q = static_cast<std::size_t>(p);
    for (int earlier : s_.participants[q].after(steps.index())) {
      if (!is_done(q, earlier)) return false;
    }
    return !steps.step().receives() || !incoming(p, steps.step()).empty();
  }

  // The messages that the receive `step` of p takes. With a rotation, rank 0 receives from peer
  // p what rank 0 itself sends to rank -p, turned by p.
  Queue& incoming(int p, const Step& step) {
    if (!rotation_) return queues_.queue(p, step.peer, p, step.channel);
    return queues_.queue(p, 0, (s_.nranks() - step.peer) % s_.nranks(), step.channel);
  }

  // Message buffers are reused: a step allocates only where an element has many runs.
  Contents spare() {
    if (spare_.empty()) return {};
    Contents message = std::move(spare_.back());
    spare_.pop_back();
    return message;
  }

  bool execute(int p, int k, const Step& step, Proof& proof) {
    switch (step.kind) {
      case StepKind::Send: {
        Contents payload = spare();
        if (!read(p, k, step.from, payload, proof)) return false;
        queues_.queue(p, p, step.peer, step.channel).messages.push_back(std::move(payload));
        ++proof.messages;
        return true;
      }
      case StepKind::Recv:
      case StepKind::RecvReduce: {
        Queue& from = incoming(p, step);
        Contents payload = std::move(from.messages[from.head++]);
        if (from.empty()) {
          from.messages.clear();
          from.head = 0;
        }
        if (payload.size() != step.to.count) {  // validate() matches them only where the steps are stored
          fail(proof, p, k,
               "receives " + std::to_string(step.to.count) + " elements, but the matching send has " +
                   std::to_string(payload.size()));
          return false;
        }
        if (rotation_) {  // rank 0's own message, turned into the one rank `peer` sends
          for (Element& element : payload) rotation_->turn(element, static_cast<std::uint32_t>(step.peer), nranks());
        }
        if (step.kind == StepKind::RecvReduce) {
          if (!read(p, k, step.from, local_, proof) || !combine_into(p, k, step.to, local_, payload, proof)) {
            return false;
          }
          std::swap(payload, local_);
        }
        write(p, k, step.to, payload);
        payload.clear();
        spare_.push_back(std::move(payload));
        return true;
      }
      case StepKind::Copy: {
        if (!read(p, k, step.from, local_, proof)) return false;
        write(p, k, step.to, local_);
        return true;
      }
      case StepKind::Reduce: {
        if (!read(p, k, step.from, local_, proof) || !read(p, k, step.to, target_, proof)) return false;
        if (!combine_into(p, k, step.to, target_, local_, proof)) return false;
        write(p, k, step.to, target_);
        return true;
      }
    }
    return false;
  }

  void check_finished(Proof& proof) {
    std::string stuck;
    int shown = 0;
    for (int p = 0; p < simulated_; ++p) {
      const auto& streams = streams_[static_cast<std::size_t>(p)];
      const auto first =
          std::find_if(streams.begin(), streams.end(), [](const Stream& stream) { return !stream.steps.finished(); });
      if (first == streams.end()) continue;
      if (shown++ < 4) stuck += "\n  " + describe(s_, p, first->steps.index());
    }
    if (shown == 0) return check_received(proof);
    proof.ok = false;
    proof.message =
        "deadlock: " + std::to_string(shown) + " participant" + (shown > 1 ? "s" : "") + " wait forever, e.g." + stuck;
  }

  // Every message sent was received (validate() matches them only where the steps are stored).
  void check_received(Proof& proof) {
    const std::optional<provenance::LinkEnds> waiting = queues_.waiting();
    if (!waiting) return;
    proof.ok = false;
    proof.message = participant_name(s_, waiting->from) + " sends " + participant_name(s_, waiting->to) +
                    " a message on channel " + std::to_string(waiting->channel) + " that is never received";
  }

  void check_outputs(Proof& proof) {
    for (int rank = 0; rank < std::min(s_.nranks(), simulated_) && proof.ok; ++rank) {
      const std::size_t size = s_.buffer_size(rank, BufferKind::Output);
      const Element* output = buffers_.storage(rank, BufferKind::Output);
      const VectorBlocks blocks = vector_blocks(s_.shape, rank);
      for (std::size_t i = 0; i < size; ++i) {
        const Element& element = output[i];
        const Run want = wanted(s_.shape, rank, i, blocks);
        if (element.defined() && element.runs().size() == 1 && element.runs()[0] == want) continue;
        const std::string holds = element.defined() ? show(element.runs(), nranks()) : "nothing (never written)";
        const int writer = watched_ ? watched_->writer : -1;
        const std::string where = writer >= 0 ? " (last written by " + describe(s_, rank, writer) + ")" : "";
        mismatch_ = Watch{rank, i, -1};
        proof.ok = false;
        proof.message = "rank " + std::to_string(rank) + " output element " + std::to_string(i) + " holds " + holds +
                        where + ", but " + std::string(name(s_.shape.collective)) + " needs " +
                        show(std::span<const Run>(&want, 1), nranks());
        return;
      }
    }
  }

  // Rank 0's outputs stand for every rank's only where the collective's requirement turns alike:
  // rank r's element T_r(i) must need what rank 0's element i needs, turned by r.
  void check_outputs_turn(Proof& proof) const {
    const Turning& output = rotation_->of(BufferKind::Output);
    const VectorBlocks blocks0 = vector_blocks(s_.shape, 0);
    const std::size_t size = s_.buffer_size(0, BufferKind::Output);
    for (int rank = 1; rank < s_.nranks(); ++rank) {
      const auto by = static_cast<std::uint32_t>(rank);
      const VectorBlocks blocks = vector_blocks(s_.shape, rank);
      for (std::size_t i = 0; i < size; ++i) {
        const std::size_t turned = output.offset(i, by, nranks());
        if (wanted(s_.shape, rank, turned, blocks) ==
            rotation_->contributions(wanted(s_.shape, 0, i, blocks0), by, nranks()))
          continue;
        proof.ok = false;
        proof.message = "rank " + std::to_string(rank) + "'s program is rank 0's turned, but " +
                        std::string(name(s_.shape.collective)) + " does not require its output element " +
                        std::to_string(turned) + " to hold rank 0's element " + std::to_string(i) + " turned";
        return;
      }
    }
  }

  void fail(Proof& proof, int p, int step, const std::string& what) {
    proof.ok = false;
    proof.message = describe(s_, p, step) + ": " + what;
  }

  const Schedule& s_;
  std::optional<Watch> watched_;   // the output element whose last writer a report names
  std::optional<Watch> mismatch_;  // the output element that was found wrong
  std::optional<Rotation> rotation_;
  int simulated_;  // participants run: all, or rank 0 alone with a rotation
  bool several_streams_ = false;
  std::vector<std::vector<Stream>> streams_;
  provenance::ElementBuffers buffers_;
  std::vector<std::vector<bool>> done_;  // the steps run, kept only where a participant has waits
  provenance::MessageQueues queues_;
  std::vector<Contents> spare_;  // emptied messages, for the next sends
  Contents local_, target_;      // reused by every step
};

}  // namespace

namespace {

// The proof of a valid schedule, with its rotation if it has one; nothing where a schedule made
// on demand turned out to need storing.
std::optional<Proof> prove_valid(const Schedule& schedule, const std::optional<Rotation>& rotation) {
  std::optional<Watch> wrong;
  {
    Interpreter interpreter(schedule, rotation);
    Proof proof = interpreter.run();
    if (interpreter.needs_stored()) return std::nullopt;
    if (proof.ok || !interpreter.mismatch()) return proof;
    wrong = interpreter.mismatch();
  }
  // A wrong output: run again, watching that element, to name the step that wrote it last.
  Interpreter again(schedule, rotation);
  again.watch(*wrong);
  return again.run();
}

}  // namespace

// Rank 0's steps checked and stored, the others' compared with them (a valid step turned is valid).
std::optional<Proof> prove_by_rotation(const Schedule& schedule) {
  if (!schedule.on_demand()) {
    const std::optional<Rotation> rotation = provenance::find_rotation(schedule);
    if (!rotation) return std::nullopt;
    Status valid = validate(schedule);
    return valid ? *prove_valid(schedule, rotation) : Proof{false, valid.error().message, 0, 0};
  }
  Schedule rank0 = schedule;
  rank0.make_steps = {};
  std::vector<Step>& steps = rank0.participants.front().steps;
  for (StepReader made = schedule.steps_of(0); made.next();) {
    Status valid = validate_step(schedule, 0, static_cast<int>(steps.size()), made.step());
    if (!valid) return Proof{false, valid.error().message, 0, 0};
    steps.push_back(made.step());
  }
  const std::optional<Rotation> rotation = provenance::find_rotation(schedule, steps);
  if (!rotation) return std::nullopt;
  return *prove_valid(rank0, rotation);
}

Proof prove(const Schedule& schedule) {
  if (std::optional<Proof> proof = prove_by_rotation(schedule)) return *proof;
  return prove_in_full(schedule);
}

// A schedule made on demand is proven as it is made, never stored, where every participant has
// one stream and no waits (the ring's); any other is stored first.
Proof prove_in_full(const Schedule& schedule) {
  if (schedule.on_demand()) {
    const bool waits = std::any_of(schedule.participants.begin(), schedule.participants.end(),
                                   [](const Participant& participant) { return !participant.waits.empty(); });
    if (waits) return prove_in_full(stored(schedule));
    Status valid = validate_participants(schedule);
    if (!valid) return Proof{false, valid.error().message, 0, 0};
    std::optional<Proof> proof = prove_valid(schedule, std::nullopt);
    return proof ? *proof : prove_in_full(stored(schedule));
  }
  Status valid = validate(schedule);
  return valid ? *prove_valid(schedule, std::nullopt) : Proof{false, valid.error().message, 0, 0};
}

}  // namespace collcheck
