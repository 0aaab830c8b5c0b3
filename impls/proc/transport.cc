// The proc transport's step scheduling: connects the links, lays out each case's message streams
// and FIFOs, runs the steps of the participants hosted here, and names what a run waits for.
#include "impls/proc/transport.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include <sched.h>
#include <string.h>

#include "impls/proc/progress.h"
#include "reference/numbers.h"

namespace collcheck {

using namespace proc;

// A case runs as follows (progress.h says how the engine moves messages). begin() lays out the
// case's streams from the schedule alone (plan(): every process decides the same), then meets
// the others twice over the links themselves, emptying its inbound FIFOs in between, so that no
// word of the last case is read under the new layout. run_call() runs every hosted participant's
// steps once, polling until all are done, a process fails, or the run is overdue; calls follow
// one another with no meeting. finish() says this process is done and keeps moving messages
// until every process is, so that a failure anywhere fails the run everywhere.

namespace {

// Whether `rank`'s pieces land with streaming stores: out of place into 16 MiB or more (ordinary stores
// would read each line first); in place what lands was read a step before, still cached.
bool lands_around_cache(const Schedule& schedule, int rank, std::size_t element) {
  constexpr std::size_t kStreamingOutputBytes = std::size_t{16} << 20;
  return rank < schedule.nranks() && !schedule.shape.in_place &&
         schedule.buffer_size(rank, BufferKind::Output) * element >= kStreamingOutputBytes;
}

std::string seconds_text(double seconds) {
  std::ostringstream out;
  out << seconds;
  return out.str();
}

// The messages each stream (from, to, channel) carries in one call of the schedule.
std::map<Key, std::uint64_t> sends_per_call(const Schedule& schedule) {
  std::map<Key, std::uint64_t> per_call;
  for (int p = 0; p < schedule.nparticipants(); ++p) {
    for (const Step& step : schedule.participants[static_cast<std::size_t>(p)].steps) {
      if (step.sends()) ++per_call[Key{p, step.peer, step.channel}];
    }
  }
  return per_call;
}

// Whether every rank's FIFOs (fifos[r] of them) fit its shared-memory segment.
Status fifos_fit(const std::vector<std::size_t>& fifos) {
  for (std::size_t r = 0; r < fifos.size(); ++r) {
    const std::size_t n = fifos[r];
    if (n * fifo_shape(n).bytes() > kFifoBytes) {
      return Error{"schedule", "rank " + std::to_string(r) + " receives on " + std::to_string(n) +
                                   " streams; the proc transport's segment holds at most " +
                                   std::to_string(kFifoBytes / fifo_shape(1 << 20).bytes())};
    }
  }
  return Ok{};
}

}  // namespace

ProcTransport::State::~State() { close_peers(peers); }

ProcTransport::ProcTransport(std::unique_ptr<State> state) : state_(std::move(state)) {}
ProcTransport::~ProcTransport() = default;

Result<std::unique_ptr<ProcTransport>> ProcTransport::connect(World& world, const ProcLinkOptions& links) {
  auto state = std::make_unique<State>(world, links.links);
  Status connected = connect_peers(world, links, state->peers);
  if (!connected) return connected.error();
  state->crowded = more_ranks_than(state->peers.hosts, state->rank);
  return std::unique_ptr<ProcTransport>(new ProcTransport(std::move(state)));
}

bool ProcTransport::broken() const { return state_->peers.rdma != nullptr && state_->peers.rdma->failed(); }
std::uint64_t ProcTransport::sent_again() const { return state_->sent_again; }
std::uint64_t ProcTransport::forwarded() const { return state_->pieces_forwarded; }
std::string ProcTransport::links() const {
  if (state_->peers.rdma != nullptr) return "ib (" + state_->peers.rdma->device_name() + ")";
  const bool tcp = std::any_of(state_->peers.connections.begin(), state_->peers.connections.end(),
                               [](const Connection& connection) { return connection.fd >= 0; });
  return tcp ? (state_->size > 1 && state_->links != ProcLinks::Tcp ? "shm+tcp" : "tcp") : "shm";
}

// Every stream of the schedule, each receiver's FIFO layout, and this process's ends of them: from
// the schedule alone, so every process decides the same (an error included) before any barrier.
Status ProcTransport::State::plan(const Schedule& next) {
  schedule = &next;
  element = size_of(next.shape.dtype);
  const std::map<Key, std::uint64_t> per_call = sends_per_call(next);
  std::vector<std::size_t> fifos(static_cast<std::size_t>(size), 0);
  std::map<Key, std::size_t> fifo_index;
  for (const auto& entry : per_call) {
    if (via_shm(entry.first) || via_rdma(entry.first))
      fifo_index[entry.first] = fifos[static_cast<std::size_t>(host(entry.first.to))]++;
  }
  Status room = fifos_fit(fifos);
  if (!room) return room;
  outbound.clear();
  inbound.clear();
  inbound_index.clear();
  outbound_index.clear();
  for (const auto& [key, count] : per_call) {
    const int to = host(key.to);
    const bool shm = via_shm(key);
    const FifoShape shape = fifo_shape(fifos[static_cast<std::size_t>(to)]);
    if (host(key.from) == rank) {
      Outbound out;
      out.key = key;
      out.per_call = count;
      if (shm) out.fifo = fifo_at(peers.segments[static_cast<std::size_t>(to)], fifo_index[key], shape);
      else if (!via_rdma(key)) out.connection = &peers.connections[static_cast<std::size_t>(to)];
      out.piece_bytes = shm || via_rdma(key) ? shape.slot_bytes : kProcSlotBytes;
      outbound.push_back(std::move(out));
    }
    if (to == rank) {
      Inbound in;
      in.key = key;
      in.per_call = count;
      in.tcp = !shm && !via_rdma(key);
      if (!in.tcp) in.fifo = fifo_at(peers.segments[static_cast<std::size_t>(rank)], fifo_index[key], shape);
      inbound_index[key] = static_cast<int>(inbound.size());
      inbound.push_back(std::move(in));
    }
  }
  if (peers.rdma != nullptr) {
    Status rdma = plan_rdma(per_call, fifo_index, fifos);
    if (!rdma) return rdma;
  }
  plan_hosted();
  streaming_landings = lands_around_cache(next, rank, element);
  return Ok{};
}

// The participants this process runs: their streams, and each step's link and ordinal.
void ProcTransport::State::plan_hosted() {
  for (std::size_t i = 0; i < outbound.size(); ++i) outbound_index[outbound[i].key] = static_cast<int>(i);
  hosted.clear();
  for (int p = 0; p < schedule->nparticipants(); ++p) {
    if (host(p) != rank) continue;
    const std::vector<Step>& steps = schedule->participants[static_cast<std::size_t>(p)].steps;
    Hosted local;
    local.participant = p;
    local.links.resize(steps.size());
    std::map<int, std::vector<int>> by_stream;
    std::map<Key, std::uint64_t> sends, receives;
    for (int k = 0; k < static_cast<int>(steps.size()); ++k) {
      const Step& step = steps[static_cast<std::size_t>(k)];
      by_stream[step.stream].push_back(k);
      StepLink& link = local.links[static_cast<std::size_t>(k)];
      if (step.sends()) {
        const Key key{p, step.peer, step.channel};
        link = StepLink{outbound_index.at(key), sends[key]++};
      } else if (step.receives()) {
        const Key key{step.peer, p, step.channel};
        link = StepLink{inbound_index.at(key), receives[key]++};
      }
    }
    for (auto& entry : by_stream) local.streams.push_back(Stream{std::move(entry.second)});
    hosted.push_back(std::move(local));
  }
}

void ProcTransport::State::reset_inbound() {
  reset_shadows();
  for (Inbound& in : inbound) {
    if (in.tcp) continue;
    in.head = in.tail_seen = 0;
    FifoControl& control = *in.fifo.control;
    for (auto* word : {&control.tail, &control.head, &control.acked, &control.rewind_to, &control.rewinds,
                       &control.taking[0], &control.taking[1]}) {
      word->store(0, std::memory_order_relaxed);
    }
  }
}

// The link protocol of a case: its defaults resolved against the run's deadline.
void ProcTransport::State::configure(const LinkProtocol& protocol) {
  settings = resolve(protocol, kRealClock, options.deadline);
  sweeping = settings.reliable || options.hook != nullptr;
  last_news = 0;
  peers_done.assign(static_cast<std::size_t>(size), 0);
}

// ---------------------------------------------------------------------------------------------
// The world: a process that fails a run stops every other one, so that the run ends `detected`
// on every rank within the link timeout. On one host it leaves its reason in its own segment and
// its epoch and rank in every other's stop word, which each polls in its progress loop; over TCP
// it sends an abort frame. Both carry the case's epoch, so a stop from an earlier case is ignored.

void ProcTransport::State::fail(std::string reason) {
  if (!failure.empty()) return;
  failure = std::move(reason);
  SegmentControl* own = segment_control(peers.segments[static_cast<std::size_t>(rank)]);
  const std::size_t n = std::min(failure.size(), kReasonBytes - 1);
  std::memcpy(own->reason, failure.data(), n);
  own->reason[n] = '\0';
  own->reason_epoch.store(epoch, std::memory_order_release);
  const std::uint64_t word = (std::uint64_t{epoch} << 32) | static_cast<std::uint64_t>(rank + 1);
  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    if (std::byte* segment = peers.segments[static_cast<std::size_t>(q)]) {
      segment_control(segment)->stop.store(word, std::memory_order_release);
    } else {
      send_control(q, FrameKind::Abort, Key{rank, q, 0}, 0, failure.substr(0, n));
    }
  }
  flush(0.2);  // best effort: what stays queued goes out with the next case, which ignores it
}

std::string ProcTransport::State::stop_reason(int by) const {
  std::string who = "rank " + std::to_string(by) + " stopped the run";
  if (by < 0 || by >= size || peers.segments[static_cast<std::size_t>(by)] == nullptr) return who;
  const SegmentControl* control = segment_control(peers.segments[static_cast<std::size_t>(by)]);
  if (control->reason_epoch.load(std::memory_order_acquire) != epoch) return who;
  return who + ": " + std::string(control->reason, ::strnlen(control->reason, kReasonBytes));
}

void ProcTransport::State::heed_stop() {
  const std::uint64_t word =
      segment_control(peers.segments[static_cast<std::size_t>(rank)])->stop.load(std::memory_order_acquire);
  if ((word >> 32) == epoch && failure.empty()) failure = stop_reason(static_cast<int>(word & 0xffffffffu) - 1);
}

void ProcTransport::State::send_control(int to_rank, FrameKind kind, const Key& key, std::uint64_t sequence,
                                        const std::string& text) {
  Connection& connection = peers.connections[static_cast<std::size_t>(to_rank)];
  if (connection.fd < 0) return;
  const FrameHeader header{
      epoch, kind, key.from, key.to, key.channel, 0, PieceHeader{sequence, 0, text.size(), 0, 0, 0}};
  append_frame(connection, header, reinterpret_cast<const std::byte*>(text.data()));
}

void ProcTransport::State::flush(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    bool pending = false;
    for (Connection& connection : peers.connections) {
      if (connection.fd < 0 || connection.out_sent == connection.out.size()) continue;
      std::string error;
      write_some(connection, error);
      pending = pending || (error.empty() && connection.out_sent < connection.out.size());
    }
    if (!pending || std::chrono::steady_clock::now() > until) return;
    sched_yield();
  }
}

void ProcTransport::State::announce_done() {
  segment_control(peers.segments[static_cast<std::size_t>(rank)])->done.store(epoch, std::memory_order_release);
  done_marks.assign(static_cast<std::size_t>(size), 0);
  for (int q = 0; q < size; ++q) {
    if (q == rank || peers.segments[static_cast<std::size_t>(q)] != nullptr) continue;
    send_control(q, FrameKind::Done, Key{rank, q, 0}, 0);
    done_marks[static_cast<std::size_t>(q)] = peers.connections[static_cast<std::size_t>(q)].appended;
  }
}

// Whether rank q has said it finished this case (over TCP: and our own word has left, unless q
// closed the connection, which it does only once it has heard every rank finish).
bool ProcTransport::State::done(int q) const {
  if (std::byte* segment = peers.segments[static_cast<std::size_t>(q)]) {
    return segment_control(segment)->done.load(std::memory_order_acquire) >= epoch;
  }
  const Connection& connection = peers.connections[static_cast<std::size_t>(q)];
  return peers_done[static_cast<std::size_t>(q)] == epoch &&
         (connection.fd < 0 || connection.written >= done_marks[static_cast<std::size_t>(q)]);
}

// Whether rank q has reached phase `phase` of this case's beginning (or the next phase).
bool ProcTransport::State::arrived(int q, int phase) const {
  std::byte* segment = peers.segments[static_cast<std::size_t>(q)];
  const std::uint64_t mark = segment != nullptr ? segment_control(segment)->arrived.load(std::memory_order_acquire)
                                                : peers_arrived[static_cast<std::size_t>(q)];
  return mark / 4 == epoch && static_cast<int>(mark % 4) >= phase;
}

// A barrier over the links themselves, within the link timeout.
Status ProcTransport::State::meet(int phase) {
  const std::uint64_t mark = std::uint64_t{epoch} * 4 + static_cast<std::uint64_t>(phase);
  segment_control(peers.segments[static_cast<std::size_t>(rank)])->arrived.store(mark, std::memory_order_release);
  for (int q = 0; q < size; ++q) {
    if (q != rank && peers.segments[static_cast<std::size_t>(q)] == nullptr)
      send_control(q, FrameKind::Arrived, Key{rank, q, 0}, mark);
  }
  const double give_up = now() + settings.timeout;
  std::vector<std::uint64_t> missing;
  for (;;) {
    missing.clear();
    for (int q = 0; q < size; ++q) {
      if (q != rank && !arrived(q, phase)) missing.push_back(static_cast<std::uint64_t>(q));
    }
    if (missing.empty()) return Ok{};
    const bool progressed = pump();
    if (!failure.empty()) return Error{"proc", failure};
    // Not this rank's own number: the world says which ranks said it, and so the ranks that saw
    // the same missing ones say it once together.
    if (!settings.forever && now() > give_up) {
      return Error{"proc", ranks_text(missing) + " did not begin the case within " + seconds_text(settings.timeout) +
                               " s (the link timeout)"};
    }
    if (!progressed) sched_yield();
  }
}

bool ProcTransport::State::everyone_done() const {
  for (int q = 0; q < size; ++q) {
    if (q != rank && !done(q)) return false;
  }
  return true;
}

// Two barriers (timed, so that a rank stopped before the case began cannot hang the others in a
// barrier of the World): the first makes sure no process still writes into any FIFO under the last
// case's layout (a run that ended in an error leaves its peers sending until their deadline);
// the second that every inbound FIFO is empty before anyone sends under the new one. TCP frames
// of an earlier case still on the wire carry an older epoch and are dropped when read, and so
// are stop words of an earlier case.
Status ProcTransport::begin(const Schedule& schedule, const ProcRunOptions& options) {
  State& state = *state_;
  state.options = options;
  state.call = 0;
  state.lazy = 0;
  state.failure.clear();
  ++state.epoch;
  state.configure(options.protocol);
  Status planned = state.plan(schedule);
  if (!planned) return planned;
  state.meeting = true;
  // ib: every write of the last case lands before the words are reset; a link failed since ends it.
  const std::string failed = state.peers.rdma != nullptr ? state.peers.rdma->drain(state.options.deadline) : "";
  if (!failed.empty()) return Error{"ib", failed};
  Status met = state.meet(1);
  if (met) {
    state.reset_inbound();
    met = state.meet(2);
  }
  state.meeting = false;
  return met;
}

// Runs the stream's steps until one has to wait; true when anything moved.
bool ProcTransport::State::advance(Hosted& local, Stream& stream) {
  const std::vector<Step>& steps = schedule->participants[static_cast<std::size_t>(local.participant)].steps;
  bool progressed = false;
  while (stream.next < stream.steps.size() && failure.empty()) {
    const int k = stream.steps[stream.next];
    const Step& step = steps[static_cast<std::size_t>(k)];
    for (int earlier : schedule->participants[static_cast<std::size_t>(local.participant)].after(k)) {
      if (local.done[static_cast<std::size_t>(earlier)] == 0) return progressed;
    }
    const StepLink& link = local.links[static_cast<std::size_t>(k)];
    const std::size_t bytes = step.to.count * element;
    switch (step.kind) {
      case StepKind::Send:
        if (!std::exchange(stream.forwarding, false)) post(local, step, link);  // else posted with its receive
        break;
      case StepKind::Copy:
        protect(address(local, step.to), bytes);
        if (bytes > 0) std::memmove(address(local, step.to), address(local, step.from), bytes);
        break;
      case StepKind::Reduce:
        protect(address(local, step.to), bytes);
        if (bytes > 0) reduce(address(local, step.to), address(local, step.from), address(local, step.to), bytes);
        break;
      default: {
        const Taken taken = receive(local, step, link, forward_of(local, stream, step));
        if (taken != Taken::All) return progressed || taken == Taken::Some;
      }
    }
    local.done[static_cast<std::size_t>(k)] = 1;
    --local.remaining;
    ++stream.next;
    progressed = true;
  }
  return progressed;
}

// What this process waits for when it gives up (`how`: "after 0.3 s"): preferably a receive with no message.
std::string ProcTransport::State::stuck(const std::string& how) const {
  const std::string after = " " + how;
  std::string first;
  for (const Hosted& local : hosted) {
    const std::vector<Step>& steps = schedule->participants[static_cast<std::size_t>(local.participant)].steps;
    for (const Stream& stream : local.streams) {
      if (stream.next == stream.steps.size()) continue;
      const int k = stream.steps[stream.next];
      const Step& step = steps[static_cast<std::size_t>(k)];
      const std::span<const int> waits = schedule->participants[static_cast<std::size_t>(local.participant)].after(k);
      const bool ready =
          std::all_of(waits.begin(), waits.end(), [&](int e) { return local.done[static_cast<std::size_t>(e)] != 0; });
      if (ready && step.receives()) {
        const StepLink& link = local.links[static_cast<std::size_t>(k)];
        const Inbound& in = inbound[static_cast<std::size_t>(link.link)];
        return participant_name(local.participant) + " step " + std::to_string(k) + " (" +
               std::string(name(step.kind)) + " from " + participant_name(step.peer) + ", channel " +
               std::to_string(step.channel) + "): no message" + after + " (call " + std::to_string(call) +
               ", message " + std::to_string(call * in.per_call + link.ordinal) + ")";
      }
      if (first.empty()) first = describe(*schedule, local.participant, k) + ": not done" + after;
    }
  }
  return first.empty() ? "rank " + std::to_string(rank) + ": stuck" + after : first;
}

// Whether a wait has lasted too long: past the run's deadline (this process alone gives up: every
// process has the same deadline), or with nothing new for the link timeout (this process stops
// every other one). Never, in a world told to wait for ever.
bool ProcTransport::State::overdue(bool progressed, double time) {
  if (settings.forever) return false;
  if (progressed) {
    last_news = time;
    return false;
  }
  if (time > options.deadline) {
    if (failure.empty()) failure = stuck("after " + seconds_text(options.deadline) + " s");
    return true;
  }
  if (time - last_news > settings.timeout) {
    fail(stuck("for " + seconds_text(settings.timeout) + " s (the link timeout)"));
    return true;
  }
  return false;
}

Status ProcTransport::run_call(std::span<const ProcBuffers> buffers) {
  State& state = *state_;
  for (Hosted& local : state.hosted) {
    const std::size_t steps = state.schedule->participants[static_cast<std::size_t>(local.participant)].steps.size();
    local.buffers = buffers[static_cast<std::size_t>(local.participant)];
    local.done.assign(steps, 0);
    local.remaining = steps;
    for (Stream& stream : local.streams) stream = Stream{std::move(stream.steps)};
  }
  for (Inbound& in : state.inbound) in.waiting = false;
  // The link timeout counts the quiet time of this call only: not the case's start and meeting
  // before call 0 (dozens of processes on a few cores meet in more than a short timeout), nor what
  // this process did between calls.
  state.last_news = state.now();
  auto unfinished = [&] {
    return std::any_of(state.hosted.begin(), state.hosted.end(),
                       [](const Hosted& local) { return local.remaining > 0; });
  };
  while (unfinished()) {
    bool progressed = false;
    for (Hosted& local : state.hosted) {
      for (Stream& stream : local.streams) progressed |= state.advance(local, stream);
    }
    // One reading of the clock a turn (on a VM each costs tens of nanoseconds, and turns are short).
    const double time = state.now();
    progressed |= state.pump(time);
    if (!state.failure.empty()) return Error{"proc", state.failure};
    if (state.overdue(progressed, time)) return Error{"proc", state.failure};
    if (!progressed) state.idle(time);
  }
  state.settle();
  ++state.call;
  return Ok{};
}

// The end of a run: this process says it is done and waits until every other one is (or stops
// the run), moving its messages along meanwhile, so that every process ends a run the same way:
// a rank that finds a damaged last message still fails the run everywhere. Bounded by the
// deadline only: a peer may still work for long on what does not concern this process.
Status ProcTransport::finish() {
  State& state = *state_;
  state.settle();
  state.announce_done();
  for (;;) {
    const bool progressed = state.pump();
    if (state.everyone_done()) return Ok{};  // no one stopped the run; a peer may have left already
    if (!state.failure.empty()) return Error{"proc", state.failure};
    if (progressed) continue;
    if (!state.settings.forever && state.now() > state.options.deadline) {
      std::vector<std::uint64_t> waiting;  // (not this rank's own number: see meet)
      for (int q = 0; q < state.size; ++q) {
        if (q != state.rank && !state.done(q)) waiting.push_back(static_cast<std::uint64_t>(q));
      }
      return Error{"proc", ranks_text(waiting) + " not finished after " + seconds_text(state.options.deadline) + " s"};
    }
    sched_yield();
  }
}

}  // namespace collcheck
