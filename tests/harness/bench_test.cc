// `collcheck bench`: its flags and their errors, the size sweep, nccl-tests' bandwidth factors,
// the check that catches a mutant, the sim backend's timed runs, and the CSV, SVG and HTML it writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/bench.h"
#include "harness/cli_bench.h"
#include "impls/algorithms/algorithms.h"
#include "impls/registry.h"
#include "impls/sim/sim_backend.h"
#include "impls/sim/simulator.h"
#include "reference/oracle.h"
#include "tests/support/cases.h"
#include "tests/support/html_page.h"

namespace collcheck {
namespace {

struct Ran {
  int status = 0;
  std::string out, err;
};

Ran bench_cli(std::vector<std::string> args) {
  std::vector<std::string_view> views(args.begin(), args.end());
  std::ostringstream out, err;
  Ran ran;
  ran.status = cli::run_bench(views, out, err);
  ran.out = out.str();
  ran.err = err.str();
  return ran;
}

// The size column of every table row (lines that do not start with '#').
std::vector<std::uint64_t> sizes_printed(const std::string& out) {
  std::vector<std::uint64_t> sizes;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    sizes.push_back(std::stoull(line));
  }
  return sizes;
}

std::unique_ptr<Backend> backend(const std::string& spec) { return std::move(make_backends(spec).value()[0]); }

struct BadFlag {
  std::vector<std::string> args;
  std::string error;  // what stderr starts with after "collcheck bench: "
};

TEST(BenchArguments, EachErrorNamesTheFlagAndWhatIsAllowed) {
  const std::vector<BadFlag> cases = {
      {{"-b", "x"}, "-b 'x': must be an integer in 0..68719476736"},
      {{"--minbytes", "2K", "-e", "1K"}, "--minbytes 2048: must be at most -e (1024)"},
      {{"-e", "1P"}, "-e '1P': must be an integer"},
      {{"-f", "1"}, "-f 1: must be 2..1024"},
      {{"-f", "2", "-i", "8"}, "-i cannot be combined with -f"},
      {{"-i", "0"}, "-i 0: must be 1..68719476736"},
      {{"-b", "1", "-e", "1G", "-i", "1"}, "-i 1: the sweep would have more than 10000 sizes"},
      {{"-n", "0"}, "-n 0: must be 1..1000000"},
      {{"--iters", "many"}, "--iters 'many': must be an integer"},
      {{"-w", "-1"}, "-w '-1': must be an integer"},
      {{"-c", "2"}, "-c '2': must be 0 or 1"},
      {{"-d", "complex"}, "-d 'complex': must be one of "},
      {{"-o", "xor"}, "-o 'xor': must be one of "},
      {{"-r", "4"}, "-r 4: must be 0..3, or -1 or all for every root"},
      {{"--ranks", "0"}, "--ranks 0: must be 1..16384"},
      {{"--collective", "gather"}, "--collective 'gather'"},
      {{"--collective", "alltoall"}, "--collective alltoall: ring@sim implements allreduce, allgather, reducescatter"},
      {{"--collective", "allgatherv"}, "--collective allgatherv: bench times the collectives of one count"},
      {{"--backend", "ring@moon"}, "--backend 'ring@moon': transport 'moon'"},
      {{"--backend", "all@sim"}, "--backend 'all@sim' names "},
      {{"--vs", "wheel@sim"}, "--vs 'wheel@sim': "},
      {{"--deadline", "soon"}, "--deadline 'soon': must be a duration more than 0 s and at most 24h: a number with"},
      {{"--deadline", "nan"}, "--deadline 'nan': must be a duration"},
      {{"--deadline", "inf"}, "--deadline 'inf': must be a duration"},
      {{"--deadline", "0"}, "--deadline '0': must be more than 0 s and at most 24h"},
      {{"--deadline", "1e10"}, "--deadline '1e10': must be more than 0 s and at most 24h"},
      {{"-b", "+8"}, "-b '+8': must be an integer"},
      {{"-b", "0x10"}, "-b '0x10': must be an integer"},
      {{"--backend", "ring\x01@sim"}, "--backend 'ring\\x01@sim': "},
      {{"--backend", std::string(100000, 'r')}, "--backend '" + std::string(60, 'r') + "'... (100000 bytes): "},
      {{"-\x1b[2J", "1"}, "-\\x1b[2J is not an option"},
      {{"--csv", "/nonexistent-dir/bench.csv"}, "--csv '/nonexistent-dir/bench.csv': cannot be opened for writing"},
      {{"-z", "1"}, "-z is not an option: short options are -b, -e, -f"},
      {{"--frobnicate", "1"}, "--frobnicate is not an option: options are --minbytes"},
  };
  for (const BadFlag& bad : cases) {
    const Ran ran = bench_cli(bad.args);
    EXPECT_EQ(ran.status, 2) << bad.args[0];
    EXPECT_TRUE(ran.out.empty()) << bad.args[0];
    EXPECT_EQ(ran.err.rfind("collcheck bench: " + bad.error, 0), 0u) << "got: " << ran.err;
  }
  const std::string dtype_error = bench_cli({"-d", "complex"}).err;
  EXPECT_NE(dtype_error.find("f32"), std::string::npos);
  EXPECT_NE(dtype_error.find(", or all"), std::string::npos);
}

TEST(BenchSweep, FactorAndStepGiveNcclTestsSizes) {
  bench::Settings s;
  s.min_bytes = 8;
  s.max_bytes = 1024;
  EXPECT_EQ(bench::sweep_sizes(s), (std::vector<std::uint64_t>{8, 16, 32, 64, 128, 256, 512, 1024}));
  s.max_bytes = 1000;  // the last step would pass -e: it stops at 512
  EXPECT_EQ(bench::sweep_sizes(s).back(), 512u);
  s.step_bytes = 250;
  s.min_bytes = 0;
  EXPECT_EQ(bench::sweep_sizes(s), (std::vector<std::uint64_t>{0, 250, 500, 750, 1000}));
  s.min_bytes = 2000;
  EXPECT_TRUE(bench::sweep_sizes(s).empty());
}

TEST(BenchSweep, TheCommandPrintsOneRowPerSize) {
  const Ran factor = bench_cli({"-b", "8", "-e", "1K", "-f", "2", "-n", "2", "-w", "0"});
  ASSERT_EQ(factor.status, 0) << factor.err;
  EXPECT_EQ(sizes_printed(factor.out), (std::vector<std::uint64_t>{8, 16, 32, 64, 128, 256, 512, 1024}));
  const Ran step = bench_cli({"-b", "1K", "-e", "4K", "-i", "1K", "-n", "2", "-w", "0"});
  ASSERT_EQ(step.status, 0) << step.err;
  EXPECT_EQ(sizes_printed(step.out), (std::vector<std::uint64_t>{1024, 2048, 3072, 4096}));
}

// nccl-tests' PERFORMANCE.md: busbw = algbw * 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
// reduce-scatter and all-to-all, 1 for broadcast and reduce; size is the larger buffer.
TEST(BenchBandwidth, BusbwFactorsAreNcclTests) {
  struct Expect {
    Collective collective;
    std::size_t count;  // NCCL's count for 4 MiB of float on 4 ranks
    double busbw;       // GB/s at 1 ms
  };
  const Expect expects[] = {{Collective::AllReduce, 1048576, 4.194304 * 6 / 4},
                            {Collective::AllGather, 262144, 4.194304 * 3 / 4},
                            {Collective::ReduceScatter, 262144, 4.194304 * 3 / 4},
                            {Collective::AllToAll, 262144, 4.194304 * 3 / 4},
                            {Collective::Broadcast, 1048576, 4.194304},
                            {Collective::Reduce, 1048576, 4.194304}};
  for (const Expect& e : expects) {
    bench::Settings s;
    s.collective = e.collective;
    const Case c = bench::bench_case(s, DType::Float32, RedOp::Sum, 0, 4 << 20);
    EXPECT_EQ(c.count, e.count) << name(e.collective);
    const bench::Bandwidth b = bench::bandwidth(c, 1e-3);
    EXPECT_DOUBLE_EQ(b.algbw, 4.194304) << name(e.collective);
    EXPECT_DOUBLE_EQ(b.busbw, e.busbw) << name(e.collective);
  }
  Case eight = testing::make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 1000, 8);
  EXPECT_DOUBLE_EQ(bench::bandwidth(eight, 1e-6).busbw, 4.0 * 1.75);
}

TEST(BenchCheck, CatchesAMutantAndPassesRing) {
  bench::Settings s;
  s.iterations = 3;
  s.warmup = 1;
  const Case c = bench::bench_case(s, DType::Float32, RedOp::Sum, 0, 4096);
  for (bool in_place : {false, true}) {
    Case placed = c;
    placed.in_place = in_place;
    auto mutant = backend("mutant:own-twice@sim");
    const bench::Measurement bad = bench::measure(*mutant, placed, s);
    ASSERT_EQ(bad.state, bench::Measurement::State::Ok);
    ASSERT_TRUE(bad.wrong.has_value());
    EXPECT_GT(*bad.wrong, 0u) << "in place " << in_place;
    auto ring = backend("ring@sim");
    const bench::Measurement good = bench::measure(*ring, placed, s);
    ASSERT_TRUE(good.wrong.has_value());
    EXPECT_EQ(*good.wrong, 0u);
    EXPECT_GT(good.seconds, 0);
  }
  const Ran ran = bench_cli({"--backend", "mutant:own-twice@sim", "-b", "1K", "-e", "1K", "-n", "2", "-w", "0"});
  EXPECT_EQ(ran.status, 1);
  EXPECT_NE(ran.out.find("# Out of bounds values : "), std::string::npos);
  EXPECT_NE(ran.out.find(" FAILED"), std::string::npos);
}

TEST(BenchCheck, OutOfPlaceChecksEveryTimedCall) {
  // Three timed calls of 256 elements on 4 ranks, each wrong in every element of rank 0's
  // double-counted share: the count triples with the calls.
  bench::Settings s;
  s.warmup = 0;
  const Case c = bench::bench_case(s, DType::Float32, RedOp::Sum, 0, 1024);
  auto mutant = backend("mutant:own-twice@sim");
  s.iterations = 1;
  const std::size_t one = bench::measure(*mutant, c, s).wrong.value();
  s.iterations = 3;
  EXPECT_EQ(bench::measure(*mutant, c, s).wrong.value(), 3 * one);
}

// A backend that times but hands back no outputs, as a vendor library might.
class Silent final : public Backend {
 public:
  std::string name() const override { return "silent"; }
  Capabilities capabilities() const override { return make_backends("ring@sim").value()[0]->capabilities(); }
  RepeatedRun run(const Case&, const RunOptions&) override {
    RepeatedRun run;
    run.seconds = 1e-3;
    return run;
  }
};

TEST(BenchCheck, NoOutputsPrintsNotAvailable) {
  Silent silent;
  bench::Settings s;
  s.min_bytes = s.max_bytes = 1024;
  Backend* backends[] = {&silent};
  std::ostringstream out;
  bench::Report report;
  EXPECT_EQ(bench::run(s, backends, {}, out, report), 0);
  EXPECT_NE(out.str().find(" n/a\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("(times measured)"), std::string::npos);
  s.check = false;
  out.str("");
  bench::run(s, backends, {}, out, report);
  EXPECT_NE(out.str().find(" N/A\n"), std::string::npos) << out.str();
}

TEST(BenchSimBackend, TimedIsThePredictedTimeOfOneCall) {
  const Case c = testing::make_case(Collective::AllReduce, DType::Float32, RedOp::Sum, 4096, 4);
  const double predicted =
      simulate(make_schedule("ring", c, Knobs{}).value(), sim_fabric(4), SimulationOptions(0, nullptr, false)).time;
  RunOptions options;
  options.timed = true;
  options.warmup = 2;
  options.iterations = 5;
  auto ring = backend("ring@sim");
  const RepeatedRun unchecked = ring->run(c, options);
  EXPECT_DOUBLE_EQ(unchecked.seconds, predicted);
  EXPECT_TRUE(unchecked.calls.empty());
  options.checked = true;
  const RepeatedRun checked = ring->run(c, options);
  EXPECT_DOUBLE_EQ(checked.seconds, predicted);
  ASSERT_EQ(checked.calls.size(), 5u);
  EXPECT_EQ(bench::count_wrong(c, checked), 0u);
}

TEST(BenchSimBackend, TimedInPlaceCallsReadTheLastCallsOutput) {
  // In place, inputs written once: after one warmup call every rank holds S, so timed call k
  // (k = 0, 1) holds 4^(k+1) * S (int32 sums wrap, which is exact).
  Case c = testing::make_case(Collective::AllReduce, DType::Int32, RedOp::Sum, 100, 4);
  c.in_place = true;
  RunOptions options;
  options.timed = true;
  options.checked = true;
  options.warmup = 1;
  options.iterations = 2;
  const RepeatedRun run = backend("ring@sim")->run(c, options);
  ASSERT_EQ(run.calls.size(), 2u);
  const Expected once = expected(c, 0);
  for (std::size_t k = 0; k < 2; ++k) {
    const std::uint32_t factor = k == 0 ? 4 : 16;
    for (std::size_t i = 0; i < c.count; ++i) {
      const auto s = static_cast<std::uint32_t>(once.bits(i));
      EXPECT_EQ(load_bits(DType::Int32, run.calls[k][3].output, i), static_cast<std::uint32_t>(s * factor))
          << k << " " << i;
    }
  }
}

TEST(BenchMemory, CopyBandwidthIsMeasured) {
  const bench::MemoryCopy copy = bench::measure_memory_copy(std::size_t{4} << 20, 3);
  EXPECT_EQ(copy.bytes, std::size_t{4} << 20);
  EXPECT_GT(copy.seconds, 0);
  EXPECT_GT(copy.bandwidth, 0);
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(BenchFiles, CsvAndSvgAreWellFormed) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("bench_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const Ran ran = bench_cli({"--backend", "ring@sim", "--vs", "tree@sim", "-b", "1K", "-e", "64K", "-n", "2", "-w", "0",
                             "--csv", (dir / "b.csv").string(), "--svg", (dir / "b.svg").string()});
  ASSERT_EQ(ran.status, 0) << ran.err;
  EXPECT_NE(ran.out.find("ring@sim (times predicted by the simulated fabric)"), std::string::npos);
  EXPECT_NE(ran.out.find("# memory copy bandwidth: "), std::string::npos);
  EXPECT_NE(ran.out.find("# Avg busbw ratio      : "), std::string::npos);
  EXPECT_NE(ran.out.find("tree@sim   1."), std::string::npos) << ran.out;  // the vs row carries the ratios

  const std::string csv = read(dir / "b.csv");
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "backend,collective,size_bytes,count,type,redop,root,placement,time_us,algbw_gbps,busbw_gbps,wrong");
  std::size_t rows = 0, memory = 0;
  while (std::getline(lines, line)) {
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 11) << line;
    rows += line.starts_with("ring@sim,allreduce,") || line.starts_with("tree@sim,allreduce,");
    memory += line.starts_with("memory-copy,memcpy,");
  }
  EXPECT_EQ(rows, 7u * 2 * 2);  // sizes 1K..64K, two backends, two placements
  EXPECT_EQ(memory, 1u);

  const std::string svg = read(dir / "b.svg");
  EXPECT_TRUE(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  EXPECT_EQ(occurrences(svg, "<polyline"), 4u);  // per backend, out of place and in place
  EXPECT_EQ(occurrences(svg, "<polyline"), occurrences(svg, "</polyline>"));
  EXPECT_NE(svg.find("<title>ring@sim out-of-place</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>tree@sim out-of-place</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>memory copy bandwidth</title>"), std::string::npos);
  EXPECT_EQ(occurrences(svg, "<"), occurrences(svg, ">"));
  std::filesystem::remove_all(dir);
}

// --html: one page that parses as XML, with the plot inline and the CSV's table, loading nothing.
TEST(BenchFiles, HtmlPageHoldsThePlotAndTheTable) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("bench_test_" + std::to_string(::getpid()) + ".html");
  const Ran ran = bench_cli({"--backend", "ring@sim", "--vs", "mutant:drop-remainder@sim", "--ranks", "3", "-b", "1K",
                             "-e", "4K", "-n", "1", "-w", "0", "--html", file.string()});
  ASSERT_EQ(ran.status, 1) << ran.err;  // the mutant's elements are wrong
  const std::string page = read(file);
  std::filesystem::remove(file);
  pugi::xml_document document;
  ASSERT_NO_FATAL_FAILURE(testing::parse_page(page, document));
  EXPECT_EQ(document.select_nodes("//svg").size(), 1u);
  EXPECT_EQ(document.select_nodes("//svg/polyline").size(), 4u);
  const std::vector<std::vector<std::string>> cells = testing::table_cells(document.select_node("//table").node());
  ASSERT_EQ(cells.size(), 1u + 3 * 2 * 2 + 1);  // header; 1K..4K, two backends, two placements; memcpy
  EXPECT_EQ(cells[0].front(), "backend");
  EXPECT_EQ(cells[1][0], "ring@sim");
  EXPECT_EQ(cells[1][2], "1024");
  EXPECT_EQ(cells[1][11], "0");
  EXPECT_EQ(cells.back()[0], "memory-copy");
  // The mutant drops the remainder of counts that 3 ranks do not divide: its wrong rows are marked.
  EXPECT_GT(document.select_nodes("//tr[@class='flagged']").size(), 0u);
  for (const pugi::xpath_node& row : document.select_nodes("//tr[@class='flagged']"))
    EXPECT_EQ(std::string(row.node().first_child().child_value()), "mutant:drop-remainder@sim");
  const std::string summary = document.select_node("//pre[@class='summary']").node().child_value();
  EXPECT_NE(summary.find("# Out of bounds values : "), std::string::npos) << summary;
  EXPECT_EQ(testing::outside_reference(document), "");
}

TEST(BenchTable, TypeColumnSpellsNcclTestsNames) {
  EXPECT_EQ(bench::nccl_tests_name(DType::Float32), "float");
  EXPECT_EQ(bench::nccl_tests_name(DType::Float16), "half");
  EXPECT_EQ(bench::nccl_tests_name(DType::BFloat16), "bfloat16");
  EXPECT_EQ(bench::nccl_tests_name(DType::Float64), "double");
  EXPECT_EQ(bench::nccl_tests_name(DType::Int32), "int32");
  EXPECT_EQ(bench::nccl_tests_name(DType::UInt64), "uint64");
  EXPECT_EQ(bench::nccl_tests_name(DType::Float8E5M2), "f8e5m2");
  for (DType dtype : all_dtypes()) {  // -d takes every name the column prints
    EXPECT_EQ(parse_dtype(bench::nccl_tests_name(dtype)).value(), dtype) << bench::nccl_tests_name(dtype);
  }
}

TEST(BenchTable, RootedAndBlockCollectivesPrintNcclTestsColumns) {
  const Ran broadcast = bench_cli({"--backend", "chain@sim", "--collective", "broadcast", "-b", "1K", "-e", "1K", "-r",
                                   "all", "-n", "1", "-w", "0", "-d", "half"});
  ASSERT_EQ(broadcast.status, 0) << broadcast.err;
  for (int root = 0; root < 4; ++root) {
    EXPECT_NE(broadcast.out.find("1024           512      half    none       " + std::to_string(root)),
              std::string::npos)
        << broadcast.out;
  }
  const Ran allgather = bench_cli({"--collective", "allgather", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0"});
  ASSERT_EQ(allgather.status, 0) << allgather.err;
  EXPECT_NE(allgather.out.find("1024            64     float    none      -1"), std::string::npos) << allgather.out;
}

}  // namespace
}  // namespace collcheck
