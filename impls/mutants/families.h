// The mutants' families as the registry (mutants.cc) sees them: each family's schedules and
// reduction overrides, and the step surgery on the reference schedules they share (surgery.cc).
#pragma once

#include <cstddef>

#include "impls/algorithms/algorithms.h"
#include "impls/schedule/schedule.h"
#include "reference/result.h"

namespace collcheck::mutants {

// ---- surgery.cc: what every family shares.

// Rejects a case the hand-written schedules cannot take, as make_schedule() would.
Status accept_allreduce(const Case& shape);
// The generators never use `after`; the surgery relies on it to move steps freely.
void check_no_dependencies(const Participant& participant);
bool is_message(const Step& step);
Step make_step(StepKind kind, int peer, Range from, Range to, int channel = 0, int stream = 0);
// The unchanged ring, for the mutants that break only the reduction op or the backend around it.
Result<Schedule> ring_schedule(const Case& shape, const Knobs& knobs);

// ---- schedule_mutants.cc: the reference schedules with data misplaced, lost or counted twice.
Result<Schedule> drop_remainder(const Case& shape, const Knobs& knobs);
Result<Schedule> chunk_off_by_one(const Case& shape, const Knobs& knobs);
Result<Schedule> root_ignored(const Case& shape, const Knobs& knobs);
Result<Schedule> allgather_order(const Case& shape, const Knobs& knobs);
Result<Schedule> own_twice(const Case& shape, const Knobs& knobs);
Result<Schedule> write_past_end(const Case& shape, const Knobs& knobs);
Result<Schedule> gather_rotated(const Case& shape, const Knobs& knobs);

// ---- direct_mutants.cc: a direct all-reduce, bent in the order or the stream of its steps.
Result<Schedule> in_place_clobber(const Case& shape, const Knobs& knobs);
Result<Schedule> rank_order_reduce(const Case& shape, const Knobs& knobs);
Result<Schedule> nan_dropped_schedule(const Case& shape, const Knobs& knobs);

// ---- reduction_mutants.cc: the reduction op broken (ReductionOverride's members).
void reduce_through_float16(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
                            std::size_t count);
void reduce_dropping_nan(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
                         std::size_t count);
void reduce_dropping_edge_nan(DType dtype, RedOp op, const std::byte* a, const std::byte* b, std::byte* out,
                              std::size_t count);
void divide_by_peers(DType dtype, std::byte* data, std::size_t count, int nranks);

// ---- concurrency_mutants.cc: races between streams and ranks, and a cyclic wait.
Result<Schedule> interleaving_race(const Case& shape, const Knobs& knobs);
Result<Schedule> deadlock(const Case& shape, const Knobs& knobs);

}  // namespace collcheck::mutants
