// MSCCL's XML algorithm files: the eight real files (COLLCHECK_MSCCL_DIR) read, proven and run
// on the simulator; copies broken by hand with one realistic mistake each, refused with the
// step named; bad XML and inconsistent files refused with the element and line.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "impls/prove/proof.h"
#include "impls/schedule/msccl_xml.h"
#include "impls/sim/sim_backend.h"

namespace collcheck {
namespace {

const std::string kDirectory = COLLCHECK_MSCCL_DIR;

std::string text_of(const std::string& file) {
  std::ifstream in(kDirectory + "/" + file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text with its n-th (from 0) occurrence of `from` replaced by `to`; fails the test when
// there is no such occurrence (an edit that silently does nothing would prove nothing).
std::string edited(std::string text, const std::string& from, const std::string& to, int n = 0) {
  std::size_t at = text.find(from);
  for (int i = 0; i < n && at != std::string::npos; ++i) at = text.find(from, at + 1);
  EXPECT_NE(at, std::string::npos) << "no occurrence " << n << " of " << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

Case admitted(const MscclAlgorithm& a, std::size_t multiples) {
  Case c;
  c.collective = a.collective;
  c.nranks = a.ngpus;
  c.in_place = a.in_place;
  c.count = multiples * msccl_count_multiple(a);
  return c;
}

// Reads the text and proves it at chunks of 1 and 2 elements: "" when proven, else why not
// (the reader's refusal or the proof's failure, in the file's terms).
std::string verdict(const std::string& text) {
  Result<MscclAlgorithm> a = parse_msccl_xml(text, "broken.xml");
  if (!a) return a.error().text();
  for (std::size_t multiples : {1, 2}) {
    const Case c = admitted(*a, multiples);
    Result<Schedule> s = msccl_schedule(*a, c);
    if (!s) return s.error().text();
    const Proof proof = prove(*s);
    if (!proof.ok) return msccl_explain(*a, c, proof.message);
  }
  return "";
}

const char* const kFiles[] = {
    "allgather_rd_8gpu.xml",       "allgather_ring_8gpu_1ch.xml", "allreduce_1step_4gpu.xml",
    "allreduce_hier_4x2.xml",      "allreduce_rdh_8gpu.xml",      "allreduce_ring_4gpu_1ch.xml",
    "allreduce_ring_8gpu_2ch.xml", "alltoall_allpairs_8gpu.xml",
};

TEST(Msccl, EveryRealFileProves) {
  for (const char* file : kFiles) {
    const std::string text = text_of(file);
    ASSERT_FALSE(text.empty()) << kDirectory << "/" << file << " is missing";
    EXPECT_EQ(verdict(text), "") << file;
  }
}

TEST(Msccl, EveryRealFileRunsOnTheSimulator) {
  for (const char* file : kFiles) {
    Result<SimVariant> variant = algorithm_variant("schedule:" + kDirectory + "/" + file);
    ASSERT_TRUE(variant) << variant.error().text();
    std::unique_ptr<Backend> backend = make_sim_backend(*variant, Knobs{}, "schedule@sim");
    const Capabilities capabilities = backend->capabilities();
    Result<MscclAlgorithm> a = read_msccl_file(kDirectory + "/" + file);
    ASSERT_TRUE(a);
    Case c = admitted(*a, 3);
    c.dtype = DType::Int32;
    EXPECT_TRUE(capabilities.supports(c)) << file << ": " << capabilities.unsupported(c);
    const RepeatedRun run = backend->run(c, RunOptions{});
    EXPECT_EQ(run.outcome, Outcome::Ok) << file << ": " << run.error;
    // Only the shapes the file admits: another rank count, layout or count is refused.
    Case other = c;
    other.count += 1;
    EXPECT_EQ(capabilities.supports(other), msccl_count_multiple(*a) == 1) << file;
    other = c;
    other.in_place = !c.in_place;
    EXPECT_FALSE(capabilities.supports(other)) << file;
    other = c;
    other.nranks += 1;
    EXPECT_FALSE(capabilities.supports(other)) << file;
  }
}

// One realistic mistake per copy; the refusal names the step (gpu, tb, step and line).
struct Mistake {
  const char* what;
  const char* file;
  std::string from, to;
  int occurrence;
  std::string named;  // what the refusal must contain
};

TEST(Msccl, BrokenCopiesAreRefusedWithTheStepNamed) {
  const Mistake mistakes[] = {
      {"a wrong source offset", "allgather_ring_8gpu_1ch.xml", R"(type="s" srcbuf="o" srcoff="0")",
       R"(type="s" srcbuf="o" srcoff="1")", 0,
       "(send output[1, 2) to rank 1) [gpu 0 tb 0 step 0 (s, line 4)]: reads output element 1 (output chunk 1)"},
      {"a missing reduction (rrs as rcs)", "allreduce_ring_4gpu_1ch.xml", R"(type="rrs")", R"(type="rcs")", 0,
       "rank 0 output element 3 (output chunk 3) holds {index 3: ranks 1..3} (last written by"},
      {"a missing reduction (re dropped)", "allreduce_1step_4gpu.xml", R"(type="re")", R"(type="nop")", 0,
       "output element"},
      {"a dependency cycle", "allgather_rd_8gpu.xml",
       R"(type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1")",
       R"(type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="1" deps="0")", 0,
       "gpu 0: a cycle in dependencies: gpu 0 tb 0 step 1 (r, line"},
      {"a receive with no send", "allreduce_ring_4gpu_1ch.xml", R"(type="s")", R"(type="nop")", 0,
       "gpu 1 tb 0 step 6 (r, line 21): receives message 5 from gpu 0 on channel 0, but gpu 0 sends only 5"},
      {"a wrong receive peer", "allreduce_ring_4gpu_1ch.xml", R"(<tb id="0" send="2" recv="0")",
       R"(<tb id="0" send="2" recv="3")", 0,
       "gpu 1 tb 0 step 1 (rrs, line 16): receives message 0 from gpu 3 on channel 0, but gpu 3 sends only 0"},
      {"a wrong peer", "alltoall_allpairs_8gpu.xml", R"(<tb id="7" send="1")", R"(<tb id="7" send="2")", 0,
       "tb 8 of gpu 0 and tb 7 both send to gpu 2 on channel 0"},
      {"a wrong count", "allgather_rd_8gpu.xml", R"(type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="2")",
       R"(type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1")", 0,
       "gpu 2 tb 0 step 1 (r, line 35): receives 2 chunks, but its message 0 is gpu 0 tb 1 step 0 (s, line 8)"},
      {"a race between thread blocks (a dependency dropped)", "allreduce_1step_4gpu.xml",
       R"(type="re" srcbuf="s" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="1" deps="1")",
       R"(type="re" srcbuf="s" srcoff="0" dstbuf="i" dstoff="0" cnt="1" depid="-1" deps="-1")", 0,
       "[gpu 0 tb 0 step 4 (re, line 8)]: reads scratch element 0, which rank 0 step 1 (recv from rank 1 into "
       "scratch[0, 4)) [gpu 0 tb 1 step 1 (r, line 14)] on another stream touches too, and nothing orders the two: "
       "a race between streams"},
      {"a step out of range", "allreduce_ring_4gpu_1ch.xml", R"(srcoff="3")", R"(srcoff="4")", 0,
       "broken.xml:5: <step s=\"1\"> of tb 0 of gpu 0: its source chunks [4, 5) of the input buffer lie outside its 4 "
       "chunks"},
  };
  for (const Mistake& mistake : mistakes) {
    const std::string why = verdict(edited(text_of(mistake.file), mistake.from, mistake.to, mistake.occurrence));
    EXPECT_NE(why, "") << mistake.what << " passed";
    EXPECT_NE(why.find(mistake.named), std::string::npos) << mistake.what << ": " << why;
  }
}

TEST(Msccl, BadXmlIsRefusedWithItsLine) {
  const std::string ring = text_of("allreduce_ring_4gpu_1ch.xml");
  const std::pair<std::string, std::string> cases[] = {
      {ring.substr(0, 900), "broken.xml:"},  // cut short
      {edited(ring, R"(type="rrs")", R"(type="rsr")"),
       "broken.xml:5: <step s=\"1\"> of tb 0 of gpu 0: type=\"rsr\": must be one of s, r"},
      {edited(ring, R"(coll="allreduce")", R"(coll="allgatherv")"),
       "broken.xml:1: <algo>: coll=\"allgatherv\": must be one of allreduce, allgather, reduce_scatter, alltoall"},
      {edited(ring, R"(srcbuf="i")", R"(srcbuf="x")"), "srcbuf=\"x\": must be one of i, o, s"},
      {edited(ring, R"(<gpu id="1")", R"(<gpu id="2")"), "broken.xml:13: <gpu id=\"2\">: gpus must be listed 0, 1, 2"},
      {edited(ring, R"(cnt="1")", R"(cnt="x")"), "cnt=\"x\": must be an integer in 1.."},
      {"<nothing/>", "broken.xml:1: the root element is <nothing>, not an MSCCL <algo>"},
      {"", "broken.xml:1: not well-formed XML"},
  };
  for (const auto& [text, named] : cases) {
    const std::string why = verdict(text);
    EXPECT_NE(why.find(named), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace collcheck
