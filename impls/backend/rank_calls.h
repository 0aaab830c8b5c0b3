// One rank's buffers laid out as NCCL lays them between guard zones, and the loop of calls
// (repeated or timed) that every rank backend over a library shares (mpi, plugins).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "impls/backend/rank_backend.h"
#include "impls/backend/world.h"
#include "impls/link/guarded_buffer.h"
#include "reference/case.h"

namespace collcheck {

// This rank's buffers for one case: out of place an input and an output buffer; in place one
// buffer, the input inside the output for all-gather and the output inside the input for
// reduce-scatter (reference/collective.h, in_place_layout). Empty buffers are null pointers
// where the case asks for that (Case::empty_as_null).
struct RankBuffers {
  GuardedBuffer input, output;  // in place: only `input` is allocated and holds both
  std::byte* in = nullptr;      // where the input starts
  std::byte* out = nullptr;     // where the output starts (NCCL's layout)
  std::size_t in_bytes = 0, out_bytes = 0;
};
RankBuffers make_rank_buffers(const Case&, int rank);

// Writes the input of call `call` (the case with seed + call), or the given input.
void fill_rank_input(const Case&, int rank, std::uint64_t call, const std::vector<std::byte>* given, RankBuffers&);

// The output, the input after the call, and whether the guard zones held.
RankResult rank_result(const RankBuffers&);

// How one call of the collective ended: `error` empty on success, else what went wrong;
// `refused` where the library refused the call as outside what it takes (RunEnding::refused).
struct CallEnd {
  CallEnd(std::string what = {}) : error(std::move(what)) {}  // NOLINT: a call's error converts
  static CallEnd refusal(std::string why) {
    CallEnd end(std::move(why));
    end.refused = true;
    return end;
  }
  bool ok() const { return error.empty(); }
  std::string error;
  bool refused = false;
};
using RankCall = std::function<CallEnd()>;
// The rank's run ended by a call that failed: detected, with its words, refused where it was.
RankRun ended_by(CallEnd end);

// Runs the calls the options ask for: `calls` times, each on its own inputs, with every call's
// results; or timed, inputs written once, `warmup` untimed calls, the ranks started together on
// the world, then `iterations` timed ones (seconds their mean; results when `checked`). A call's
// error ends the run `detected` (refused, where the call was), its error followed by which call
// it was: "(call 2 of 3)".
//
// Where the call's buffers live elsewhere (a GPU), `upload` copies the rank's buffers there after
// each write of inputs and `download` brings them back before results are read: both outside
// the timed region, and either may be empty.
struct RankTransfers {
  std::function<void()> upload, download;
};
RankRun run_rank_calls(const Case&, const RankRunOptions&, World&, RankBuffers&, const RankCall& call,
                       const RankTransfers& transfers = {});

}  // namespace collcheck
