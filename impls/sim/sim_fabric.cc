// The simulated fabric's timing: a message books every link of its route from when the last of
// them is free and arrives after the route's latency plus its bytes over the narrowest link.
#include <algorithm>

#include "impls/sim/simulation.h"

namespace collcheck::sim {

// Reserves the route's links from now and returns the arrival time.
double Simulation::transmit(int from, int to, std::size_t bytes) {
  if (from == to) return now_;
  const std::vector<int>& route = topology_.route(from, to);
  double begin = now_;
  for (int link : route) begin = std::max(begin, link_free_[static_cast<std::size_t>(link)]);
  for (int link : route) {
    const double bandwidth = topology_.links[static_cast<std::size_t>(link)].bandwidth;
    link_free_[static_cast<std::size_t>(link)] = begin + static_cast<double>(bytes) / bandwidth;
  }
  return begin + transfer_time(topology_, route, bytes);
}

double Simulation::latency(int from, int to) const { return travel_time(from, to, 0); }

double Simulation::travel_time(int from, int to, std::size_t bytes) const {
  const int source = vertex_[static_cast<std::size_t>(from)], target = vertex_[static_cast<std::size_t>(to)];
  return source == target ? 0 : transfer_time(topology_, topology_.route(source, target), bytes);
}

double Simulation::compute_time(std::size_t elements) const {
  return topology_.copy_bandwidth > 0 ? static_cast<double>(elements * element_) / topology_.copy_bandwidth : 0;
}

}  // namespace collcheck::sim
