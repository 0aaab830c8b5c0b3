// StepCursor (step_cursor.h): one stream's steps read in order, from a participant's stored
// steps or from its sequence made on demand.
#include <utility>

#include "impls/schedule/step_cursor.h"
#include "reference/cache_asks.h"

namespace collcheck {
namespace {

// How far ahead of the step a stream stands at it asks for a stored step's cache lines: far
// enough that they have come by the time the stream gets there (steps are read in order per
// participant but interleaved across thousands of them, so each would otherwise be a miss).
constexpr std::size_t kPrefetchSteps = 4;

}  // namespace

StepCursor::StepCursor(const std::vector<Step>& steps, std::vector<int> listed, std::size_t count)
    : stored_(&steps), listed_(std::move(listed)), count_(count) {
  settle();
}

StepCursor::StepCursor(const Schedule& schedule, int participant, int stream, std::size_t count)
    : schedule_(&schedule), participant_(participant), stream_(stream), count_(count) {
  restart();
}

void StepCursor::next() {
  ++position_;
  settle();
}

void StepCursor::restart() {
  position_ = 0;
  index_ = -1;
  if (schedule_ != nullptr) made_ = schedule_->make_steps(participant_);
  settle();
}

// Stands at the stream's step number position_, the stored step's or the next one made.
void StepCursor::settle() {
  if (finished()) {
    step_ = nullptr;
    return;
  }
  if (stored_ != nullptr) {
    const auto at = [this](std::size_t position) {
      return listed_.empty() ? static_cast<int>(position) : listed_[position];
    };
    index_ = at(position_);
    step_ = &(*stored_)[static_cast<std::size_t>(index_)];
    if (position_ + kPrefetchSteps < count_) {
      prefetch_whole(stored_->data() + at(position_ + kPrefetchSteps), sizeof(Step));
    }
    return;
  }
  // Made on demand: the participant's sequence, past the other streams' steps.
  do {
    const bool made = made_.next();
    ++index_;
    if (!made) {  // the sequence's end: uncounted, or fewer steps than counted (it changed between two readings)
      count_ = position_;
      step_ = nullptr;
      return;
    }
  } while (stream_ != kEveryStream && made_.step().stream != stream_);
  step_ = &made_.step();
}

}  // namespace collcheck
