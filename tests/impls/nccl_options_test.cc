// The `nccl[...]` grammar and NCCL's algorithm table as nccl_options.h states them: every
// algorithm and protocol by name, the pairs NCCL refuses refused with the reason, all-algorithms
// expanded to exactly the pairs NCCL runs and only those the runtime knows, the environment
// that forces a setting and the one that routes faults through the net plugin, the per-call
// knobs; and the specs on this machine, which run nothing where there is no GPU and say why.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "impls/backend/rank_backend.h"
#include "impls/registry.h"
#include "impls/vendors/nccl/nccl_backend.h"
#include "impls/vendors/nccl/nccl_options.h"

namespace collcheck {
namespace {

constexpr int kRecent = 22809;  // NCCL 2.28.9

std::vector<std::string> names_of(const std::vector<NcclSetting>& settings) {
  std::vector<std::string> names;
  for (const NcclSetting& s : settings) names.push_back(s.name);
  return names;
}

TEST(NcclOptions, EveryAlgorithmAndProtocolByName) {
  for (std::string_view algo : {"ring", "tree", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"}) {
    Result<std::vector<NcclSetting>> parsed =
        parse_nccl_options("algo=" + std::string(algo) + ",proto=simple", "nccl:...", kRecent);
    ASSERT_TRUE(parsed.ok()) << algo << ": " << parsed.error().text();
    ASSERT_EQ(parsed->size(), 1u);
    EXPECT_EQ(spec_name(parsed->front().algorithm), algo);
    EXPECT_EQ(parsed->front().name, "nccl:algo=" + std::string(algo) + ",proto=simple");
  }
  for (std::string_view proto : {"simple", "ll", "ll128"}) {
    Result<std::vector<NcclSetting>> parsed = parse_nccl_options("proto=" + std::string(proto), "nccl:...", kRecent);
    ASSERT_TRUE(parsed.ok()) << proto;
    EXPECT_EQ(spec_name(parsed->front().protocol), proto);
    EXPECT_EQ(parsed->front().algorithm, NcclAlgorithm::Any);
  }
  Result<std::vector<NcclSetting>> plain = parse_nccl_options("", "nccl", kRecent);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(names_of(*plain), std::vector<std::string>{"nccl"});
}

TEST(NcclOptions, BadInputNamesTheOptionAndTheAllowedValues) {
  const auto error_of = [](std::string_view options) {
    Result<std::vector<NcclSetting>> parsed = parse_nccl_options(options, "nccl:" + std::string(options), kRecent);
    EXPECT_FALSE(parsed.ok()) << options;
    return parsed.ok() ? std::string() : parsed.error().text();
  };
  EXPECT_NE(error_of("algo=ringg").find("algo=ringg: must be ring, tree, collnet_direct"), std::string::npos);
  EXPECT_NE(error_of("proto=ll64").find("must be simple, ll or ll128"), std::string::npos);
  EXPECT_NE(error_of("algo=nvls,proto=ll").find("only with proto=simple"), std::string::npos);
  EXPECT_NE(error_of("algo=pat,proto=ll128").find("only with proto=simple"), std::string::npos);
  EXPECT_NE(error_of("chunk=4").find("unknown option 'chunk=4': allowed algo, proto, net, mode, register, graph"),
            std::string::npos);
  EXPECT_NE(error_of("algo=ring,algo=tree").find("given twice"), std::string::npos);
  EXPECT_NE(error_of("register=maybe").find("register=maybe"), std::string::npos);
  EXPECT_NE(error_of("all-algorithms,proto=ll").find("give neither"), std::string::npos);
  EXPECT_NE(error_of("register=on,all-algorithms").find("must come first"), std::string::npos);
}

// NCCL's tuner (src/graph/tuning.cc): which collectives each algorithm runs.
TEST(NcclOptions, CollectivesFollowNcclsTuner) {
  using enum Collective;
  const auto has = [](NcclAlgorithm a, Collective c) {
    const std::vector<Collective> all = nccl_collectives(a);
    return std::find(all.begin(), all.end(), c) != all.end();
  };
  EXPECT_EQ(nccl_collectives(NcclAlgorithm::Any).size(), 6u);
  EXPECT_TRUE(has(NcclAlgorithm::Ring, Broadcast) && has(NcclAlgorithm::Ring, Reduce));
  EXPECT_FALSE(has(NcclAlgorithm::Ring, AllToAll)) << "all-to-all is point-to-point: no algorithm applies";
  for (NcclAlgorithm a : {NcclAlgorithm::Tree, NcclAlgorithm::CollnetChain, NcclAlgorithm::NvlsTree}) {
    EXPECT_EQ(nccl_collectives(a), std::vector<Collective>{AllReduce}) << spec_name(a);
  }
  EXPECT_FALSE(has(NcclAlgorithm::Pat, AllReduce));
  EXPECT_TRUE(has(NcclAlgorithm::Pat, AllGather) && has(NcclAlgorithm::Pat, ReduceScatter));
  EXPECT_TRUE(has(NcclAlgorithm::Nvls, ReduceScatter) && !has(NcclAlgorithm::Nvls, Broadcast));
}

TEST(NcclOptions, AllAlgorithmsIsEveryPairNcclRunsThatTheRuntimeKnows) {
  Result<std::vector<NcclSetting>> every = parse_nccl_options("all-algorithms", "nccl:all-algorithms", kRecent);
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(every->size(), 4u * 3u + 3u) << "ring, tree and the two collnets with 3 protocols; nvls, nvls_tree, pat";
  std::set<std::string> unique;
  for (const NcclSetting& s : *every) {
    EXPECT_TRUE(nccl_accepts(s.algorithm, s.protocol)) << s.name;
    EXPECT_NE(s.algorithm, NcclAlgorithm::Any);
    EXPECT_NE(s.protocol, NcclProtocol::Any);
    unique.insert(s.name);
  }
  EXPECT_EQ(unique.size(), every->size());
  Result<std::vector<NcclSetting>> older = parse_nccl_options("all-algorithms", "nccl:all-algorithms", 22200);
  ASSERT_TRUE(older.ok());
  for (const NcclSetting& s : *older) EXPECT_NE(s.algorithm, NcclAlgorithm::Pat) << "PAT arrived in 2.23";
  EXPECT_EQ(older->size(), every->size() - 1);
  Result<std::vector<NcclSetting>> refused = parse_nccl_options("algo=pat", "nccl:algo=pat", 22200);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().text().find("needs NCCL 22300 or later; the installed runtime is 22200"), std::string::npos)
      << refused.error().text();
  Result<std::vector<NcclSetting>> with_knob =
      parse_nccl_options("all-algorithms,register=on", "nccl:all-algorithms,register=on", kRecent);
  ASSERT_TRUE(with_knob.ok());
  for (const NcclSetting& s : *with_knob) {
    EXPECT_TRUE(s.name.ends_with(",register=on")) << s.name;
  }
}

TEST(NcclOptions, EnvironmentForcesTheSettingAndFaultsGoThroughThePlugin) {
  Result<std::vector<NcclSetting>> parsed = parse_nccl_options("algo=collnet_direct,proto=ll128", "nccl:...", kRecent);
  ASSERT_TRUE(parsed.ok());
  const std::vector<std::pair<std::string, std::string>> expected{{"NCCL_ALGO", "CollnetDirect"},
                                                                  {"NCCL_PROTO", "LL128"}};
  EXPECT_EQ(nccl_environment(parsed->front()), expected);
  EXPECT_TRUE(nccl_environment(NcclSetting{}).empty()) << "nccl alone leaves NCCL to choose";
  const auto faults = nccl_fault_environment("/x/libnccl-net-collcheck.so");
  const auto value = [&](const std::string& name) {
    for (const auto& [key, v] : faults) {
      if (key == name) return v;
    }
    return std::string("(unset)");
  };
  EXPECT_EQ(value("NCCL_NET_PLUGIN"), "/x/libnccl-net-collcheck.so");
  EXPECT_EQ(value("NCCL_NET"), "collcheck");
  EXPECT_EQ(value("NCCL_P2P_DISABLE"), "1") << "GPUs on one host must talk through the network";
  EXPECT_EQ(value("NCCL_SHM_DISABLE"), "1");
}

// net=socket and net=ib name NCCL's network and turn off every path around it, so GPUs on one host
// talk over it; NVLS and CollNet need what is turned off, so they are refused by name there and
// left out of all-algorithms. net=ib takes no faults and cannot run without an RDMA device.
TEST(NcclOptions, ANamedNetworkCarriesEveryMessage) {
  Result<std::vector<NcclSetting>> ib = parse_nccl_options("algo=ring,net=ib", "nccl:...", kRecent);
  ASSERT_TRUE(ib.ok()) << ib.error().text();
  EXPECT_EQ(ib->front().name, "nccl:algo=ring,net=ib");
  const std::vector<std::pair<std::string, std::string>> expected{
      {"NCCL_ALGO", "Ring"},     {"NCCL_NET", "IB"},        {"NCCL_P2P_DISABLE", "1"},
      {"NCCL_SHM_DISABLE", "1"}, {"NCCL_NVLS_ENABLE", "0"}, {"NCCL_COLLNET_ENABLE", "0"}};
  EXPECT_EQ(nccl_environment(ib->front()), expected);
  Result<std::vector<NcclSetting>> socket = parse_nccl_options("net=socket", "nccl:net=socket", kRecent);
  ASSERT_TRUE(socket.ok());
  EXPECT_EQ(nccl_environment(socket->front()).front(), (std::pair<std::string, std::string>{"NCCL_NET", "Socket"}));

  Result<std::vector<NcclSetting>> nvls = parse_nccl_options("algo=nvls,net=ib", "nccl:algo=nvls,net=ib", kRecent);
  ASSERT_FALSE(nvls.ok());
  EXPECT_NE(nvls.error().text().find("algo=nvls cannot run over it"), std::string::npos) << nvls.error().text();
  Result<std::vector<NcclSetting>> bad = parse_nccl_options("net=tcp", "nccl:net=tcp", kRecent);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().text().find("socket"), std::string::npos) << bad.error().text();

  Result<std::vector<NcclSetting>> every = parse_nccl_options("all-algorithms,net=socket", "nccl:...", kRecent);
  ASSERT_TRUE(every.ok()) << every.error().text();
  for (const NcclSetting& s : *every) {
    EXPECT_TRUE(s.name.ends_with(",net=socket")) << s.name;
    EXPECT_EQ(s.name.find("nvls"), std::string::npos) << s.name;
    EXPECT_EQ(s.name.find("collnet"), std::string::npos) << s.name;
  }
  EXPECT_FALSE(every->empty());

  Result<std::vector<RankBackendSpec>> specs = nccl_backend_specs("net=ib", "nccl:net=ib");
  ASSERT_TRUE(specs.ok()) << specs.error().text();
  EXPECT_FALSE(specs->front().takes_no_faults.empty());
  EXPECT_TRUE(specs->front().fault_environment.empty());
  if (specs->front().cannot_run_here.empty()) GTEST_SKIP() << "this machine has a GPU and an RDMA device";
  Result<std::vector<RankBackendSpec>> over_sockets = nccl_backend_specs("net=socket", "nccl:net=socket");
  ASSERT_TRUE(over_sockets.ok());
  EXPECT_TRUE(over_sockets->front().takes_no_faults.empty()) << "the socket interposer takes its faults";
  EXPECT_TRUE(over_sockets->front().fault_environment.empty()) << "not the plugin: NCCL_NET names Socket";
}

// mode=threads and mode=group: every rank a thread of one launched process (several GPUs in one
// process), no faults (the net plugin and the socket interposer take one rank's per process);
// named in the spec, with all-algorithms too; a mode that is none of them says which are.
TEST(NcclOptions, ThreadsAndGroupModesMakeEveryRankAThreadOfOneProcess) {
  for (const auto& [mode, given] : {std::pair{NcclMode::Threads, "threads"}, std::pair{NcclMode::Group, "group"}}) {
    const std::string option = "mode=" + std::string(given);
    Result<std::vector<NcclSetting>> threads = parse_nccl_options("algo=ring," + option, "nccl:...", kRecent);
    ASSERT_TRUE(threads.ok()) << threads.error().text();
    EXPECT_EQ(threads->front().mode, mode);
    EXPECT_EQ(threads->front().name, "nccl:algo=ring," + option);
    Result<std::vector<NcclSetting>> every = parse_nccl_options("all-algorithms," + option, "nccl:...", kRecent);
    ASSERT_TRUE(every.ok()) << every.error().text();
    for (const NcclSetting& s : *every) {
      EXPECT_EQ(s.mode, mode) << s.name;
      EXPECT_TRUE(s.name.ends_with("," + option)) << s.name;
    }
    Result<std::vector<RankBackendSpec>> specs = nccl_backend_specs(option, "nccl:" + option);
    ASSERT_TRUE(specs.ok()) << specs.error().text();
    EXPECT_TRUE(specs->front().ranks_are_threads);
    EXPECT_NE(specs->front().takes_no_faults.find(option), std::string::npos) << specs->front().takes_no_faults;
    EXPECT_TRUE(specs->front().fault_environment.empty()) << "no plugin: it would take one rank's faults";
  }
  Result<std::vector<NcclSetting>> processes = parse_nccl_options("mode=processes", "nccl:...", kRecent);
  ASSERT_TRUE(processes.ok());
  EXPECT_EQ(processes->front().mode, NcclMode::Processes);
  EXPECT_EQ(processes->front().name, "nccl");
  Result<std::vector<NcclSetting>> bad = parse_nccl_options("mode=fibers", "nccl:mode=fibers", kRecent);
  ASSERT_FALSE(bad.ok());
  for (const char* allowed : {"processes", "threads", "group"})
    EXPECT_NE(bad.error().text().find(allowed), std::string::npos) << bad.error().text();

  Result<std::vector<RankBackendSpec>> apart = nccl_backend_specs("", "nccl");
  ASSERT_TRUE(apart.ok());
  EXPECT_FALSE(apart->front().ranks_are_threads);
  EXPECT_TRUE(apart->front().takes_no_faults.empty());
}

TEST(NcclOptions, CallKnobs) {
  Result<NcclCallKnobs> both = parse_nccl_call_knobs("register=on,graph=on");
  ASSERT_TRUE(both.ok());
  EXPECT_TRUE(both->register_buffers && both->graph);
  Result<NcclCallKnobs> none = parse_nccl_call_knobs("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->register_buffers || none->graph);
  EXPECT_FALSE(none->premul_sum || none->window);
  Result<NcclCallKnobs> newer = parse_nccl_call_knobs("premul=on,window=on,register=off");
  ASSERT_TRUE(newer.ok());
  EXPECT_TRUE(newer->premul_sum && newer->window && !newer->register_buffers && !newer->graph);
  EXPECT_EQ(parse_nccl_call_knobs("chunk=4").error().text(),
            "knobs 'chunk=4': nccl's knobs are register, graph, premul and window");
  EXPECT_FALSE(parse_nccl_call_knobs("graph=2").ok());
  EXPECT_FALSE(parse_nccl_call_knobs("window=yes").ok());
}

// A call knob is drawn only where the runtime has it (pre-multiplied sums from 2.11, symmetric
// windows from 2.27), and one fixed on in the spec that the runtime lacks is an error naming both.
TEST(NcclOptions, CallKnobsFollowTheRuntime) {
  using Names = std::vector<std::string_view>;
  EXPECT_EQ(nccl_call_knobs(21000), (Names{"register", "graph"}));
  EXPECT_EQ(nccl_call_knobs(22600), (Names{"register", "graph", "premul"}));
  EXPECT_EQ(nccl_call_knobs(22809), (Names{"register", "graph", "premul", "window"}));
  EXPECT_EQ(nccl_call_knob_version("window"), 22700);
  EXPECT_EQ(nccl_call_knob_version("chunk"), -1);
  Result<std::vector<NcclSetting>> old = parse_nccl_options("window=on", "nccl:window=on", 22600);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().text().find("window=on needs NCCL 22700 or later; the installed runtime is 22600"),
            std::string::npos)
      << old.error().text();
  EXPECT_TRUE(parse_nccl_options("window=off", "nccl:window=off", 22600).ok());
  Result<std::vector<NcclSetting>> fixed = parse_nccl_options("premul=on,window=on", "nccl:premul=on,window=on", 22809);
  ASSERT_TRUE(fixed.ok()) << fixed.error().text();
  EXPECT_EQ(fixed->front().name, "nccl:premul=on,window=on");
  EXPECT_EQ(fixed->front().fixed_knobs.size(), 2u);
  EXPECT_FALSE(parse_nccl_options("all-algorithms,window=on", "nccl:all-algorithms,window=on", 22600).ok());
}

// On this machine: the specs exist, draw every call knob per run, and where there is no GPU
// say so instead of launching worlds that would fail.
TEST(NcclBackend, SpecsOnThisMachine) {
  Result<std::vector<RankBackendSpec>> specs = nccl_backend_specs("algo=tree", "nccl:algo=tree");
  ASSERT_TRUE(specs.ok()) << specs.error().text();
  ASSERT_EQ(specs->size(), 1u);
  const RankBackendSpec& spec = specs->front();
  EXPECT_EQ(spec.name, "nccl:algo=tree");
  EXPECT_EQ(spec.capabilities.collectives, std::vector<Collective>{Collective::AllReduce});
  EXPECT_EQ(spec.capabilities.memory, "device");
  ASSERT_GE(spec.capabilities.knobs.size(), 3u);  // premul since NCCL 2.11; window where the runtime is 2.27+
  EXPECT_EQ(spec.capabilities.knobs[0].setting(1), "register=on");
  EXPECT_EQ(spec.capabilities.knobs[1].setting(0), "graph=off");
  EXPECT_EQ(spec.capabilities.knobs[2].setting(1), "premul=on");
  EXPECT_TRUE(is_vendor_backend(spec.name));
  EXPECT_FALSE(spec.fault_environment.empty());
  Result<std::vector<std::unique_ptr<Backend>>> backends = make_backends("nccl");
  ASSERT_TRUE(backends.ok()) << backends.error().text();
  ASSERT_EQ(backends->size(), 1u);
  if (spec.cannot_run_here.empty()) GTEST_SKIP() << "this machine has a GPU: ctest -L gpu runs NCCL";
  EXPECT_NE(spec.cannot_run_here.find("no CUDA device"), std::string::npos) << spec.cannot_run_here;
  EXPECT_EQ(backends->front()->cannot_run_here(), spec.cannot_run_here);
  EXPECT_NE(nccl_description().find("no CUDA device"), std::string::npos);
}

}  // namespace
}  // namespace collcheck
