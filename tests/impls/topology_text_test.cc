// Checks the topology text format: every field, round trips of every preset, errors that name
// the line and the field, and loading a preset or a file.
#include "impls/sim/topology.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "tests/impls/topology_support.h"

namespace collcheck {
namespace {

using testing::parsed;
using testing::preset;

std::string number(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

// The text form of a topology, every number in SI base units, for round trips.
std::string to_text(const Topology& t) {
  std::string text = "name " + t.name + "\ncopy-bandwidth " + number(t.copy_bandwidth) + "B/s\n";
  for (const Vertex& v : t.vertices) {
    const char* kind = v.kind == VertexKind::Gpu ? "gpu" : v.kind == VertexKind::Nic ? "nic" : "switch";
    text += std::string(kind) + " " + v.label + (v.aggregates ? " aggregates\n" : "\n");
  }
  for (const Link& l : t.links) {
    text += "link " + t.vertices[static_cast<std::size_t>(l.from)].label + " " +
            t.vertices[static_cast<std::size_t>(l.to)].label + " " + std::string(name(l.kind)) + " " +
            number(l.latency) + "s " + number(l.bandwidth) + "\n";
  }
  return text;
}

void expect_same(const Topology& a, const Topology& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.copy_bandwidth, b.copy_bandwidth);
  EXPECT_EQ(a.gpus, b.gpus);
  ASSERT_EQ(a.vertices.size(), b.vertices.size());
  for (std::size_t v = 0; v < a.vertices.size(); ++v) {
    EXPECT_EQ(a.vertices[v].kind, b.vertices[v].kind);
    EXPECT_EQ(a.vertices[v].label, b.vertices[v].label);
    EXPECT_EQ(a.vertices[v].aggregates, b.vertices[v].aggregates);
  }
  ASSERT_EQ(a.links.size(), b.links.size());
  for (std::size_t l = 0; l < a.links.size(); ++l) {
    EXPECT_EQ(a.links[l].from, b.links[l].from);
    EXPECT_EQ(a.links[l].to, b.links[l].to);
    EXPECT_EQ(a.links[l].kind, b.links[l].kind);
    EXPECT_EQ(a.links[l].latency, b.links[l].latency);
    EXPECT_EQ(a.links[l].bandwidth, b.links[l].bandwidth);
  }
}

// ---- the text format ----

constexpr std::string_view kExample = R"(# two GPUs on a switch, with a NIC each
name my-box
copy-bandwidth 1.5TB/s   # HBM

gpu g0
gpu g1
nic n0
switch s0 aggregates
switch s1
link g0 s0 nvlink 0.7us 450GB/s duplex
link g1 s0 nvlink 700ns 450e9 duplex
link g0 n0 pcie 5e-7 64000MB/s
link n0 s1 infiniband 1.5e3ns 400Gb/s
link s1 g1 ethernet 0.001ms 3.2Tb/s
link s0 s1 ethernet 2s 8B/s
)";

TEST(TopologyText, ParsesEveryField) {
  const Topology t = parsed(kExample);
  EXPECT_EQ(t.name, "my-box");
  EXPECT_EQ(t.copy_bandwidth, 1.5e12);
  EXPECT_EQ(t.gpus, (std::vector<int>{0, 1}));
  ASSERT_EQ(t.vertices.size(), 5u);
  EXPECT_EQ(t.vertices[2].kind, VertexKind::Nic);
  EXPECT_EQ(t.vertices[3].kind, VertexKind::Switch);
  EXPECT_TRUE(t.vertices[3].aggregates);
  EXPECT_FALSE(t.vertices[4].aggregates);
  EXPECT_EQ(t.aggregating_switches(), std::vector<int>{3});
  ASSERT_EQ(t.links.size(), 8u);
  const std::vector<Link> expected{{0, 3, LinkKind::NVLink, 7e-7, 450e9},   {3, 0, LinkKind::NVLink, 7e-7, 450e9},
                                   {1, 3, LinkKind::NVLink, 7e-7, 450e9},   {3, 1, LinkKind::NVLink, 7e-7, 450e9},
                                   {0, 2, LinkKind::PCIe, 5e-7, 64e9},      {2, 4, LinkKind::InfiniBand, 1.5e-6, 50e9},
                                   {4, 1, LinkKind::Ethernet, 1e-6, 400e9}, {3, 4, LinkKind::Ethernet, 2, 8}};
  for (std::size_t l = 0; l < expected.size(); ++l) {
    SCOPED_TRACE("link " + std::to_string(l));
    EXPECT_EQ(t.links[l].from, expected[l].from);
    EXPECT_EQ(t.links[l].to, expected[l].to);
    EXPECT_EQ(t.links[l].kind, expected[l].kind);
    EXPECT_EQ(t.links[l].latency, expected[l].latency);
    EXPECT_EQ(t.links[l].bandwidth, expected[l].bandwidth);
  }
}

TEST(TopologyText, RoundTrips) {
  const Topology example = parsed(kExample);
  expect_same(parsed(to_text(example)), example);
  for (std::string_view name : {"ring:5", "dgx-h100", "ib-fat-tree:2"}) {
    SCOPED_TRACE(name);
    const Topology t = preset(name);
    expect_same(parsed(to_text(t)), t);
  }
}

TEST(TopologyText, NameIsOptionalAndCommentsAndBlankLinesAreSkipped) {
  const Topology t = parsed("\n  # nothing\n\tgpu only   # the one rank\n\n");
  EXPECT_EQ(t.name, "");
  EXPECT_EQ(t.nranks(), 1);
  EXPECT_EQ(t.copy_bandwidth, 0);
  EXPECT_EQ(parsed("gpu a\r\ngpu b\r\nlink a b pcie 1us 1GB/s duplex\r\n").links.size(), 2u);
}

struct BadText {
  std::string_view text;
  std::string_view starts;  // the message's start: line number and field
  std::string_view also = "";
};

TEST(TopologyText, ErrorsNameTheLineAndTheField) {
  const std::string two = "gpu g0\ngpu g1\n";
  const std::vector<BadText> cases{
      {"gpu g0\nmesh g1", "line 2: 'mesh': unknown"},
      {"name a b", "line 1: name:"},
      {"name a\nname b", "line 2: name:", "line 1"},
      {"copy-bandwidth fast", "line 1: copy-bandwidth:", "'fast'"},
      {"copy-bandwidth 3TB/s 4TB/s", "line 1: copy-bandwidth:"},
      {"gpu", "line 1: gpu:"},
      {"gpu g0 extra", "line 1: gpu:", "'extra'"},
      {"gpu g0\ngpu g0", "line 2: gpu:", "line 1"},
      {"gpu g0\nnic g0", "line 2: nic:", "'g0'"},
      {"switch s0 fast", "line 1: switch:", "aggregates"},
      {"switch s0 aggregates fast", "line 1: switch:", "'fast'"},
      {"gpu g0\ngpu g1\n\nlink g0 g9 nvlink 1us 1GB/s", "line 4: link: unknown vertex 'g9'"},
      {"gpu g0\nlink g0 nvlink 1us 1GB/s", "line 2: link:", "FROM TO KIND"},
      {"gpu g0\nlink g0 g0 nvlink 1us 1GB/s", "line 2: link:", "itself"},
      {"gpu g0\ngpu g1\nlink g0 g1 token 1us 1GB/s", "line 3: link kind:", "'token'"},
      {"gpu g0\ngpu g1\nlink g0 g1 nvlink 5xs 1GB/s", "line 3: link latency:", "'xs'"},
      {"gpu g0\ngpu g1\nlink g0 g1 nvlink -1us 1GB/s", "line 3: link latency:", "negative"},
      {"gpu g0\ngpu g1\nlink g0 g1 nvlink us 1GB/s", "line 3: link latency:", "number"},
      {"gpu g0\ngpu g1\nlink g0 g1 nvlink 1e999us 1GB/s", "line 3: link latency:", "finite"},
      {"gpu g0\ngpu g1\nlink g0 g1 nvlink nan 1GB/s", "line 3: link latency:"},
      {"gpu g0\ngpu g1\nlink g0 g1 nvlink 1us 1e2147483647TB/s", "line 3: link bandwidth:", "finite"},
      {"gpu g0\ngpu g1\nlink g0 g1 nvlink 1us 0GB/s", "line 3: link bandwidth:", "positive"},
      {"gpu g0\ngpu g1\nlink g0 g1 nvlink 1us 1GB", "line 3: link bandwidth:", "GB/s"},
      {"gpu g0\ngpu g1\nlink g0 g1 nvlink 1us 1GB/s both", "line 3: link:", "duplex"},
      {"gpu g0\ngpu g1\nlink g0 g1 nvlink 1us 1GB/s duplex more", "line 3: link:", "'more'"},
      {"gpu g0\ngpu g1\nlink g0 g1 nvlink 1us 1GB/s", "line 2: gpu: 'g1' has no route to 'g0'"},
      {"gpu g0\ngpu g1\nlink g1 g0 nvlink 1us 1GB/s", "line 2: gpu: 'g1' has no route from 'g0'"},
      {"gpu g0\nswitch s0 aggregates", "line 2: switch:", "'s0'"},
      {"", "gpu: none declared"},
      {"nic n0  # no gpu", "gpu: none declared"},
  };
  for (const BadText& bad : cases) {
    SCOPED_TRACE(std::string(bad.text));
    const Result<Topology> t = parse_topology(bad.text);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().field, "topology");
    EXPECT_EQ(t.error().message.rfind(bad.starts, 0), 0u) << t.error().message;
    EXPECT_NE(t.error().message.find(bad.also), std::string::npos) << t.error().message;
  }
}

// ---- loading ----

TEST(TopologyText, LoadTakesAPresetOrAFile) {
  EXPECT_EQ(load_topology("ib-fat-tree:2")->nranks(), 16);
  const std::filesystem::path folder = std::filesystem::temp_directory_path();
  const std::string good = (folder / "collcheck_topology_test_good.topo").string();
  const std::string bad = (folder / "collcheck_topology_test_bad.topo").string();
  std::ofstream(good) << "gpu g0\n";
  std::ofstream(bad) << "gpu g0\nlink g0 g9 nvlink 1us 1GB/s\n";
  const Result<Topology> loaded = load_topology(good);
  ASSERT_TRUE(loaded.ok()) << loaded.error().text();
  EXPECT_EQ(loaded->name, good) << "a file without a name is named by its path";
  const Result<Topology> failed = load_topology(bad);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().field, "topology");
  EXPECT_NE(failed.error().message.find(bad), std::string::npos);
  EXPECT_NE(failed.error().message.find("line 2: link: unknown vertex 'g9'"), std::string::npos);
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}

TEST(TopologyText, LoadErrorsSayNeitherPresetNorFile) {
  for (std::string_view missing : {"ring:0", "/nonexistent/collcheck.topo", "dgx-a100"}) {
    const Result<Topology> t = load_topology(std::string(missing));
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().field, "topology");
    EXPECT_NE(t.error().message.find(missing), std::string::npos) << t.error().message;
    EXPECT_NE(t.error().message.find("readable file"), std::string::npos) << t.error().message;
    EXPECT_NE(t.error().message.find("ring:N"), std::string::npos) << t.error().message;
  }
}

}  // namespace
}  // namespace collcheck
