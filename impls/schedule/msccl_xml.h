// MSCCL's XML algorithm files (`<algo>` / `<gpu>` / `<tb>` / `<step>`) read into collcheck's
// schedule model: the reader checks the file as MSCCL's loader would and more (every receive has
// its send, every dependency resolves, no cycle), then builds a Schedule for any case it admits.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "impls/schedule/schedule.h"

namespace collcheck {

// MSCCL's step types: s r rcs rrs rrc rrcs cpy re nop.
enum class MscclOp : std::uint8_t {
  Send,                // s     send src to the thread block's send peer
  Recv,                // r     receive from its receive peer into dst
  RecvCopySend,        // rcs   receive into dst and forward it to the send peer
  RecvReduceSend,      // rrs   src ⊕ received, forwarded to the send peer, stored nowhere
  RecvReduceCopy,      // rrc   dst = src ⊕ received
  RecvReduceCopySend,  // rrcs  dst = src ⊕ received, and forwarded to the send peer
  Copy,                // cpy   dst = src
  Reduce,              // re    dst = dst ⊕ src (consecutive re steps into one dst fuse: several sources)
  Nop,                 // nop   moves nothing; its dependency waits before the next step
};
std::string_view name(MscclOp);  // the XML type: "rrs"

struct MscclStep {
  MscclOp op = MscclOp::Nop;
  BufferKind source_buffer = BufferKind::Input, destination_buffer = BufferKind::Input;
  int source_offset = -1, destination_offset = -1;  // in chunks
  int count = 0;                                    // in chunks
  int depends_block = -1, depends_step = -1;        // depid, deps: -1 when none
  bool signals = false;                             // hasdep: others may wait for it
  int line = 0;
  // Filled by the checks: the steps (thread block, step) it waits for, its own dependency
  // and those of the nops just before it, each resolved to the step whose signal ends the wait.
  std::vector<std::pair<int, int>> waits;
};

struct MscclThreadBlock {
  int send_peer = -1, recv_peer = -1;  // gpus, -1: none
  int channel = 0;
  int line = 0;
  std::vector<MscclStep> steps;  // index = the XML attribute s
};

struct MscclGpu {
  int input_chunks = 0, output_chunks = 0, scratch_chunks = 0;
  int line = 0;
  std::vector<MscclThreadBlock> blocks;  // index = the XML attribute id
  // Filled by the checks: every step but the nops, as (thread block, step), in an order that
  // keeps each block's order and every dependency (the participant's flattened script).
  std::vector<std::pair<int, int>> order;
};

struct MscclAlgorithm {
  std::string file;  // as named to the reader, for messages
  std::string name, protocol;
  Collective collective = Collective::AllReduce;
  int ngpus = 0;
  bool in_place = false;
  int chunks_per_loop = 1;     // nchunksperloop
  std::vector<MscclGpu> gpus;  // index = the XML attribute id
};

// Reads and checks a file; errors name the file, line and element ("f.xml:12: <step s=\"3\">
// of gpu 0 tb 1: ..."), never crash. parse_msccl_xml reads text already in memory.
Result<MscclAlgorithm> read_msccl_file(const std::string& path);
Result<MscclAlgorithm> parse_msccl_xml(std::string_view text, const std::string& file);

// The checks across elements, run by the readers: peers and channels pair every receive with
// its send, dependencies resolve, and each gpu's steps flatten without a cycle.
Status check_msccl(MscclAlgorithm&);

// The shapes a file admits, as MSCCL selects it: its collective, ngpus ranks, its layout (in
// place or not), sum, prod, min or max, and a total count (count, or nranks * count for
// all-gather, reduce-scatter and all-to-all) that nchunksperloop divides.
std::size_t msccl_count_multiple(const MscclAlgorithm&);        // what `count` must be a multiple of
std::string msccl_refusal(const MscclAlgorithm&, const Case&);  // why it does not run a case; "" when it does
std::string msccl_shapes(const MscclAlgorithm&);  // "allreduce on 4 ranks in place, count a multiple of 4"

// The schedule of an admitted case: one participant per gpu, one stream per thread block, a
// chunk of total count / nchunksperloop elements (docs/schedules.md has the step mapping).
Result<Schedule> msccl_schedule(const MscclAlgorithm&, const Case&);

// A message about the schedule ("rank 2 step 5 (...)") with each step also named as the file
// names it ("[gpu 2 tb 0 step 3 rrs, line 31]"), and output elements with their chunk.
std::string msccl_explain(const MscclAlgorithm&, const Case&, const std::string& message);

// "gpu 2 tb 0 step 3 (rrs, line 31)".
std::string msccl_step_name(const MscclAlgorithm&, int gpu, int block, int step);

}  // namespace collcheck
