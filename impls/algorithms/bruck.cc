// All-to-all by Bruck's algorithm: ceil(log2 n) rounds, many blocks each, through a rotated copy
// in scratch.
#include "impls/algorithms/generators.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "impls/algorithms/generator_support.h"

namespace collcheck {

// Block b of a rank's input is what it sends to rank b; block b of its output is what it
// received from rank b.
//
// Bruck's algorithm works as follows. First a local `rotation`: rank r puts its block for rank
// r+j at index j of a temporary array in scratch, so index j means "j ranks further on".
// Then in the round of `distance` d (1, 2, 4, ... below n) every index j with bit d set moves d
// ranks on: rank r packs those blocks into one message to r+d, and unpacks the message from
// r-d into the same indices. After all rounds an index j has travelled exactly j ranks, so
// rank r's index j holds the block rank r-j meant for it; the `final rotation` copies it to
// output block r-j. Each round moves about half the data in one message: ceil(log2 n)
// messages instead of n-1, for any n. A round that moves one index sends it without packing.
//   In place the rotation reads the whole input into scratch before anything is written; the
// own block (index 0) never moves and stays where it is.
//
// The data is cut into pieces -- each channel owning a slice of every block, cut into chunks of
// at most knobs.chunk elements -- and the rounds run whole per piece, each channel on its own
// stream.
//
// Written once, as one rank's steps in order (`alltoall_steps`, made on demand: at 16,384 ranks
// the schedule has billions of steps, and a proof by rotation holds rank 0's alone); the stored
// schedule is those sequences made to the end.

namespace {

using generators::at;
using generators::block_of;
using generators::check;
using generators::copy_alone;
using generators::modulo;
using generators::Piece;
using generators::recv_step;
using generators::send_step;

// The indices each round moves: in the round of distance d, every index j with bit d set.
std::vector<std::vector<int>> moved_indices(int n) {
  std::vector<std::vector<int>> moved;
  for (int distance = 1; distance < n; distance *= 2) {
    std::vector<int> indices;
    for (int j = 1; j < n; ++j) {
      if ((j & distance) != 0) indices.push_back(j);
    }
    check(!indices.empty(), "every round moves some index");
    moved.push_back(std::move(indices));
  }
  check(static_cast<int>(moved.size()) == generators::ceil_log2(n), "ceil(log2 n) rounds");
  return moved;
}

// Scratch: the rotated array (n blocks), then per channel a packing and an unpacking area,
// each `most` pieces of that channel's largest piece.
struct StagingAreas {
  std::size_t most;                  // the most indices one round moves
  std::vector<std::size_t> staging;  // where channel c's areas start
  std::vector<std::size_t> largest;  // channel c's largest piece
  std::size_t end;                   // the scratch a rank needs
};

StagingAreas staging_areas(const Case& shape, const Knobs& knobs, const std::vector<std::vector<int>>& moved) {
  StagingAreas areas{0, std::vector<std::size_t>(static_cast<std::size_t>(knobs.channels)),
                     std::vector<std::size_t>(static_cast<std::size_t>(knobs.channels)),
                     static_cast<std::size_t>(shape.nranks) * shape.count};
  for (const std::vector<int>& indices : moved) areas.most = std::max(areas.most, indices.size());
  for (int channel = 0; channel < knobs.channels; ++channel) {
    const auto c = static_cast<std::size_t>(channel);
    const std::size_t part = slice(shape.count, static_cast<std::size_t>(knobs.channels), c).count;
    areas.largest[c] = knobs.chunk == 0 ? part : std::min(knobs.chunk, part);
    areas.staging[c] = areas.end;
    areas.end += 2 * areas.most * areas.largest[c];
  }
  return areas;
}

// Where one piece lives in a rank's scratch: the rotated array's index j, and the i-th place of
// its channel's packing and unpacking areas.
struct PieceInScratch {
  Piece piece;
  std::size_t count;      // elements per block
  std::size_t packing;    // where the channel's packing area starts
  std::size_t unpacking;  // where the channel's unpacking area starts

  Range rotated(int j) const { return at(BufferKind::Scratch, block_of(j, count, piece)); }
  Range packed(std::size_t i) const { return at(BufferKind::Scratch, packing + i * piece.count, piece.count); }
  Range unpacked(std::size_t i) const { return at(BufferKind::Scratch, unpacking + i * piece.count, piece.count); }
};

// What every rank's steps are made from, shared by all ranks' sequences.
struct BruckPlan {
  Case shape;
  Knobs knobs;
  std::vector<std::vector<int>> moved;  // moved_indices(n)
  StagingAreas areas;
};

// Rank r's steps as a cursor that fills a batch (a coroutine yields the batch whenever it is full,
// and a cursor keeps the coroutine's body small): piece by piece, the `rotation` (copy k puts the
// input block for rank r+k at index k; k = 0, the own block, goes straight to the output out of
// place), each round of `distance` (its `indices` packed, one message to r+d and one from r-d,
// unpacked into the same indices; one index travels without packing), and the `final rotation`
// (index k came from rank r-k). A copy onto itself or of nothing is left out.
class BruckSteps {
 public:
  BruckSteps(std::shared_ptr<const BruckPlan> plan, int r)
      : plan_(std::move(plan)), r_(r), n_(plan_->shape.nranks),
        pieces_(generators::pieces(plan_->shape.count, plan_->knobs)) {
    if (!pieces_.empty()) enter_piece();
  }

  // Adds steps to `batch` while it has room for a message's two; false once the program has ended.
  bool fill(generators::StepBatch& batch) {
    while (batch.room() >= 2) {
      if (piece_ == pieces_.size()) return false;
      switch (phase_) {
        case Phase::Rotation: rotation(batch); break;
        case Phase::Packing: packing(batch, true); break;
        case Phase::Message: message(batch); break;
        case Phase::Unpacking: packing(batch, false); break;
        case Phase::Final: final_rotation(batch); break;
      }
    }
    return true;
  }

 private:
  enum class Phase { Rotation, Packing, Message, Unpacking, Final };

  // The piece `piece_` begins: where it lives in scratch, and its rotation.
  void enter_piece() {
    const Piece& piece = pieces_[piece_];
    const StagingAreas& areas = plan_->areas;
    const auto c = static_cast<std::size_t>(piece.channel);
    check(piece.count <= areas.largest[c], "a piece fits its channel's staging areas");
    place_ =
        PieceInScratch{piece, plan_->shape.count, areas.staging[c], areas.staging[c] + areas.most * areas.largest[c]};
    round_ = 0;
    enter(Phase::Rotation);
  }
  void enter(Phase phase) {
    phase_ = phase;
    next_ = 0;
  }
  // The round `round_` begins, or the final rotation where none is left.
  void enter_round() {
    if (round_ == plan_->moved.size()) {
      enter(Phase::Final);
      next_ = 1;
      return;
    }
    indices_ = &plan_->moved[round_];
    enter(indices_->size() == 1 ? Phase::Message : Phase::Packing);
  }
  void copy(generators::StepBatch& batch, Range from, Range to) const {
    batch.add_copy(from, to, place_.piece.channel);
  }
  // Rank r's block of a buffer, for r at most one turn of the ring away (r_ + k and r_ - k, 0 <= k < n).
  Range block(BufferKind buffer, int rank) const {
    return at(buffer, block_of(generators::wrapped(rank, n_), place_.count, place_.piece));
  }

  void rotation(generators::StepBatch& batch) {
    if (next_ == 0) {
      next_ = 1;
      if (!plan_->shape.in_place) copy(batch, block(BufferKind::Input, r_), block(BufferKind::Output, r_));
    }
    for (; next_ < static_cast<std::size_t>(n_) && batch.room() > 0; ++next_) {
      const auto k = static_cast<int>(next_);
      copy(batch, block(BufferKind::Input, r_ + k), place_.rotated(k));
    }
    if (next_ == static_cast<std::size_t>(n_)) enter_round();
  }
  void packing(generators::StepBatch& batch, bool packs) {
    const std::vector<int>& indices = *indices_;
    for (; next_ < indices.size() && batch.room() > 0; ++next_) {
      if (packs) {
        copy(batch, place_.rotated(indices[next_]), place_.packed(next_));
      } else {
        copy(batch, place_.unpacked(next_), place_.rotated(indices[next_]));
      }
    }
    if (next_ < indices.size()) return;
    if (packs) {
      enter(Phase::Message);
    } else {
      ++round_;
      enter_round();
    }
  }
  void message(generators::StepBatch& batch) {
    const std::vector<int>& indices = *indices_;
    const int distance = 1 << round_;
    const int to = modulo(r_ + distance, n_), from = modulo(r_ - distance, n_);
    const int channel = place_.piece.channel;
    if (indices.size() == 1) {
      batch.add(send_step(to, place_.rotated(indices[0]), channel));
      batch.add(recv_step(from, place_.rotated(indices[0]), channel));
      ++round_;
      enter_round();
      return;
    }
    const std::size_t message = indices.size() * place_.piece.count;
    batch.add(send_step(to, at(BufferKind::Scratch, place_.packing, message), channel));
    batch.add(recv_step(from, at(BufferKind::Scratch, place_.unpacking, message), channel));
    enter(Phase::Unpacking);
  }
  void final_rotation(generators::StepBatch& batch) {
    for (; next_ < static_cast<std::size_t>(n_) && batch.room() > 0; ++next_) {
      const auto k = static_cast<int>(next_);
      copy(batch, place_.rotated(k), block(BufferKind::Output, r_ - k));
    }
    if (next_ < static_cast<std::size_t>(n_)) return;
    if (++piece_ < pieces_.size()) enter_piece();
  }

  std::shared_ptr<const BruckPlan> plan_;
  int r_, n_;
  std::vector<Piece> pieces_;
  std::size_t piece_ = 0;  // of pieces_
  PieceInScratch place_{};
  Phase phase_ = Phase::Rotation;
  std::size_t round_ = 0;                      // of plan_->moved
  const std::vector<int>* indices_ = nullptr;  // the indices round_ moves
  std::size_t next_ = 0;                       // the next copy of the phase (index k, or the i-th moved index)
};

StepSequence alltoall_steps(std::shared_ptr<const BruckPlan> plan, int r) {
  BruckSteps steps(std::move(plan), r);
  generators::StepBatch batch;
  while (steps.fill(batch)) co_yield batch.take();
  if (!batch.empty()) co_yield batch.take();
}

}  // namespace

Schedule bruck_alltoall_on_demand(const Case& shape, const Knobs& knobs) {
  const int n = shape.nranks;
  if (n == 1) {
    Schedule schedule = generators::start(shape, "bruck");
    copy_alone(schedule, input_elements(shape));
    return schedule;
  }
  std::vector<std::vector<int>> moved = moved_indices(n);
  const StagingAreas areas = staging_areas(shape, knobs, moved);
  auto plan = std::make_shared<const BruckPlan>(BruckPlan{shape, knobs, std::move(moved), areas});
  Schedule schedule = generators::on_demand(shape, "bruck", [plan](int r) { return alltoall_steps(plan, r); });
  for (Participant& participant : schedule.participants) participant.scratch = areas.end;
  return schedule;
}

Schedule bruck_alltoall(const Case& shape, const Knobs& knobs) {
  return stored(bruck_alltoall_on_demand(shape, knobs));
}

}  // namespace collcheck
