// The simulated fabric's timing: a message books every link of its route from when the last of
// them is free and arrives after the route's latency plus its bytes over the narrowest link.
// Each link counts the bytes it carried and the time it was busy (the run's link loads).
#include <algorithm>
#include <limits>

#include "impls/sim/simulation.h"

namespace collcheck::sim {

// Works out the stream's route once, with what crossing it idle costs: the latencies summed in
// route order and the narrowest bandwidth, as transfer_time() does.
void Simulation::set_up_route(StreamLink& link) {
  const auto [from, to, channel] = link.key;
  const int source = vertex_[static_cast<std::size_t>(from)], target = vertex_[static_cast<std::size_t>(to)];
  if (source == target) return;
  const std::vector<int>& route = topology_.route(source, target);
  if (route.empty()) return;
  link.route = route;
  link.hop_count = static_cast<std::uint16_t>(std::min<std::size_t>(route.size(), 0xFFFF));  // more: long
  if (route.size() <= StreamLink::kNearHops) std::copy(route.begin(), route.end(), link.near_hops);
  link.latency = 0;
  link.narrowest = std::numeric_limits<double>::infinity();
  for (int id : route) {
    const Link& hop = topology_.links[static_cast<std::size_t>(id)];
    link.latency += hop.latency;
    link.narrowest = std::min(link.narrowest, hop.bandwidth);
  }
}

// Reserves the route's links from now and returns the arrival time.
double Simulation::transmit(StreamLink& link, std::size_t bytes) {
  if (link.hop_count == 0) return now_;
  double begin = now_;
  const std::span<const int> hops = link.hops();
  for (int id : hops) begin = std::max(begin, link_state_[static_cast<std::size_t>(id)].free);
  for (int id : hops) {
    LinkState& state = link_state_[static_cast<std::size_t>(id)];
    const double busy = static_cast<double>(bytes) / state.bandwidth;
    state.free = begin + busy;
    state.busy += busy;
    state.bytes += bytes;
  }
  return begin + (link.latency + static_cast<double>(bytes) / link.narrowest);
}

double Simulation::latency(int from, int to) const { return travel_time(from, to, 0); }

double Simulation::travel_time(int from, int to, std::size_t bytes) const {
  const int source = vertex_[static_cast<std::size_t>(from)], target = vertex_[static_cast<std::size_t>(to)];
  return source == target ? 0 : transfer_time(topology_, topology_.route(source, target), bytes);
}

double Simulation::compute_time(std::size_t elements) const {
  return topology_.copy_bandwidth > 0 ? static_cast<double>(elements * element_) / topology_.copy_bandwidth : 0;
}

void Simulation::collect_link_loads() {
  result_.link_bytes.reserve(link_state_.size());
  result_.link_busy.reserve(link_state_.size());
  for (const LinkState& state : link_state_) {
    result_.link_bytes.push_back(state.bytes);
    result_.link_busy.push_back(state.busy);
  }
}

}  // namespace collcheck::sim
