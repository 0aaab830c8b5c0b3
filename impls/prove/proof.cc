// The symbolic interpreter behind prove() works as follows. Every element is a set of (rank,
// index) input contributions, kept as runs of consecutive ranks modulo the rank count per index,
// so every ring partial sum (even one that wraps round rank n-1 to rank 0) stays one run and a
// tree's a run or two, even at thousands of ranks. Participants run from a worklist, each step
// as soon as it can, a receiver woken by a send first; sends are buffered in per-link FIFO queues.
//
// With several streams a participant is watched for races (race_check.h), so that the one
// interleaving run stands for all. Where every rank's program is rank 0's turned, rank 0 runs
// alone: symmetry.cc says why that proves every rank.
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
#include "impls/prove/interpreter.h"
#include "impls/prove/message_queues.h"
#include "impls/prove/pieces.h"
#include "impls/prove/provenance.h"
#include "impls/prove/race_check.h"
#include "impls/prove/symmetry.h"
#include "impls/schedule/step_cursor.h"
#include "reference/counts.h"

namespace collcheck {
namespace {

// The steps a participant runs before the next one in the worklist has its turn.
constexpr std::size_t kStepsPerTurn = 64;

using provenance::Element;
using provenance::Run;
using provenance::show;
using provenance::Symmetry;
using provenance::vector_blocks;
using provenance::VectorBlocks;
using provenance::wanted;

using provenance::Contents;
using provenance::Queue;
using provenance::RaceCheck;

// An output element of a rank, and the step that wrote it last (-1: none yet).
struct Watch {
  int rank;
  std::size_t element;
  int writer;
};

class Interpreter {
 public:
  // With a symmetry only rank 0 runs (the prose above says why that proves every rank).
  // With a line, the schedule is one in pieces: each message must stay in its place on the line.
  Interpreter(const Schedule& s, std::optional<Symmetry> symmetry, const provenance::PieceLine* line)
      : s_(s), symmetry_(symmetry), line_(line), simulated_(symmetry ? 1 : s.nparticipants()), buffers_(s, simulated_),
        queues_(s.nparticipants(), simulated_) {
    const auto n = static_cast<std::size_t>(simulated_);
    done_.resize(n);
    streams_.resize(n);
    sizes_.reserve(n);
    for (int p = 0; p < simulated_; ++p) sizes_.push_back(buffer_sizes(s, p));
    for (int p = 0; p < simulated_; ++p) make_streams(p);
    start_race_check();
  }

  void watch(const Watch& element) { watched_ = element; }  // records the step that writes it last
  std::optional<Watch> mismatch() const { return mismatch_; }
  // Made on demand, a participant had several streams: the proof stopped, the schedule must be stored.
  bool needs_stored() const { return several_streams_; }
  // By XOR, a message's two ends took its blocks in different orders: rank 0 alone does not stand
  // for every rank (symmetry.cc), the proof stopped, and every rank must run.
  bool orders_differ() const { return orders_differ_; }

  Proof run() {
    Proof proof;
    // A worklist of participants that may be able to move; a send wakes its receiver, which runs
    // next, so that a message is taken soon after it is sent and few wait at once (woken at the
    // back, in-network aggregation's multicast held a whole level's copies of V: 9.4 GiB instead of
    // 5.4 at 16,384 ranks).
    std::deque<int> work;
    std::vector<bool> queued(static_cast<std::size_t>(simulated_), true);
    for (int p = 0; p < simulated_; ++p) work.push_back(p);
    while (!work.empty() && proof.ok) {
      const int p = work.front();
      work.pop_front();
      queued[static_cast<std::size_t>(p)] = false;
      const bool turn_over = advance(p, proof, [&](int woken) {
        if (woken < simulated_ && !queued[static_cast<std::size_t>(woken)]) {
          queued[static_cast<std::size_t>(woken)] = true;
          work.push_front(woken);
        }
      });
      if (turn_over && !queued[static_cast<std::size_t>(p)]) {  // its turn is over: behind the others
        queued[static_cast<std::size_t>(p)] = true;
        work.push_back(p);
      }
    }
    if (proof.ok) check_finished(proof);
    if (proof.ok) check_outputs(proof);
    if (proof.ok && symmetry_) {
      if (std::optional<std::string> unlike = provenance::outputs_turn(s_, *symmetry_)) {
        proof.ok = false;
        proof.message = *unlike;
      }
    }
    if (symmetry_) {  // every rank ran rank 0's steps, turned
      proof.by_symmetry = true;
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
    std::uint32_t id = 0;     // among every participant's streams, for the race check
  };

  // The race check runs where a participant has several streams that do not keep apart
  // (MSCCL's thread blocks; a tree's two do), up to kRaceCheckStreams streams in all (its clocks
  // are streams^2 numbers).
  static constexpr std::uint32_t kRaceCheckStreams = 4096;
  void start_race_check() {
    std::uint32_t streams = 0;
    bool several = false;
    for (std::size_t q = 0; q < streams_.size(); ++q) {
      several = several || (streams_[q].size() > 1 &&
                            !provenance::streams_apart(s_, s_.participants[q].steps, static_cast<int>(q)));
      for (Stream& stream : streams_[q]) stream.id = streams++;
    }
    if (several && streams <= kRaceCheckStreams) races_.emplace(streams);
  }

  // Begins step k of p on a stream for the race check, after its stream's earlier steps, the
  // steps it waits for, and the send of the message it receives.
  void begin_race_step(int p, const Stream& stream, int k, const Step& step) {
    const Participant& participant = s_.participants[static_cast<std::size_t>(p)];
    const Queue* from = step.receives() ? &incoming(p, step) : nullptr;
    races_->begin(stream.id, p, k, participant.after(k), from != nullptr ? &from->clocks[from->head] : nullptr,
                  !participant.waits.empty());
  }

  bool raced(int p, int step, const char* verb, BufferKind buffer, std::size_t index,
             const std::optional<RaceCheck::Access>& other, Proof& proof) {
    if (!other) return false;
    fail(proof, p, step,
         std::string(verb) + " " + std::string(name(buffer)) + " element " + std::to_string(index) + ", which " +
             describe(s_, p, other->step) +
             " on another stream touches too, and nothing orders the two: a race between streams (the result "
             "depends on which runs first)");
    return true;
  }

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
    if (!several_streams(steps)) {
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
    if (buffers_.read(p, range, values, undefined)) {
      if (!races_ || (range.buffer == BufferKind::Input && !s_.shape.in_place)) return true;  // implicit input
      const Element* stored = buffers_.storage(p, range.buffer) + range.offset;
      for (std::size_t i = 0; i < range.count; ++i) {
        if (raced(p, step, "reads", range.buffer, range.offset + i, races_->read(stored + i), proof)) return false;
      }
      return true;
    }
    fail(proof, p, step,
         "reads " + std::string(name(range.buffer)) + " element " + std::to_string(undefined) +
             ", which nothing has written");
    return false;
  }

  bool write(int p, int step, const Range& range, Contents& values, Proof& proof) {
    const Element* stored = buffers_.write(p, range, values);
    for (std::size_t i = 0; races_ && i < range.count; ++i) {
      if (raced(p, step, "writes", range.buffer, range.offset + i, races_->write(stored + i), proof)) return false;
    }
    if (!watched_ || watched_->rank != p) return true;
    const Element* target =
        buffers_.storage(p, BufferKind::Output) + watched_->element;  // in place: any buffer may hold it
    const std::less<const Element*> before;
    if (!before(target, stored) && before(target, stored + range.count)) watched_->writer = step;
    return true;
  }

  std::uint32_t nranks() const { return static_cast<std::uint32_t>(s_.nranks()); }

  // a ⊕ b elementwise; fails on a contribution combined twice.
  bool combine_into(int p, int step, const Range& range, std::vector<Element>& a, const std::vector<Element>& b,
                    Proof& proof) {
    const std::optional<provenance::CombinedTwice> twice = provenance::combine_all(a, b, nranks());
    if (!twice) return true;
    fail(proof, p, step,
         std::string(name(range.buffer)) + " element " + std::to_string(range.offset + twice->index) +
             " would combine " + show(std::span<const Run>(&twice->shared, 1), nranks()) + " twice");
    return false;
  }

  // Runs the steps of p that can run now, stream by stream, until none can or the turn's
  // kStepsPerTurn have run; then p waits at the back of the worklist. No participant runs far
  // ahead of the rest, so few messages wait in the queues (running each rank until it blocks let
  // rank r of a ring run r steps ahead: n^2/2 messages queued at once, 100 MB at 2048 ranks).
  // True where the turn ended with p still able to move.
  template <typename Wake>
  bool advance(int p, Proof& proof, Wake wake) {
    const auto q = static_cast<std::size_t>(p);
    std::size_t turn = kStepsPerTurn;
    bool progress = true;
    while (progress && proof.ok) {
      progress = false;
      for (Stream& stream : streams_[q]) {
        while (!stream.steps.finished() && checked(p, stream, proof) && ready(p, stream.steps)) {
          int sent_to = -1;
          if (!run_step(p, stream, proof, sent_to)) return false;
          progress = true;
          if (sent_to >= 0) wake(sent_to);
          if (--turn == 0) return true;
        }
      }
    }
    return false;
  }

  // Runs the step a stream of p stands at and moves past it; `sent_to` the peer of a send.
  bool run_step(int p, Stream& stream, Proof& proof, int& sent_to) {
    const int k = stream.steps.index();
    const Step& step = stream.steps.step();
    if (races_) begin_race_step(p, stream, k, step);
    if (!execute(p, k, step, proof)) return false;
    if (!s_.participants[static_cast<std::size_t>(p)].waits.empty()) mark_done(static_cast<std::size_t>(p), k);
    ++proof.steps;
    if (step.sends()) sent_to = step.peer;
    stream.steps.next();
    return true;
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
    Status valid = validate_step(s_, p, stream.steps.index(), step, sizes_[static_cast<std::size_t>(p)]);
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

  // The messages that the receive `step` of p takes. With a symmetry, rank 0 receives from peer
  // p what rank 0 itself sends to rank -p (by XOR, to p), turned by p when it was sent.
  Queue& incoming(int p, const Step& step) {
    if (!symmetry_) return queues_.queue(p, step.peer, p, step.channel);
    return queues_.queue(p, 0,
                         static_cast<int>(symmetry_->sender_to_rank0(static_cast<std::uint32_t>(step.peer), nranks())),
                         step.channel);
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
      case StepKind::Send: return send(p, k, step, proof);
      case StepKind::Recv:
      case StepKind::RecvReduce: return receive(p, k, step, proof);
      case StepKind::Copy: {
        return read(p, k, step.from, local_, proof) && write(p, k, step.to, local_, proof);
      }
      case StepKind::Reduce: {
        if (!read(p, k, step.from, local_, proof) || !read(p, k, step.to, target_, proof)) return false;
        return combine_into(p, k, step.to, target_, local_, proof) && write(p, k, step.to, target_, proof);
      }
    }
    return false;
  }

  bool send(int p, int k, const Step& step, Proof& proof) {
    Contents payload = spare();
    if (!read(p, k, step.from, payload, proof)) return false;
    Queue& to = queues_.queue(p, p, step.peer, step.channel);
    if (symmetry_) {  // rank 0's own message, turned into the one rank 0 receives in its stead
      const std::uint32_t sender = symmetry_->sender_to_rank0(static_cast<std::uint32_t>(step.peer), nranks());
      symmetry_->turn_message(payload, step.from, sender, nranks());
      if (symmetry_->turn == provenance::Turn::Xor) to.keys.push_back(symmetry_->of(step.from.buffer).order(step.from));
    }
    if (line_ != nullptr) to.keys.push_back(line_->place(p, step.from));
    to.messages.push_back(std::move(payload));
    if (races_) to.clocks.push_back(races_->clock());
    ++proof.messages;
    return true;
  }

  bool receive(int p, int k, const Step& step, Proof& proof) {
    Queue& from = incoming(p, step);
    if (symmetry_ && symmetry_->turn == provenance::Turn::Xor &&
        from.keys[from.head] != symmetry_->of(step.to.buffer).order(step.to)) {
      orders_differ_ = true;
      fail(proof, p, k, "its message's blocks are taken in another order by XOR at its sender");
      return false;
    }
    if (line_ != nullptr && step.to.count > 0 && from.keys[from.head] != line_->place(p, step.to)) {  // empty: no place
      fail(proof, p, k,
           "receives at piece " + std::to_string(line_->place(p, step.to)) +
               " of the collective's line a message sent from piece " + std::to_string(from.keys[from.head]) +
               ": proven in pieces, every element must stay in its place on the line");
      proof.undecided = true;
      return false;
    }
    Contents payload = std::move(from.messages[from.head++]);
    from.drop_taken();
    queues_.forget_if_empty(from);
    if (payload.size() != step.to.count) {  // validate() matches them only where the steps are stored
      fail(proof, p, k,
           "receives " + std::to_string(step.to.count) + " elements, but the matching send has " +
               std::to_string(payload.size()));
      return false;
    }
    if (step.kind == StepKind::RecvReduce) {
      if (!read(p, k, step.from, local_, proof) || !combine_into(p, k, step.to, local_, payload, proof)) {
        return false;
      }
      std::swap(payload, local_);
    }
    const bool written = write(p, k, step.to, payload, proof);
    payload.clear();
    spare_.push_back(std::move(payload));
    return written;
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
    VectorBlocks blocks;
    for (int rank = 0; rank < std::min(s_.nranks(), simulated_) && proof.ok; ++rank) {
      const std::size_t size = s_.buffer_size(rank, BufferKind::Output);
      const Element* output = buffers_.storage(rank, BufferKind::Output);
      blocks = vector_blocks(s_.shape, rank, &blocks);
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

  void fail(Proof& proof, int p, int step, const std::string& what) {
    proof.ok = false;
    proof.message = describe(s_, p, step) + ": " + what;
  }

  const Schedule& s_;
  std::optional<Watch> watched_;   // the output element whose last writer a report names
  std::optional<Watch> mismatch_;  // the output element that was found wrong
  std::optional<Symmetry> symmetry_;
  const provenance::PieceLine* line_;  // proven in pieces: the line each message must stay in place on
  int simulated_;                      // participants run: all, or rank 0 alone with a symmetry
  bool several_streams_ = false;
  bool orders_differ_ = false;
  std::vector<std::vector<Stream>> streams_;
  std::vector<BufferSizes> sizes_;  // every participant run's, for the checks of steps made on demand
  provenance::ElementBuffers buffers_;
  std::vector<std::vector<bool>> done_;  // the steps run, kept only where a participant has waits
  provenance::MessageQueues queues_;
  std::optional<RaceCheck> races_;
  std::vector<Contents> spare_;  // emptied messages, for the next sends
  Contents local_, target_;      // reused by every step
};

}  // namespace

bool several_streams(std::span<const Step> steps) {
  return std::any_of(steps.begin(), steps.end(), [&](const Step& step) { return step.stream != steps[0].stream; });
}

std::optional<Proof> prove_valid(const Schedule& schedule, const std::optional<Symmetry>& symmetry,
                                 const provenance::PieceLine* line) {
  if (input_elements(schedule.shape) >= Run::kIndexLimit) return Proof{false, provenance::kBeyondIndexLimit, 0, 0};
  std::optional<Watch> wrong;
  {
    Interpreter interpreter(schedule, symmetry, line);
    Proof proof = interpreter.run();
    if (interpreter.needs_stored() || interpreter.orders_differ()) return std::nullopt;
    if (proof.ok || !interpreter.mismatch()) return proof;
    wrong = interpreter.mismatch();
  }
  // A wrong output: run again, watching that element, to name the step that wrote it last.
  Interpreter again(schedule, symmetry, line);
  again.watch(*wrong);
  return again.run();
}

}  // namespace collcheck
