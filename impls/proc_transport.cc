// The proc transport's step scheduling: connects the links, lays out each case's message streams
// and FIFOs, runs the steps of the participants hosted here, and names what a run waits for.
#include "impls/proc_transport.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <sstream>
#include <vector>

#include <sched.h>

#include "impls/proc_progress.h"

namespace collcheck {

using namespace proc;

namespace {

std::string seconds_text(double seconds) {
  std::ostringstream out;
  out << seconds;
  return out.str();
}

}  // namespace

std::string_view name(ProcLinks links) {
  switch (links) {
    case ProcLinks::Shm: return "shm";
    case ProcLinks::Tcp: return "tcp";
    default: return "auto";
  }
}

Result<ProcLinks> parse_proc_links(std::string_view text) {
  if (text == "auto") return ProcLinks::Auto;
  if (text == "shm") return ProcLinks::Shm;
  if (text == "tcp") return ProcLinks::Tcp;
  return Error{"transport", "'" + std::string(text) + "': must be auto, shm or tcp"};
}

ProcTransport::State::~State() { close_peers(peers); }

ProcTransport::ProcTransport(std::unique_ptr<State> state) : state_(std::move(state)) {}
ProcTransport::~ProcTransport() = default;

Result<std::unique_ptr<ProcTransport>> ProcTransport::connect(World& world, ProcLinks links) {
  auto state = std::make_unique<State>(world, links);
  Status connected = connect_peers(world, links, state->peers);
  if (!connected) return connected.error();
  return std::unique_ptr<ProcTransport>(new ProcTransport(std::move(state)));
}

std::string ProcTransport::links() const {
  const bool tcp = std::any_of(state_->peers.connections.begin(), state_->peers.connections.end(),
                               [](const Connection& c) { return c.fd >= 0; });
  return tcp ? (state_->size > 1 && state_->links != ProcLinks::Tcp ? "shm+tcp" : "tcp") : "shm";
}

// Every stream of the schedule, each receiver's FIFO layout, and this process's ends of them.
// Everything here depends only on the schedule, so every process decides the same (an error
// included) before anyone waits at the barrier.
Status ProcTransport::State::plan(const Schedule& s) {
  schedule = &s;
  element = size_of(s.shape.dtype);
  std::map<Key, std::uint64_t> per_call;
  for (int p = 0; p < s.nparticipants(); ++p) {
    for (const Step& step : s.participants[static_cast<std::size_t>(p)].steps) {
      if (step.sends()) ++per_call[Key{p, step.peer, step.channel}];
    }
  }
  std::vector<std::size_t> fifos(static_cast<std::size_t>(size), 0);
  std::map<Key, std::size_t> fifo_index;
  for (const auto& entry : per_call) {
    if (via_shm(entry.first)) fifo_index[entry.first] = fifos[static_cast<std::size_t>(host(entry.first.to))]++;
  }
  for (int r = 0; r < size; ++r) {
    const std::size_t n = fifos[static_cast<std::size_t>(r)];
    if (n * fifo_shape(n).bytes() > kSegmentBytes) {
      return Error{"schedule", "rank " + std::to_string(r) + " receives on " + std::to_string(n) +
                                   " streams; the proc transport's segment holds at most " +
                                   std::to_string(kSegmentBytes / fifo_shape(1 << 20).bytes())};
    }
  }
  outbound.clear();
  inbound.clear();
  inbound_index.clear();
  for (const auto& [key, count] : per_call) {
    const int to = host(key.to);
    const bool shm = via_shm(key);
    const FifoShape shape = fifo_shape(fifos[static_cast<std::size_t>(to)]);
    if (host(key.from) == rank) {
      Outbound o;
      o.key = key;
      o.per_call = count;
      if (shm) o.fifo = fifo_at(peers.segments[static_cast<std::size_t>(to)], fifo_index[key], shape);
      else o.connection = &peers.connections[static_cast<std::size_t>(to)];
      outbound.push_back(std::move(o));
    }
    if (to == rank) {
      Inbound in;
      in.key = key;
      in.per_call = count;
      in.tcp = !shm;
      if (shm) in.fifo = fifo_at(peers.segments[static_cast<std::size_t>(rank)], fifo_index[key], shape);
      inbound_index[key] = static_cast<int>(inbound.size());
      inbound.push_back(std::move(in));
    }
  }
  plan_hosted();
  return Ok{};
}

// The participants this process runs: their streams, and each step's link and ordinal.
void ProcTransport::State::plan_hosted() {
  std::map<Key, int> outbound_index;
  for (std::size_t i = 0; i < outbound.size(); ++i) outbound_index[outbound[i].key] = static_cast<int>(i);
  hosted.clear();
  for (int p = 0; p < schedule->nparticipants(); ++p) {
    if (host(p) != rank) continue;
    const std::vector<Step>& steps = schedule->participants[static_cast<std::size_t>(p)].steps;
    Hosted h;
    h.participant = p;
    h.links.resize(steps.size());
    std::map<int, std::vector<int>> by_stream;
    std::map<Key, std::uint64_t> sends, receives;
    for (int k = 0; k < static_cast<int>(steps.size()); ++k) {
      const Step& step = steps[static_cast<std::size_t>(k)];
      by_stream[step.stream].push_back(k);
      StepLink& link = h.links[static_cast<std::size_t>(k)];
      if (step.sends()) {
        const Key key{p, step.peer, step.channel};
        link = StepLink{outbound_index.at(key), sends[key]++};
      } else if (step.receives()) {
        const Key key{step.peer, p, step.channel};
        link = StepLink{inbound_index.at(key), receives[key]++};
      }
    }
    for (auto& entry : by_stream) h.streams.push_back(Stream{std::move(entry.second)});
    hosted.push_back(std::move(h));
  }
}

void ProcTransport::State::reset_inbound() {
  for (Inbound& in : inbound) {
    if (in.tcp) continue;
    in.fifo.control->tail.store(0, std::memory_order_relaxed);
    in.fifo.control->head.store(0, std::memory_order_relaxed);
  }
}

// Two barriers: the first makes sure no process still writes into any FIFO under the last
// case's layout (a run that ended in an error leaves its peers sending until their deadline);
// the second that every inbound FIFO is empty before anyone sends under the new one. TCP frames
// of an earlier case still on the wire carry an older epoch and are dropped when read.
Status ProcTransport::begin(const Schedule& schedule, const ProcRunOptions& options) {
  State& s = *state_;
  s.options = options;
  s.call = 0;
  s.lazy = 0;
  s.failure.clear();
  ++s.epoch;
  Status planned = s.plan(schedule);
  if (!planned) return planned;
  s.world.barrier();
  s.reset_inbound();
  s.world.barrier();
  return Ok{};
}

// Runs the stream's steps until one has to wait; true when anything moved.
bool ProcTransport::State::advance(Hosted& h, Stream& stream) {
  const std::vector<Step>& steps = schedule->participants[static_cast<std::size_t>(h.participant)].steps;
  bool progressed = false;
  while (stream.next < stream.steps.size() && failure.empty()) {
    const int k = stream.steps[stream.next];
    const Step& step = steps[static_cast<std::size_t>(k)];
    for (int earlier : step.after) {
      if (h.done[static_cast<std::size_t>(earlier)] == 0) return progressed;
    }
    const StepLink& link = h.links[static_cast<std::size_t>(k)];
    const std::size_t bytes = step.to.count * element;
    switch (step.kind) {
      case StepKind::Send: post(h, step, link); break;
      case StepKind::Copy:
        protect(address(h, step.to), bytes);
        if (bytes > 0) std::memmove(address(h, step.to), address(h, step.from), bytes);
        break;
      case StepKind::Reduce:
        protect(address(h, step.to), bytes);
        if (bytes > 0) reduce(address(h, step.to), address(h, step.from), address(h, step.to), bytes);
        break;
      default: {
        const Taken taken = receive(h, step, link, stream);
        if (taken != Taken::All) return progressed || taken == Taken::Some;
      }
    }
    h.done[static_cast<std::size_t>(k)] = 1;
    --h.remaining;
    ++stream.next;
    stream.received = 0;
    stream.started = false;
    progressed = true;
  }
  return progressed;
}

// What this process waits for at the deadline: a receive that has no message, preferably.
std::string ProcTransport::State::stuck(double deadline) const {
  const std::string after = " after " + seconds_text(deadline) + " s";
  std::string first;
  for (const Hosted& h : hosted) {
    const std::vector<Step>& steps = schedule->participants[static_cast<std::size_t>(h.participant)].steps;
    for (const Stream& stream : h.streams) {
      if (stream.next == stream.steps.size()) continue;
      const int k = stream.steps[stream.next];
      const Step& step = steps[static_cast<std::size_t>(k)];
      const bool ready = std::all_of(step.after.begin(), step.after.end(),
                                     [&](int e) { return h.done[static_cast<std::size_t>(e)] != 0; });
      if (ready && step.receives()) {
        return participant_name(h.participant) + " step " + std::to_string(k) + " (" + std::string(name(step.kind)) +
               " from " + participant_name(step.peer) + ", channel " + std::to_string(step.channel) + "): no message" +
               after + " (call " + std::to_string(call) + ")";
      }
      if (first.empty()) first = describe(*schedule, h.participant, k) + ": not done" + after;
    }
  }
  return first.empty() ? "rank " + std::to_string(rank) + ": stuck" + after : first;
}

Status ProcTransport::run_call(std::span<const ProcBuffers> buffers) {
  State& s = *state_;
  for (Hosted& h : s.hosted) {
    const std::size_t steps = s.schedule->participants[static_cast<std::size_t>(h.participant)].steps.size();
    h.buffers = buffers[static_cast<std::size_t>(h.participant)];
    h.done.assign(steps, 0);
    h.remaining = steps;
    for (Stream& stream : h.streams) stream = Stream{std::move(stream.steps)};
  }
  auto unfinished = [&] {
    return std::any_of(s.hosted.begin(), s.hosted.end(), [](const Hosted& h) { return h.remaining > 0; });
  };
  while (unfinished()) {
    bool progressed = false;
    for (Hosted& h : s.hosted) {
      for (Stream& stream : h.streams) progressed |= s.advance(h, stream);
    }
    progressed |= s.pump();
    if (!s.failure.empty()) return Error{"proc", s.failure};
    if (progressed) continue;
    if (s.now() > s.options.deadline) return Error{"proc", s.stuck(s.options.deadline)};
    sched_yield();  // ranks may outnumber cores: let the peer we wait for run
  }
  s.settle();
  ++s.call;
  return Ok{};
}

Status ProcTransport::finish() {
  State& s = *state_;
  s.settle();
  while (!s.outbound_empty()) {
    const bool progressed = s.pump();
    if (!s.failure.empty()) return Error{"proc", s.failure};
    if (progressed) continue;
    if (s.now() > s.options.deadline) {
      for (const Outbound& o : s.outbound) {
        if (o.queue.empty()) continue;
        return Error{"proc", s.participant_name(o.key.from) + ": messages to " + s.participant_name(o.key.to) +
                                 " on channel " + std::to_string(o.key.channel) + " not taken after " +
                                 seconds_text(s.options.deadline) + " s"};
      }
      return Error{"proc", "rank " + std::to_string(s.rank) + ": socket data not sent after " +
                               seconds_text(s.options.deadline) + " s"};
    }
    sched_yield();
  }
  return Ok{};
}

}  // namespace collcheck
