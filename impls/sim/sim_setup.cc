// The `sim` executor's engine set up before its run (simulation.h says how the engine works):
// participants placed on the topology, their buffers filled, every participant's steps read once
// to count them per stream and per stream link and, made on demand, to check them, and the stream
// links found.
#include <algorithm>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "impls/sim/simulation.h"
#include "reference/inputs.h"

namespace collcheck::sim {

bool Simulation::place_participants() {
  if (topology_.nranks() < schedule_.nranks()) {
    result_.error = "topology " + topology_.name + " has " + std::to_string(topology_.nranks()) +
                    " GPUs; the case needs " + std::to_string(schedule_.nranks()) + " ranks";
    return false;
  }
  const std::vector<int> switches = topology_.aggregating_switches();
  for (int p = 0; p < schedule_.nparticipants(); ++p) {
    const int vertex = participant_vertex(topology_, switches, schedule_.nranks(), p);
    if (vertex < 0) {
      result_.error =
          "topology " + topology_.name + " has no aggregating switch for " + schedule_.algorithm + "'s switch nodes";
      return false;
    }
    vertex_.push_back(vertex);
  }
  link_state_.assign(topology_.links.size(), LinkState{});
  for (std::size_t id = 0; id < link_state_.size(); ++id) link_state_[id].bandwidth = topology_.links[id].bandwidth;
  return true;
}

bool Simulation::set_up_participants() {
  const auto n = static_cast<std::size_t>(schedule_.nparticipants());
  input_.resize(n);
  output_.resize(n);
  scratch_.resize(n);
  participants_.assign(n, ParticipantState{});
  peer_links_found_.resize(n);
  result_.earlier_outputs.assign(static_cast<std::size_t>(std::max(options_.calls, 1) - 1),
                                 std::vector<std::vector<std::byte>>(static_cast<std::size_t>(schedule_.nranks())));
  done_.resize(n);
  const InputGenerator inputs(schedule_.shape);
  for (int p = 0; p < schedule_.nparticipants(); ++p) {
    const auto q = static_cast<std::size_t>(p);
    participants_[q].first_slot = static_cast<std::uint32_t>(streams_.size());
    if (!set_up_streams(p)) return false;
    if (q % 256 == 255) report_progress(q + 1);
    participants_[q].end_slot = static_cast<std::uint32_t>(streams_.size());
    participants_[q].waits = !schedule_.participants[q].waits.empty();
    if (participants_[q].waits) done_[q].assign(participants_[q].step_count, false);
    if (!options_.numeric) continue;
    allocate(scratch_[q], schedule_.buffer_size(p, BufferKind::Scratch));
    if (schedule_.participants[q].is_switch) continue;
    allocate(output_[q], schedule_.buffer_size(p, BufferKind::Output));
    const bool input_stored =
        !schedule_.shape.in_place || in_place_alias(schedule_.shape, p).inside == BufferKind::Output;
    // An input buffer of its own is written whole at once (no pass to clear it first); in place,
    // the input lies inside the output, which starts zeroed.
    if (input_stored) {
      allocate(input_[q], schedule_.buffer_size(p, BufferKind::Input), GuardedBuffer::Start::Overwritten);
    }
    const std::size_t count = schedule_.buffer_size(p, BufferKind::Input);
    std::byte* input = at(p, BufferKind::Input, 0);
    if (options_.inputs == nullptr) {
      inputs.fill(p, 0, {input, count * element_});
    } else {
      const std::vector<std::byte>& given = options_.inputs->at(q);
      const std::size_t copied = std::min(given.size(), count * element_);
      std::copy_n(given.begin(), copied, input);
      std::fill_n(input + copied, count * element_ - copied, std::byte{0});  // what was not given
    }
  }
  for (std::size_t q = 0; q < n; ++q) {
    std::vector<PeerLink>& found = peer_links_found_[q];
    std::sort(found.begin(), found.end());
    ParticipantState& state = participants_[q];
    state.first_peer_link = static_cast<std::uint32_t>(peer_links_.size());
    if (found.size() <= std::size(state.near_peers)) {
      std::copy(found.begin(), found.end(), state.near_peers);
      state.near_peer_count = static_cast<std::uint8_t>(found.size());
    } else {
      peer_links_.insert(peer_links_.end(), found.begin(), found.end());
    }
    state.end_peer_link = static_cast<std::uint32_t>(peer_links_.size());
    found = {};
  }
  peer_links_found_ = {};
  for (int p = 0; p < schedule_.nparticipants(); ++p) {
    for (Stream& stream : streams_of(static_cast<std::size_t>(p))) settle_link(p, stream);
  }
  link_index_ = {};
  timers_ = TimerHeap<StreamTimerSlots>(StreamTimerSlots{&streams_});
  timer_generations_.assign(streams_.size(), 0);
  return true;
}

namespace {

// A participant's steps counted as they are read, a batch at a time: per stream, the count of the
// stream counted last kept at hand (most participants have one); its messages per (peer, channel,
// direction) in a short list, the two counted last tried first (a ring's steps alternate between
// two), each entry's stream link found when the entry is made, so that links keep the order their
// first messages were read in. Within a batch the counts go to locals and are added to the lists
// once (a store per step into the list made every next step wait for it: 44 % of a 16,384-rank
// ring's set-up).
class StepTally {
 public:
  struct Messages {
    int peer = 0;
    int channel = 0;
    bool sends = false;
    std::uint32_t link = kNoLink;
    std::uint64_t count = 0;
  };

  template <typename FindLink>
  void count(std::span<const Step> batch, FindLink&& find_link) {
    std::size_t recent[2] = {recent_[0], recent_[1]};
    std::uint64_t pending[2] = {0, 0};  // counted for recent[0] and recent[1], not yet added
    std::uint64_t in_stream = 0;        // likewise for the stream counted last
    for (const Step& step : batch) {
      if (counted_ == nullptr || step.stream != counted_stream_) {
        if (counted_ != nullptr) *counted_ += in_stream;
        in_stream = 0;
        counted_stream_ = step.stream;
        counted_ = &per_stream_[step.stream];  // a map's elements stay where they are
      }
      ++in_stream;
      if (!step.sends() && !step.receives()) continue;
      if (!same(messages_[recent[0]], step)) {
        if (same(messages_[recent[1]], step)) {
          std::swap(recent[0], recent[1]);
          std::swap(pending[0], pending[1]);
        } else {
          messages_[recent[1]].count += pending[1];
          recent[1] = recent[0];
          pending[1] = pending[0];
          recent[0] = entry(step, find_link);
          pending[0] = 0;
        }
      }
      ++pending[0];
    }
    if (counted_ != nullptr) *counted_ += in_stream;
    messages_[recent[0]].count += pending[0];
    messages_[recent[1]].count += pending[1];
    recent_[0] = recent[0];
    recent_[1] = recent[1];
  }

  const std::map<int, std::size_t>& per_stream() const { return per_stream_; }
  std::span<const Messages> messages() const { return std::span(messages_).subspan(1); }

 private:
  static bool same(const Messages& messages, const Step& step) {
    return messages.peer == step.peer && messages.channel == step.channel && messages.sends == step.sends();
  }
  template <typename FindLink>
  std::size_t entry(const Step& step, FindLink&& find_link) {
    std::size_t found = 1;
    while (found < messages_.size() && !same(messages_[found], step)) ++found;
    if (found == messages_.size()) {
      messages_.push_back(Messages{step.peer, step.channel, step.sends(), find_link(step), 0});
    }
    return found;
  }

  std::map<int, std::size_t> per_stream_;
  int counted_stream_ = 0;
  std::size_t* counted_ = nullptr;
  std::vector<Messages> messages_{Messages{-1, -1, false, kNoLink, 0}};  // first: one that no step matches
  std::size_t recent_[2] = {0, 0};
};

}  // namespace

// Reads p's steps once: checks each on its own when made on demand (a stored schedule was
// checked whole), counts them per stream and counts each send and receive on its stream link.
// A billion steps pass through here at 16,384 ranks before the run, so they are read a batch at a
// time (made ones without a resume each), checked a batch at a time, and counted where they are
// at hand (StepTally), added to the links at the end.
bool Simulation::set_up_streams(int p) {
  std::map<int, std::vector<int>> listed;
  StepTally tally;
  const auto find_link = [&](const Step& step) {
    return link_of(step.sends() ? StreamKey{p, step.peer, step.channel} : StreamKey{step.peer, p, step.channel});
  };
  const BufferSizes sizes = buffer_sizes(schedule_, p);
  int index = 0;
  const bool on_demand = schedule_.on_demand();  // read once: the counts' stores could alias it
  StepReader steps = schedule_.steps_of(p);
  for (std::span<const Step> batch = steps.next_batch(); !batch.empty(); batch = steps.next_batch()) {
    if (on_demand) {
      Status valid = validate_steps(schedule_, p, index, batch, sizes, options_.guard);
      if (!valid) {
        result_.error = valid.error().message;
        return false;
      }
    }
    if (!on_demand) {
      for (const Step& step : batch) listed[step.stream].push_back(index++);
    } else {
      index += static_cast<int>(batch.size());
    }
    tally.count(batch, find_link);
  }
  // A peer link keeps its direction in the link number's top bit (PeerLink): link numbers stay
  // below 2^31 (the memory estimate refuses runs far smaller; this holds if it ever does not).
  if (links_.size() > PeerLink::kSends) {
    result_.error = "the schedule has " + std::to_string(links_.size()) +
                    " stream links; the simulator numbers at most 2^31 (" + std::to_string(PeerLink::kSends) + ")";
    return false;
  }
  for (const StepTally::Messages& messages : tally.messages()) {
    StreamLink& link = links_[messages.link];
    (messages.sends ? link.outbox.per_call : link.inbox.per_call) += messages.count;
  }
  participants_[static_cast<std::size_t>(p)].step_count = static_cast<std::size_t>(index);
  add_streams(p, tally.per_stream(), listed);
  return true;
}

// Each stream of p gets a cursor of its own, in order of stream number; a participant with one
// stream (most) reads all its steps through one, and a stored participant with several keeps the
// list of each stream's steps.
void Simulation::add_streams(int p, const std::map<int, std::size_t>& per_stream,
                             std::map<int, std::vector<int>>& listed) {
  const auto q = static_cast<std::size_t>(p);
  const bool one_stream = per_stream.size() == 1;
  for (const auto& [stream, count] : per_stream) {
    if (schedule_.on_demand()) {
      streams_.push_back(Stream{StepCursor(schedule_, p, one_stream ? StepCursor::kEveryStream : stream, count)});
    } else {
      streams_.push_back(Stream{StepCursor(schedule_.participants[q].steps,
                                           one_stream ? std::vector<int>{} : std::move(listed[stream]), count)});
    }
  }
}

// Every stream link has as many receives as sends per call: a schedule made on demand was not
// checked for it before (a stored one was, by validate), and a message no receive takes, or a
// receive no message comes for, would otherwise show only as a hang.
bool Simulation::check_messages_match() {
  for (const StreamLink& link : links_) {
    if (link.outbox.per_call == link.inbox.per_call) continue;
    const auto [from, to, channel] = link.key;
    result_.error = participant_name(schedule_, from) + " -> " + participant_name(schedule_, to) + " on channel " +
                    std::to_string(channel) + ": " + std::to_string(link.outbox.per_call) + " sends but " +
                    std::to_string(link.inbox.per_call) + " receives";
    return false;
  }
  return true;
}

}  // namespace collcheck::sim
