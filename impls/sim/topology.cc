// The simulated machine as a graph: link kind names, shortest routes cached per source and
// pair, the cut-through transfer time, and the presets ring:N, dgx-h100, ib-fat-tree:NODES,
// rail-fat-tree:NODES and dragonfly:GROUPS.
#include "impls/sim/topology.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>
#include <utility>

#include "reference/case.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

// Published figures, rounded; docs/simulator.md says where each comes from.
constexpr double kRingLatency = 1e-6;
constexpr double kRingBandwidth = 25e9;
constexpr double kNvlinkLatency = 0.7e-6;
constexpr double kNvlinkBandwidth = 450e9;  // 18 NVLink4 links × 25 GB/s, each direction
constexpr double kPcieLatency = 0.5e-6;
constexpr double kPcieBandwidth = 64e9;        // PCIe Gen5 x16
constexpr double kInfinibandLatency = 0.6e-6;  // one switch hop, cable included
constexpr double kInfinibandBandwidth = 50e9;  // NDR 400 Gb/s
constexpr double kHbm3Bandwidth = 3e12;
constexpr double kGlobalLatency = 1e-6;  // dragonfly: a global cable between groups, tens of metres
constexpr int kGpusPerNode = 8;
constexpr int kNodesPerSpine = 4;
constexpr int kMaxNodes = kMaxTopologyGpus / kGpusPerNode;
constexpr int kNodesPerUnit = 32;    // rail-fat-tree: nodes of a scalable unit, one leaf per rail each
constexpr int kRoutersPerGroup = 8;  // dragonfly: routers of a group, joined all to all
constexpr int kGpusPerRouter = 8;    // dragonfly: GPUs on each router
constexpr int kMaxGroups = kMaxTopologyGpus / (kRoutersPerGroup * kGpusPerRouter);
constexpr int kSearchesBeforeTree = 2;  // searches from one source that stop at their target
// Shortest-path trees kept, in vertex entries over every source (4 bytes each): reaching it drops
// them all, so that memory stays bounded on machines of tens of thousands of vertices.
constexpr std::size_t kMostTreeEntries = std::size_t{64} << 20;

// ---- building presets ----

int add_vertex(Topology& t, VertexKind kind, std::string label, bool aggregates = false) {
  t.vertices.push_back(Vertex{kind, std::move(label), aggregates});
  return static_cast<int>(t.vertices.size()) - 1;
}

// A full-duplex cable: two links, a to b then b to a.
void add_cable(Topology& t, int a, int b, LinkKind kind, double latency, double bandwidth) {
  t.links.push_back(Link{a, b, kind, latency, bandwidth});
  t.links.push_back(Link{b, a, kind, latency, bandwidth});
}

std::vector<int> add_switches(Topology& t, const std::string& label, int count) {
  std::vector<int> ids;
  ids.reserve(static_cast<std::size_t>(std::max(count, 0)));
  for (int i = 0; i < count; ++i) ids.push_back(add_vertex(t, VertexKind::Switch, label + std::to_string(i), true));
  return ids;
}

// The machine's GPUs, gpu0 .. gpu(count - 1), first among its vertices.
void add_gpus(Topology& t, int count) {
  for (int r = 0; r < count; ++r) t.gpus.push_back(add_vertex(t, VertexKind::Gpu, "gpu" + std::to_string(r)));
}

// What every DGX node has: per GPU a NIC behind PCIe, cabled to the leaf `leaf_of(rank)` (none
// where it is -1), then per node an NVSwitch joining its GPUs. Vertices: the NICs, then the NVSwitches.
void add_nics_and_nvswitches(Topology& t, int nodes, const std::function<int(int)>& leaf_of) {
  const int ranks = nodes * kGpusPerNode;
  for (int r = 0; r < ranks; ++r) {
    const int nic = add_vertex(t, VertexKind::Nic, "nic" + std::to_string(r));
    add_cable(t, t.gpus[static_cast<std::size_t>(r)], nic, LinkKind::PCIe, kPcieLatency, kPcieBandwidth);
    const int leaf = leaf_of(r);
    if (leaf >= 0) add_cable(t, nic, leaf, LinkKind::InfiniBand, kInfinibandLatency, kInfinibandBandwidth);
  }
  const std::vector<int> nvswitches = add_switches(t, "nvswitch", nodes);
  for (int r = 0; r < ranks; ++r) {
    add_cable(t, t.gpus[static_cast<std::size_t>(r)], nvswitches[static_cast<std::size_t>(r / kGpusPerNode)],
              LinkKind::NVLink, kNvlinkLatency, kNvlinkBandwidth);
  }
}

Topology ring(int n) {
  Topology t;
  t.name = "ring:" + std::to_string(n);
  add_gpus(t, n);
  // A ring of two is one cable between its GPUs, not two parallel ones; a ring of one has none.
  const int cables = n <= 2 ? n - 1 : n;
  for (int r = 0; r < cables; ++r) {
    add_cable(t, t.gpus[r], t.gpus[(r + 1) % n], LinkKind::NVLink, kRingLatency, kRingBandwidth);
  }
  return t;
}

// `nodes` DGX H100 nodes, on an InfiniBand fat tree when `fabric`. Vertex order is GPUs (rank
// order), spines, leaves, NICs, NVSwitches. The lowest-id tie-break then takes a spine before a
// detour through a peer GPU (gpu, nic, leaf, spine, leaf, nic, gpu rather than PXN-style paths
// of the same length), and the first aggregating switch is spine0, the top of the tree.
Topology dgx_nodes(std::string name, int nodes, bool fabric) {
  Topology t;
  t.name = std::move(name);
  t.copy_bandwidth = kHbm3Bandwidth;
  const int ranks = nodes * kGpusPerNode;
  add_gpus(t, ranks);
  const int spine_count = fabric ? (nodes + kNodesPerSpine - 1) / kNodesPerSpine : 0;
  const std::vector<int> spines = add_switches(t, "spine", spine_count);
  const std::vector<int> leaves = add_switches(t, "leaf", fabric ? kGpusPerNode : 0);
  add_nics_and_nvswitches(t, nodes, [&](int rank) { return fabric ? leaves[rank % kGpusPerNode] : -1; });
  for (int leaf : leaves) {
    for (int spine : spines) add_cable(t, leaf, spine, LinkKind::InfiniBand, kInfinibandLatency, kInfinibandBandwidth);
  }
  return t;
}

// `nodes` DGX H100 nodes on a rail-optimised fat tree as large clusters cable it: scalable units of
// 32 nodes, in each a leaf per rail (NIC k of its nodes on leaf k of the unit), and per rail a plane
// of spines joining that rail's leaves across units (half as many spines as units: every leaf has
// as many links up as down). Rails meet only over NVLink inside a node. Vertex order: GPUs, spines
// (rail-major), leaves (unit-major), NICs, NVSwitches.
Topology rail_fat_tree(int nodes) {
  Topology t;
  t.name = "rail-fat-tree:" + std::to_string(nodes);
  t.copy_bandwidth = kHbm3Bandwidth;
  const int ranks = nodes * kGpusPerNode;
  const int units = (nodes + kNodesPerUnit - 1) / kNodesPerUnit;
  const int spines_per_rail = (units + 1) / 2;
  add_gpus(t, ranks);
  std::vector<std::vector<int>> spines(kGpusPerNode);
  for (int rail = 0; rail < kGpusPerNode; ++rail) {
    spines[static_cast<std::size_t>(rail)] =
        add_switches(t, "spine" + std::to_string(rail) + ".", units > 1 ? spines_per_rail : 0);
  }
  std::vector<int> leaves;  // leaf of unit u and rail k: leaves[u * 8 + k]
  for (int unit = 0; unit < units; ++unit) {
    const std::vector<int> unit_leaves = add_switches(t, "leaf" + std::to_string(unit) + ".", kGpusPerNode);
    leaves.insert(leaves.end(), unit_leaves.begin(), unit_leaves.end());
  }
  add_nics_and_nvswitches(t, nodes, [&](int rank) {
    const int unit = rank / kGpusPerNode / kNodesPerUnit;
    return leaves[static_cast<std::size_t>(unit * kGpusPerNode + rank % kGpusPerNode)];
  });
  for (int unit = 0; unit < units; ++unit) {
    for (int rail = 0; rail < kGpusPerNode; ++rail) {
      for (int spine : spines[static_cast<std::size_t>(rail)]) {
        const int leaf = unit * kGpusPerNode + rail;
        add_cable(t, leaves[static_cast<std::size_t>(leaf)], spine, LinkKind::InfiniBand, kInfinibandLatency,
                  kInfinibandBandwidth);
      }
    }
  }
  return t;
}

// A dragonfly of `groups` groups: in each, 8 routers joined all to all, and 8 GPUs on each router;
// every pair of groups is joined by one global cable, group g's cable to group h (h != g) on its
// router (h - g - 1 mod groups) mod 8, so each router has ceil((groups - 1) / 8) global ports.
// Routes are minimal (local, global, local): no Valiant detours. Every router aggregates.
// Vertex order: GPUs (group-major, then router), routers.
Topology dragonfly(int groups) {
  Topology t;
  t.name = "dragonfly:" + std::to_string(groups);
  t.copy_bandwidth = kHbm3Bandwidth;
  const int per_group = kRoutersPerGroup * kGpusPerRouter;
  add_gpus(t, groups * per_group);
  std::vector<int> routers;  // router i of group g: routers[g * 8 + i]
  for (int group = 0; group < groups; ++group) {
    const std::vector<int> ids = add_switches(t, "router" + std::to_string(group) + ".", kRoutersPerGroup);
    routers.insert(routers.end(), ids.begin(), ids.end());
  }
  const auto router = [&](int group, int index) {
    const int id = group * kRoutersPerGroup + index;
    return routers[static_cast<std::size_t>(id)];
  };
  for (int r = 0; r < groups * per_group; ++r) {
    add_cable(t, t.gpus[static_cast<std::size_t>(r)], router(r / per_group, r % per_group / kGpusPerRouter),
              LinkKind::InfiniBand, kInfinibandLatency, kInfinibandBandwidth);
  }
  for (int group = 0; group < groups; ++group) {
    for (int a = 0; a < kRoutersPerGroup; ++a) {
      for (int b = a + 1; b < kRoutersPerGroup; ++b) {
        add_cable(t, router(group, a), router(group, b), LinkKind::InfiniBand, kInfinibandLatency,
                  kInfinibandBandwidth);
      }
    }
  }
  for (int group = 0; group < groups; ++group) {
    for (int other = group + 1; other < groups; ++other) {
      const int here = (other - group - 1 + groups) % groups % kRoutersPerGroup;
      const int there = (group - other - 1 + groups) % groups % kRoutersPerGroup;
      add_cable(t, router(group, here), router(other, there), LinkKind::InfiniBand, kGlobalLatency,
                kInfinibandBandwidth);
    }
  }
  return t;
}

Error preset_error(std::string_view preset, const std::string& problem) {
  return Error{"topology", quoted_input(preset) + ": " + problem + "; presets: " + topology_presets()};
}

// The count after "family:", which must be 1..max.
Result<int> preset_count(std::string_view preset, std::string_view text, std::string_view what, int max) {
  const std::string allowed = std::string(what) + " must be 1.." + std::to_string(max);
  if (text.empty()) return preset_error(preset, std::string(what) + " is missing: " + allowed);
  Result<std::uint64_t> value = parse_integer(what, text, CountRange{1, static_cast<std::uint64_t>(max), false, {}});
  if (!value) return preset_error(preset, allowed);
  return static_cast<int>(*value);
}

// ---- routing ----

// Lists each vertex's out-links in link-id order, and makes room for trees per source.
void prepare(const Topology& t, Topology::RouteCache& cache) {
  cache = {};
  cache.first_out.assign(t.vertices.size() + 1, 0);
  for (const Link& link : t.links) ++cache.first_out[static_cast<std::size_t>(link.from) + 1];
  for (std::size_t v = 0; v < t.vertices.size(); ++v) cache.first_out[v + 1] += cache.first_out[v];
  cache.out_links.resize(t.links.size());
  cache.out_targets.resize(t.links.size());
  std::vector<int> next(cache.first_out.begin(), cache.first_out.end() - 1);
  for (std::size_t l = 0; l < t.links.size(); ++l) {
    const auto from = static_cast<std::size_t>(t.links[l].from);
    const auto at = static_cast<std::size_t>(next[from]++);
    cache.out_links[at] = static_cast<int>(l);
    cache.out_targets[at] = t.links[l].to;
  }
  cache.searches.assign(t.vertices.size(), 0);
  cache.trees.assign(t.vertices.size(), {});
}

// Breadth-first search from `source`, one hop level at a time with each level in vertex-id
// order, so a vertex's predecessor is the lowest-id vertex one hop nearer that links to it (by
// its lowest-id link). Stops after the level that reaches `target`, or goes on to every vertex
// when `target` is -1. Returns the link into each vertex found; -1 at the source and elsewhere.
std::vector<int> search(const Topology& t, const Topology::RouteCache& cache, int source, int target,
                        std::size_t* reached = nullptr) {
  const std::size_t count = t.vertices.size();
  std::vector<int> into(count, -1);
  std::vector<char> seen(count, 0);  // 1: reached; 2: reached in the level being found
  seen[static_cast<std::size_t>(source)] = 1;
  std::vector<int> level{source};
  std::vector<int> next;
  std::size_t found = 1;
  while (!level.empty() && (target < 0 || !seen[static_cast<std::size_t>(target)])) {
    for (int u : level) {
      const auto first = static_cast<std::size_t>(cache.first_out[static_cast<std::size_t>(u)]);
      const auto last = static_cast<std::size_t>(cache.first_out[static_cast<std::size_t>(u) + 1]);
      for (std::size_t i = first; i < last; ++i) {
        const auto v = static_cast<std::size_t>(cache.out_targets[i]);
        if (seen[v]) continue;
        seen[v] = 2;
        into[v] = cache.out_links[i];
        next.push_back(static_cast<int>(v));
      }
    }
    found += next.size();
    // The level in vertex-id order: sorted when small, read off one pass over the marks when large.
    if (next.size() > count / 32) {
      next.clear();
      for (std::size_t v = 0; v < count; ++v) {
        if (seen[v] == 2) next.push_back(static_cast<int>(v));
      }
    } else if (!std::is_sorted(next.begin(), next.end())) {
      std::sort(next.begin(), next.end());
    }
    for (int v : next) seen[static_cast<std::size_t>(v)] = 1;
    level.swap(next);
    next.clear();
  }
  if (reached != nullptr) *reached = found;
  return into;
}

// The route to `to` read off `tree` backwards from `to`; empty when the tree does not reach it.
std::vector<int> route_on_tree(const Topology& t, const std::vector<int>& tree, int from, int to) {
  std::vector<int> route;
  for (int v = to; v != from; v = t.links[static_cast<std::size_t>(route.back())].from) {
    const int link = tree[static_cast<std::size_t>(v)];
    if (link < 0) return {};
    route.push_back(link);
  }
  std::reverse(route.begin(), route.end());
  return route;
}

}  // namespace

std::string_view name(LinkKind kind) {
  switch (kind) {
    case LinkKind::NVLink: return "nvlink";
    case LinkKind::PCIe: return "pcie";
    case LinkKind::InfiniBand: return "infiniband";
    default: return "ethernet";
  }
}

std::vector<int> Topology::aggregating_switches() const {
  std::vector<int> ids;
  for (std::size_t v = 0; v < vertices.size(); ++v) {
    if (vertices[v].kind == VertexKind::Switch && vertices[v].aggregates) ids.push_back(static_cast<int>(v));
  }
  return ids;
}

const std::vector<int>& Topology::route(int from, int to) const {
  const int count = static_cast<int>(vertices.size());
  if (from < 0 || from >= count || to < 0 || to >= count) {
    throw std::out_of_range("Topology::route(" + std::to_string(from) + ", " + std::to_string(to) +
                            "): vertex ids must be 0.." + std::to_string(count - 1));
  }
  RouteCache& cache = route_cache;
  // A cache built for other vertices or links is dropped (edits that keep both counts are not
  // seen: route_cache = {} is the caller's job then).
  if (cache.first_out.size() != vertices.size() + 1 || cache.out_links.size() != links.size()) prepare(*this, cache);
  const std::uint64_t key = (std::uint64_t{static_cast<std::uint32_t>(from)} << 32) | static_cast<std::uint32_t>(to);
  const auto cached = cache.routes.find(key);
  if (cached != cache.routes.end()) return cached->second;
  // A source's first few routes come from searches that stop at their target (neighbours are
  // near); after that it keeps its whole tree, so asking for every pair costs one search each.
  std::vector<int>& tree = cache.trees[static_cast<std::size_t>(from)];
  if (tree.empty() && from != to &&
      (++cache.searches[static_cast<std::size_t>(from)] > kSearchesBeforeTree || cache.wide)) {
    // At the cap every tree is dropped (the routes found stay): memory stays bounded, and a caller
    // that asks source by source (the simulator does) computes each source's tree once.
    if (cache.tree_entries + vertices.size() > kMostTreeEntries) {
      for (std::vector<int>& kept : cache.trees) std::vector<int>().swap(kept);
      cache.tree_entries = 0;
    }
    tree = search(*this, cache, from, -1);
    cache.tree_entries += tree.size();
  }
  std::vector<int> found;
  if (!tree.empty()) {
    found = route_on_tree(*this, tree, from, to);
  } else if (from != to) {
    std::size_t reached = 0;
    found = route_on_tree(*this, search(*this, cache, from, to, &reached), from, to);
    // A search that had to cross most of the machine cost as much as the whole tree: from now on
    // every source gets its tree at once.
    cache.wide = cache.wide || reached * 4 > vertices.size();
  }
  return cache.routes.emplace(key, std::move(found)).first->second;
}

double transfer_time(const Topology& topology, const std::vector<int>& route, std::size_t bytes) {
  if (route.empty()) return 0;
  double latency = 0;
  double narrowest = std::numeric_limits<double>::infinity();
  for (int id : route) {
    const Link& link = topology.links.at(static_cast<std::size_t>(id));
    latency += link.latency;
    narrowest = std::min(narrowest, link.bandwidth);
  }
  return latency + static_cast<double>(bytes) / narrowest;
}

std::string topology_presets() {
  return "ring:N (N GPUs, 1.." + std::to_string(kMaxTopologyGpus) +
         "), dgx-h100 (8 GPUs), ib-fat-tree:NODES (8 GPUs a node, 1.." + std::to_string(kMaxNodes) +
         " nodes), rail-fat-tree:NODES (8 GPUs a node, 1.." + std::to_string(kMaxNodes) +
         " nodes), dragonfly:GROUPS (64 GPUs a group, 1.." + std::to_string(kMaxGroups) + " groups)";
}

Result<Topology> make_topology(std::string_view preset) {
  const std::size_t colon = preset.find(':');
  const std::string_view family = preset.substr(0, colon);
  const bool has_count = colon != std::string_view::npos;
  const std::string_view count = has_count ? preset.substr(colon + 1) : std::string_view{};
  if (family == "dgx-h100") {
    if (has_count) return preset_error(preset, "dgx-h100 is one node; for several use ib-fat-tree:NODES");
    return dgx_nodes("dgx-h100", 1, false);
  }
  if (family == "ring") {
    const Result<int> n = preset_count(preset, count, "N", kMaxTopologyGpus);
    if (!n) return n.error();
    return ring(*n);
  }
  if (family == "ib-fat-tree") {
    const Result<int> nodes = preset_count(preset, count, "NODES", kMaxNodes);
    if (!nodes) return nodes.error();
    return dgx_nodes("ib-fat-tree:" + std::to_string(*nodes), *nodes, true);
  }
  if (family == "rail-fat-tree") {
    const Result<int> nodes = preset_count(preset, count, "NODES", kMaxNodes);
    if (!nodes) return nodes.error();
    return rail_fat_tree(*nodes);
  }
  if (family == "dragonfly") {
    const Result<int> groups = preset_count(preset, count, "GROUPS", kMaxGroups);
    if (!groups) return groups.error();
    return dragonfly(*groups);
  }
  return preset_error(preset, "no such preset");
}

}  // namespace collcheck
