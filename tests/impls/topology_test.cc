// Checks the simulated machine: each preset's counts and link figures, shortest deterministic
// routes (against an independent search) and transfer times.
#include "impls/sim/topology.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <queue>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tests/impls/topology_support.h"

namespace collcheck {
namespace {

using testing::parsed;
using testing::preset;

int vertex(const Topology& t, std::string_view label) {
  for (std::size_t v = 0; v < t.vertices.size(); ++v) {
    if (t.vertices[v].label == label) return static_cast<int>(v);
  }
  ADD_FAILURE() << "no vertex " << label;
  return 0;
}

// The labels of the vertices a route visits, from its start.
std::vector<std::string> visits(const Topology& t, const std::vector<int>& route, int from) {
  std::vector<std::string> labels{t.vertices[static_cast<std::size_t>(from)].label};
  labels.reserve(route.size() + 1);
  for (int link : route)
    labels.push_back(t.vertices[static_cast<std::size_t>(t.links[static_cast<std::size_t>(link)].to)].label);
  return labels;
}

std::vector<LinkKind> kinds(const Topology& t, const std::vector<int>& route) {
  std::vector<LinkKind> out;
  out.reserve(route.size());
  for (int link : route) out.push_back(t.links[static_cast<std::size_t>(link)].kind);
  return out;
}

// Hop counts from `source` by a plain breadth-first search, written apart from route() (-1: unreached).
std::vector<int> hops_from(const Topology& t, int source) {
  std::vector<int> hops(t.vertices.size(), -1);
  hops[static_cast<std::size_t>(source)] = 0;
  std::queue<int> pending;
  pending.push(source);
  while (!pending.empty()) {
    const int v = pending.front();
    pending.pop();
    for (const Link& link : t.links) {
      if (link.from != v || hops[static_cast<std::size_t>(link.to)] >= 0) continue;
      hops[static_cast<std::size_t>(link.to)] = hops[static_cast<std::size_t>(v)] + 1;
      pending.push(link.to);
    }
  }
  return hops;
}

// Every route is a chain of links from its start to its end, as short as any path there.
void expect_shortest_routes(const Topology& t) {
  const int n = static_cast<int>(t.vertices.size());
  for (int a = 0; a < n; ++a) {
    const std::vector<int> hops = hops_from(t, a);
    for (int b = 0; b < n; ++b) {
      const std::vector<int>& route = t.route(a, b);
      EXPECT_EQ(static_cast<int>(route.size()), a == b ? 0 : std::max(hops[static_cast<std::size_t>(b)], 0))
          << a << " to " << b;
      int at = a;
      for (int link : route) {
        ASSERT_EQ(t.links[static_cast<std::size_t>(link)].from, at);
        at = t.links[static_cast<std::size_t>(link)].to;
      }
      EXPECT_EQ(at, route.empty() ? a : b);
    }
  }
}

std::map<VertexKind, int> vertex_counts(const Topology& t) {
  std::map<VertexKind, int> counts;
  for (const Vertex& v : t.vertices) ++counts[v.kind];
  return counts;
}

// Each link kind present, with how many links and the latency and bandwidth they all share.
struct KindFigures {
  int links = 0;
  double latency = 0;
  double bandwidth = 0;
};

std::map<LinkKind, KindFigures> link_figures(const Topology& t) {
  std::map<LinkKind, KindFigures> figures;
  for (const Link& l : t.links) {
    KindFigures& f = figures[l.kind];
    if (f.links++ > 0) {
      EXPECT_EQ(f.latency, l.latency) << name(l.kind);
      EXPECT_EQ(f.bandwidth, l.bandwidth) << name(l.kind);
    }
    f.latency = l.latency;
    f.bandwidth = l.bandwidth;
  }
  return figures;
}

// ---- presets ----

TEST(Topology, LinkKindNames) {
  EXPECT_EQ(name(LinkKind::NVLink), "nvlink");
  EXPECT_EQ(name(LinkKind::PCIe), "pcie");
  EXPECT_EQ(name(LinkKind::InfiniBand), "infiniband");
  EXPECT_EQ(name(LinkKind::Ethernet), "ethernet");
}

TEST(Topology, RingPresetIsTheAlphaBetaMachine) {
  const Topology t = preset("ring:8");
  EXPECT_EQ(t.name, "ring:8");
  EXPECT_EQ(t.nranks(), 8);
  EXPECT_EQ(t.vertices.size(), 8u);
  EXPECT_EQ(t.links.size(), 16u);
  EXPECT_EQ(t.copy_bandwidth, 0);
  EXPECT_TRUE(t.aggregating_switches().empty());
  const auto figures = link_figures(t);
  EXPECT_EQ(figures.at(LinkKind::NVLink).latency, 1e-6);
  EXPECT_EQ(figures.at(LinkKind::NVLink).bandwidth, 25e9);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(t.gpus[static_cast<std::size_t>(r)], r);
    EXPECT_EQ(t.vertices[static_cast<std::size_t>(r)].label, "gpu" + std::to_string(r));
  }
}

TEST(Topology, SmallRingsHaveNoParallelCables) {
  EXPECT_EQ(preset("ring:1").links.size(), 0u);
  EXPECT_EQ(preset("ring:2").links.size(), 2u);
  EXPECT_EQ(preset("ring:3").links.size(), 6u);
  EXPECT_EQ(preset("ring:4096").nranks(), 4096);
  EXPECT_EQ(preset("ring:16384").nranks(), 16384);
}

TEST(Topology, NeighbourTransferOnRingIsAlphaPlusBytesOverBeta) {
  const Topology t = preset("ring:8");
  for (std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{1} << 20, std::size_t{123456789}}) {
    for (int r = 0; r < 8; ++r) {
      for (int peer : {(r + 1) % 8, (r + 7) % 8}) {
        const std::vector<int>& route = t.route(r, peer);
        ASSERT_EQ(route.size(), 1u);
        EXPECT_EQ(transfer_time(t, route, bytes), 1e-6 + static_cast<double>(bytes) / 25e9);
      }
    }
  }
  EXPECT_EQ(transfer_time(t, t.route(3, 3), 1000), 0);
}

TEST(Topology, TransferTimeAddsLatenciesAndUsesTheNarrowestLink) {
  const Topology t = preset("ib-fat-tree:2");
  const std::vector<int>& route = t.route(t.gpus[0], t.gpus[8]);  // pcie, ib, ib, pcie
  EXPECT_DOUBLE_EQ(transfer_time(t, route, 0), 2 * 0.5e-6 + 2 * 0.6e-6);
  EXPECT_DOUBLE_EQ(transfer_time(t, route, 1 << 30), 2 * 0.5e-6 + 2 * 0.6e-6 + (1 << 30) / 50e9);
}

TEST(Topology, DgxH100Preset) {
  const Topology t = preset("dgx-h100");
  EXPECT_EQ(t.name, "dgx-h100");
  EXPECT_EQ(t.nranks(), 8);
  EXPECT_EQ(vertex_counts(t),
            (std::map<VertexKind, int>{{VertexKind::Gpu, 8}, {VertexKind::Nic, 8}, {VertexKind::Switch, 1}}));
  EXPECT_EQ(t.links.size(), 32u);
  EXPECT_EQ(t.copy_bandwidth, 3e12);
  const auto figures = link_figures(t);
  EXPECT_EQ(figures.size(), 2u);
  EXPECT_EQ(figures.at(LinkKind::NVLink).links, 16);
  EXPECT_EQ(figures.at(LinkKind::NVLink).latency, 0.7e-6);
  EXPECT_EQ(figures.at(LinkKind::NVLink).bandwidth, 450e9);
  EXPECT_EQ(figures.at(LinkKind::PCIe).links, 16);
  EXPECT_EQ(figures.at(LinkKind::PCIe).latency, 0.5e-6);
  EXPECT_EQ(figures.at(LinkKind::PCIe).bandwidth, 64e9);
  EXPECT_EQ(t.aggregating_switches(), std::vector<int>{vertex(t, "nvswitch0")});
}

TEST(Topology, DgxH100GpusMeetInTheNvSwitch) {
  const Topology t = preset("dgx-h100");
  EXPECT_EQ(visits(t, t.route(t.gpus[0], t.gpus[5]), t.gpus[0]),
            (std::vector<std::string>{"gpu0", "nvswitch0", "gpu5"}));
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      const std::vector<int>& route = t.route(t.gpus[static_cast<std::size_t>(a)], t.gpus[static_cast<std::size_t>(b)]);
      EXPECT_EQ(kinds(t, route), a == b ? std::vector<LinkKind>{} : std::vector<LinkKind>(2, LinkKind::NVLink));
    }
  }
  EXPECT_EQ(visits(t, t.route(t.gpus[2], vertex(t, "nic2")), t.gpus[2]), (std::vector<std::string>{"gpu2", "nic2"}));
}

TEST(Topology, FatTreeCounts) {
  for (int nodes : {1, 4, 5, 512}) {
    const Topology t = preset("ib-fat-tree:" + std::to_string(nodes));
    const int spines = (nodes + 3) / 4;
    EXPECT_EQ(t.name, "ib-fat-tree:" + std::to_string(nodes));
    EXPECT_EQ(t.nranks(), 8 * nodes);
    EXPECT_EQ(vertex_counts(t), (std::map<VertexKind, int>{{VertexKind::Gpu, 8 * nodes},
                                                           {VertexKind::Nic, 8 * nodes},
                                                           {VertexKind::Switch, nodes + 8 + spines}}));
    const auto figures = link_figures(t);
    EXPECT_EQ(figures.at(LinkKind::NVLink).links, 16 * nodes);
    EXPECT_EQ(figures.at(LinkKind::PCIe).links, 16 * nodes);
    EXPECT_EQ(figures.at(LinkKind::InfiniBand).links, 16 * nodes + 2 * 8 * spines);
    EXPECT_EQ(figures.at(LinkKind::InfiniBand).latency, 0.6e-6);
    EXPECT_EQ(figures.at(LinkKind::InfiniBand).bandwidth, 50e9);
    EXPECT_EQ(t.aggregating_switches().size(), static_cast<std::size_t>(nodes + 8 + spines));
    EXPECT_EQ(t.copy_bandwidth, 3e12);
  }
}

TEST(Topology, FatTreeIsRailOptimizedAndRanksAreNodeMajor) {
  const Topology t = preset("ib-fat-tree:4");
  EXPECT_EQ(t.vertices[static_cast<std::size_t>(t.aggregating_switches().front())].label, "spine0");
  for (int r = 0; r < 32; ++r) {
    const int gpu = t.gpus[static_cast<std::size_t>(r)];
    EXPECT_EQ(t.vertices[static_cast<std::size_t>(gpu)].label, "gpu" + std::to_string(r));
    const int nvswitch = vertex(t, "nvswitch" + std::to_string(r / 8));
    EXPECT_EQ(visits(t, t.route(gpu, nvswitch), gpu).size(), 2u) << "rank " << r << " sits on its node's NVSwitch";
    const int leaf = vertex(t, "leaf" + std::to_string(r % 8));
    EXPECT_EQ(visits(t, t.route(gpu, leaf), gpu),
              (std::vector<std::string>{"gpu" + std::to_string(r), "nic" + std::to_string(r),
                                        "leaf" + std::to_string(r % 8)}));
  }
}

TEST(Topology, FatTreeRoutesCrossTheFabricOnlyBetweenNodes) {
  const Topology t = preset("ib-fat-tree:4");
  EXPECT_EQ(visits(t, t.route(t.gpus[0], t.gpus[9]), t.gpus[0]),
            (std::vector<std::string>{"gpu0", "nic0", "leaf0", "spine0", "leaf1", "nic9", "gpu9"}));
  EXPECT_EQ(visits(t, t.route(t.gpus[0], t.gpus[8]), t.gpus[0]),
            (std::vector<std::string>{"gpu0", "nic0", "leaf0", "nic8", "gpu8"}));
  const std::vector<LinkKind> intra(2, LinkKind::NVLink);
  const std::vector<LinkKind> same_rail{LinkKind::PCIe, LinkKind::InfiniBand, LinkKind::InfiniBand, LinkKind::PCIe};
  const std::vector<LinkKind> cross_rail{LinkKind::PCIe,       LinkKind::InfiniBand, LinkKind::InfiniBand,
                                         LinkKind::InfiniBand, LinkKind::InfiniBand, LinkKind::PCIe};
  for (int a = 0; a < 32; ++a) {
    for (int b = 0; b < 32; ++b) {
      if (a == b) continue;
      const std::vector<LinkKind> expected = a / 8 == b / 8 ? intra : a % 8 == b % 8 ? same_rail : cross_rail;
      EXPECT_EQ(kinds(t, t.route(t.gpus[static_cast<std::size_t>(a)], t.gpus[static_cast<std::size_t>(b)])), expected)
          << a << " to " << b;
    }
  }
}

// Large clusters split each rail over a leaf per scalable unit of 32 nodes; a rail's spines join
// only that rail's leaves, so a message between rails of different units crosses NVLink first.
TEST(Topology, RailFatTreeSplitsRailsIntoUnitsAndMeetsOverNvlink) {
  const Topology t = preset("rail-fat-tree:64");
  EXPECT_EQ(t.nranks(), 512);
  EXPECT_EQ(vertex_counts(t), (std::map<VertexKind, int>{
                                  {VertexKind::Gpu, 512}, {VertexKind::Nic, 512}, {VertexKind::Switch, 8 + 16 + 64}}));
  const auto figures = link_figures(t);
  EXPECT_EQ(figures.at(LinkKind::InfiniBand).links, 2 * 512 + 2 * 2 * 8);
  EXPECT_EQ(visits(t, t.route(t.gpus[0], t.gpus[8]), t.gpus[0]),
            (std::vector<std::string>{"gpu0", "nic0", "leaf0.0", "nic8", "gpu8"}));
  EXPECT_EQ(visits(t, t.route(t.gpus[0], t.gpus[256]), t.gpus[0]),
            (std::vector<std::string>{"gpu0", "nic0", "leaf0.0", "spine0.0", "leaf1.0", "nic256", "gpu256"}));
  const std::vector<LinkKind> across = kinds(t, t.route(t.gpus[0], t.gpus[257]));
  EXPECT_EQ(across.size(), 8u);
  EXPECT_NE(std::find(across.begin(), across.end(), LinkKind::NVLink), across.end());
  expect_shortest_routes(preset("rail-fat-tree:33"));
}

// Every pair of groups is one global cable apart: a route is at most local, global, local.
TEST(Topology, DragonflyRoutesAreMinimal) {
  const Topology t = preset("dragonfly:4");
  EXPECT_EQ(t.nranks(), 256);
  EXPECT_EQ(vertex_counts(t), (std::map<VertexKind, int>{{VertexKind::Gpu, 256}, {VertexKind::Switch, 32}}));
  EXPECT_EQ(t.links.size(), 2u * 256 + 2 * 4 * 28 + 2 * 6) << "GPUs, routers all to all in a group, a cable a pair";
  const auto global = std::count_if(t.links.begin(), t.links.end(), [](const Link& l) { return l.latency == 1e-6; });
  EXPECT_EQ(global, 2 * 6);
  EXPECT_EQ(visits(t, t.route(t.gpus[0], t.gpus[8]), t.gpus[0]),
            (std::vector<std::string>{"gpu0", "router0.0", "router0.1", "gpu8"}));
  for (int b = 0; b < 256; b += 7) {
    EXPECT_LE(t.route(t.gpus[0], t.gpus[static_cast<std::size_t>(b)]).size(), 5u) << b;
  }
  expect_shortest_routes(preset("dragonfly:3"));
}

TEST(Topology, PresetsReachProductionSizes) {
  EXPECT_EQ(preset("ib-fat-tree:2048").nranks(), 16384);
  EXPECT_EQ(preset("rail-fat-tree:2048").nranks(), 16384);
  EXPECT_EQ(preset("dragonfly:256").nranks(), 16384);
  EXPECT_EQ(preset("rail-fat-tree:8192").nranks(), 65536);
}

TEST(Topology, PresetErrorsNameTheFieldAndListThePresets) {
  for (std::string_view bad : {"",
                               "ring",
                               "ring:",
                               "ring:0",
                               "ring:65537",
                               "ring:-1",
                               "ring:8x",
                               "ring: 8",
                               "dgx-h100:2",
                               "ib-fat-tree",
                               "ib-fat-tree:0",
                               "ib-fat-tree:8193",
                               "rail-fat-tree",
                               "rail-fat-tree:0",
                               "rail-fat-tree:8193",
                               "dragonfly:",
                               "dragonfly:1025",
                               "dragonfly:x",
                               "mesh:4",
                               "DGX-H100"}) {
    const Result<Topology> t = make_topology(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.error().field, "topology");
    EXPECT_NE(t.error().message.find("'" + std::string(bad) + "'"), std::string::npos) << t.error().text();
    EXPECT_NE(t.error().message.find(topology_presets()), std::string::npos) << t.error().text();
  }
  EXPECT_NE(make_topology("ring:0").error().message.find("N must be 1..65536"), std::string::npos);
  EXPECT_NE(make_topology("ib-fat-tree:8193").error().message.find("NODES must be 1..8192"), std::string::npos);
  EXPECT_NE(make_topology("rail-fat-tree:0").error().message.find("NODES must be 1..8192"), std::string::npos);
  EXPECT_NE(make_topology("dragonfly:1025").error().message.find("GROUPS must be 1..1024"), std::string::npos);
  for (std::string_view family : {"ib-fat-tree:NODES", "rail-fat-tree:NODES", "dragonfly:GROUPS"}) {
    EXPECT_NE(topology_presets().find(family), std::string::npos) << family;
  }
}

// ---- routes ----

TEST(Topology, RoutesAreShortest) {
  for (std::string_view name : {"ring:1", "ring:2", "ring:7", "ring:8", "dgx-h100", "ib-fat-tree:1", "ib-fat-tree:2"}) {
    SCOPED_TRACE(name);
    expect_shortest_routes(preset(name));
  }
}

TEST(Topology, RouteTiesGoToTheLowestVertexId) {
  const Topology ring = preset("ring:8");
  EXPECT_EQ(visits(ring, ring.route(0, 4), 0), (std::vector<std::string>{"gpu0", "gpu1", "gpu2", "gpu3", "gpu4"}));
  EXPECT_EQ(visits(ring, ring.route(4, 0), 4), (std::vector<std::string>{"gpu4", "gpu3", "gpu2", "gpu1", "gpu0"}));
  // s2 has the lower id although its links come later; of two parallel links the first is taken.
  const Topology t = parsed(
      "gpu a\ngpu d\nswitch s2\nswitch s1\n"
      "link a s1 nvlink 1us 1GB/s duplex\nlink s1 d nvlink 1us 1GB/s duplex\n"
      "link a s2 pcie 1us 1GB/s duplex\nlink s2 d pcie 1us 1GB/s duplex\nlink s2 d ethernet 1us 1GB/s\n");
  EXPECT_EQ(visits(t, t.route(0, 1), 0), (std::vector<std::string>{"a", "s2", "d"}));
  EXPECT_EQ(t.route(0, 1), (std::vector<int>{4, 6}));
}

TEST(Topology, RoutesAreDeterministicAndCached) {
  const Topology first = preset("ib-fat-tree:3");
  const Topology second = preset("ib-fat-tree:3");
  const std::vector<int>& kept = first.route(first.gpus[0], first.gpus[23]);
  const std::vector<int> copy = kept;
  // The two ask for the same routes in opposite orders: a route depends on nothing asked before.
  for (int a = 23; a >= 0; --a) {
    for (int b = 0; b < 24; ++b)
      first.route(first.gpus[static_cast<std::size_t>(a)], first.gpus[static_cast<std::size_t>(b)]);
  }
  for (int a = 0; a < 24; ++a) {
    for (int b = 23; b >= 0; --b) {
      const int from = second.gpus[static_cast<std::size_t>(a)];
      const int to = second.gpus[static_cast<std::size_t>(b)];
      EXPECT_EQ(second.route(from, to), first.route(from, to)) << a << " to " << b;
    }
  }
  // A route found by a search that stops at its target is the one the source's whole tree gives.
  const Topology fresh = preset("ib-fat-tree:3");
  for (int a = 0; a < static_cast<int>(fresh.vertices.size()); a += 5) {
    for (int b = 0; b < static_cast<int>(fresh.vertices.size()); ++b) {
      fresh.route_cache = {};
      EXPECT_EQ(fresh.route(a, b), first.route(a, b)) << a << " to " << b;
    }
  }
  EXPECT_EQ(&kept, &first.route(first.gpus[0], first.gpus[23])) << "a route is computed once and kept";
  EXPECT_EQ(kept, copy) << "later routes leave earlier ones in place";
}

TEST(Topology, UnreachableVerticesHaveEmptyRoutesAndBadIdsThrow) {
  const Topology t = parsed("gpu g0\nnic n0\n");
  EXPECT_TRUE(t.route(0, 1).empty());
  EXPECT_THROW(t.route(0, 2), std::out_of_range);
  EXPECT_THROW(t.route(-1, 0), std::out_of_range);
}

TEST(Topology, RoutesOnLargeMachinesAreQuick) {
  const Topology ring = preset("ring:4096");
  const Topology tree = preset("ib-fat-tree:512");
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < 4096; r += 16) {
    EXPECT_EQ(ring.route(r, (r + 2048) % 4096).size(), 2048u);
    EXPECT_EQ(ring.route(r, (r + 1) % 4096).size(), 1u);
    const int from = tree.gpus[static_cast<std::size_t>(r)];
    EXPECT_EQ(tree.route(from, tree.gpus[static_cast<std::size_t>(4095 - r)]).size(), 6u);
    EXPECT_EQ(tree.route(from, tree.gpus[static_cast<std::size_t>(r + 1)]).size(), 2u);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0) << "1024 routes on 4096-GPU machines";
}

}  // namespace
}  // namespace collcheck
