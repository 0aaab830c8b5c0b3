// The simulated machine: GPUs, NICs and switches joined by typed links with latency and
// bandwidth, presets named after real machines, and a small text format for your own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "reference/result.h"

namespace collcheck {

// The most GPUs a preset builds: production clusters and beyond (Llama 3 trained on 16,384).
inline constexpr int kMaxTopologyGpus = 65536;

enum class LinkKind { NVLink, PCIe, InfiniBand, Ethernet };
std::string_view name(LinkKind);

enum class VertexKind { Gpu, Nic, Switch };

struct Vertex {
  VertexKind kind = VertexKind::Gpu;
  std::string label;        // "gpu3", "nic3", "nvswitch0", "leaf1", "spine0"
  bool aggregates = false;  // a switch that can reduce in the network (SHARP): hosts innet switches
};

// One direction of a cable: links are directed, and a full-duplex cable is two links.
struct Link {
  int from = 0;  // vertex ids
  int to = 0;
  LinkKind kind = LinkKind::NVLink;
  double latency = 0;    // seconds
  double bandwidth = 0;  // bytes per second
};

struct Topology {
  std::string name;
  std::vector<Vertex> vertices;
  std::vector<Link> links;
  std::vector<int> gpus;      // vertex of rank r's GPU is gpus[r]; ranks in node-major order
  double copy_bandwidth = 0;  // bytes per second of a local copy or reduction on a GPU (0: free)

  int nranks() const { return static_cast<int>(gpus.size()); }
  // The aggregating switches, in vertex order (where `innet` places its switch participants).
  std::vector<int> aggregating_switches() const;
  // The links a message from vertex a to vertex b crosses, in order: a shortest path by hop
  // count, ties broken deterministically (lowest vertex id), computed once per pair. Empty
  // when a == b or b cannot be reached from a. A source asked for many routes keeps its
  // shortest-path tree while they fit a bounded cache: ask source by source on large machines.
  const std::vector<int>& route(int from, int to) const;

  // What route() has worked out, filled on demand: not thread-safe, and to be reset with
  // `route_cache = {}` after editing vertices or links.
  struct RouteCache {
    std::vector<int> first_out, out_links;  // vertex v's out-links: out_links[first_out[v] .. first_out[v+1])
    std::vector<int> out_targets;           // where each of out_links leads
    std::vector<int> searches;              // per source, the searches run from it
    std::vector<std::vector<int>> trees;    // per source asked often, the link into each vertex
    std::unordered_map<std::uint64_t, std::vector<int>> routes;  // per pair asked, its route
    std::size_t tree_entries = 0;                                // over every tree kept
    bool wide = false;  // a search stopping at its target crossed most of the machine: trees at once
  };
  mutable RouteCache route_cache;
};

// Presets, each for a given number of ranks:
//   ring:N            N GPUs on a uniform unidirectional-and-back ring of equal links
//                     (1 us, 25 GB/s): the alpha-beta model's machine.
//   dgx-h100          8 GPUs, each with 18 NVLink4 links into NVSwitch (modelled as one
//                     450 GB/s link per direction to one NVSwitch vertex, ~0.7 us), PCIe
//                     Gen5 to one 400 Gb/s InfiniBand NIC per GPU.
//   ib-fat-tree:NODES NODES × dgx-h100 nodes on InfiniBand NDR (400 Gb/s, ~0.6 us per hop),
//                     rail-optimized: NIC k of every node on leaf switch k, every leaf on
//                     every spine (one spine per 4 nodes), all switches aggregating for innet.
//   rail-fat-tree:NODES NODES × dgx-h100 nodes as large clusters cable them: scalable units of 32
//                     nodes with a leaf per rail each, a plane of spines per rail joining that
//                     rail's leaves (ceil(units / 2) spines a rail), rails meeting only over NVLink.
//   dragonfly:GROUPS  GROUPS groups of 8 routers joined all to all, 8 GPUs on each router, one
//                     global cable between every pair of groups; minimal routes.
Result<Topology> make_topology(std::string_view preset);
std::string topology_presets();  // for error messages and `collcheck list`

// The text format (see docs/simulator.md):
//   # comment
//   name my-box
//   copy-bandwidth 1.5e12
//   gpu g0                      (ranks in the order gpus are declared)
//   nic n0
//   switch s0 [aggregates]
//   link g0 s0 nvlink 0.7us 450GB/s [duplex]
// Errors name the line number and the field.
Result<Topology> parse_topology(std::string_view text);
Result<Topology> load_topology(const std::string& path_or_preset);  // a preset name or a file

// Time for `bytes` to cross `route` if nothing else used its links: the sum of latencies
// plus bytes over the narrowest bandwidth (cut-through).
double transfer_time(const Topology&, const std::vector<int>& route, std::size_t bytes);

}  // namespace collcheck
