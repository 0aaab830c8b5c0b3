// One stream's steps read in order, one at a time: the cursor through which the `sim` engine and
// the prover read a schedule, stored or made on demand, holding only the step it stands at.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "impls/schedule/schedule.h"

namespace collcheck {

// One stream's steps in order: the step the cursor stands at and that step's number among its
// participant's steps. Over stored steps (all of a participant's, or the stream's listed ones) or
// over a sequence made on demand (filtered to the stream where the participant has several).
class StepCursor {
 public:
  static constexpr int kEveryStream = -1;
  // A count not known before the steps are read: the cursor finishes where the sequence ends.
  static constexpr std::size_t kUncounted = std::numeric_limits<std::size_t>::max();
  // Stored: `listed` the stream's step numbers, or empty for all of `steps`.
  StepCursor(const std::vector<Step>& steps, std::vector<int> listed, std::size_t count);
  // Made on demand: participant p's steps of `stream` (kEveryStream: all), `count` of them
  // (kUncounted: as many as the sequence makes).
  StepCursor(const Schedule& schedule, int participant, int stream, std::size_t count);

  std::size_t count() const { return count_; }
  std::size_t position() const { return position_; }  // steps of the stream passed so far
  bool finished() const { return position_ == count_; }
  int index() const { return index_; }
  const Step& step() const { return *step_; }
  // Made on demand, when the next step needs the sequence to resume: what the resume writes (the
  // sequence's last batch, its frame's start); empty otherwise.
  std::span<const Step> batch_to_come() const {
    return stored_ == nullptr && made_.resumes_next() ? made_.last_batch() : std::span<const Step>{};
  }
  const void* frame() const { return made_.frame(); }
  void next();
  void restart();  // back to the first step (the next call of a run of several)

 private:
  void settle();

  const std::vector<Step>* stored_ = nullptr;
  std::vector<int> listed_;
  const Schedule* schedule_ = nullptr;
  int participant_ = 0;
  int stream_ = kEveryStream;
  StepSequence made_;
  std::size_t count_ = 0;
  std::size_t position_ = 0;
  int index_ = -1;
  const Step* step_ = nullptr;
};

}  // namespace collcheck
