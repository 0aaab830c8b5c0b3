// One case on a launched world: the request sent to every rank, and the replies collected until
// the deadline and judged: a rank that died is a `crash`, one that is silent a `hang`, one the
// fault plan stopped or killed counts as having seen an error, and so does one still inside the
// call a second after a peer's exception ended the run (it may wait for that peer for ever).
#include "impls/worlds/launched_world.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <poll.h>

#include "impls/worlds/launched_backend.h"
#include "impls/worlds/wire.h"
#include "impls/worlds/worker.h"
#include "reference/numbers.h"

namespace collcheck {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kCrashGrace = std::chrono::seconds(1);  // after one rank died or threw, how long the others get

bool threw(const RankRun& run) { return run.outcome == Outcome::Detected && run.error.starts_with(kExceptionWords); }

// After a rank threw, the ones still silent (not dead, not taken away by the plan) wait for it
// inside the call: each counts as detected, its world broken, and not as a hang.
void excuse_waiting_for_exception(std::vector<std::optional<RankRun>>& replies, const std::vector<std::string>& died,
                                  const std::vector<std::string>& planned) {
  const auto thrower = std::find_if(replies.begin(), replies.end(),
                                    [](const std::optional<RankRun>& reply) { return reply && threw(*reply); });
  if (thrower == replies.end()) return;
  const std::string why =
      "still inside the call when rank " + std::to_string(thrower - replies.begin()) + "'s exception ended the run";
  for (std::size_t r = 0; r < replies.size(); ++r) {
    if (!replies[r] && died[r].empty() && planned[r].empty()) replies[r] = RankRun::ended(Outcome::Detected, why, true);
  }
}

// What collect() has heard so far from the ranks of one case.
struct Hearing {
  explicit Hearing(std::size_t n) : replies(n), died(n), planned(n), frames(n) {}
  std::vector<std::optional<RankRun>> replies;
  std::vector<std::string> died, planned;  // planned: stopped or killed by the fault plan
  std::vector<Frame> frames;
  std::size_t settled = 0;                  // ranks that answered, died or were stopped
  std::optional<SteadyTime> first_trouble;  // when the first rank died or threw: the others get kCrashGrace

  bool waiting(std::size_t r) const { return !replies[r] && died[r].empty() && planned[r].empty(); }
  void trouble() { first_trouble = first_trouble.value_or(Clock::now()); }
};

// The deadline, or sooner the end of the grace after the first rank died or threw.
SteadyTime hear_until(const Hearing& hearing, SteadyTime deadline) {
  return hearing.first_trouble ? std::min(deadline, *hearing.first_trouble + kCrashGrace) : deadline;
}

// How a rank whose connection closed without a word died.
constexpr std::string_view kEndedWithoutWords = "its process ended";

// Waits (a second at most, and not past `until`) for any rank still waited for to say something.
void poll_waiting(const std::vector<ControlSocket>& ranks, const Hearing& hearing, SteadyTime until) {
  std::vector<pollfd> polls;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    if (hearing.waiting(r)) polls.push_back(pollfd{ranks[r].fd(), POLLIN, 0});
  }
  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
  ::poll(polls.data(), polls.size(), static_cast<int>(std::clamp<long long>(wait, 0, 1000)));
}

// Takes the frame rank r just completed: dying words are kept and reading goes on (true); a stop
// by the fault plan or a reply settles the rank (false). A reply's frame goes once it is read (its
// results, every timed call's outputs of a checked bench, are copied out of it: held twice for one
// rank at a time, not for every rank).
bool take_frame(std::size_t r, std::map<std::size_t, std::string>& dying_words, Hearing& hearing) {
  Frame& frame = hearing.frames[r];
  if (frame.kind == FrameKind::Dying) {
    std::string words(reinterpret_cast<const char*>(frame.payload.data()), frame.payload.size());
    if (words.starts_with(kPlannedFaultWords)) {
      hearing.planned[r] = words.substr(kPlannedFaultWords.size());
      ++hearing.settled;
      return false;
    }
    dying_words[r] = std::move(words);
    return true;
  }
  Result<RankRun> run = wire::decode_run(frame.payload);
  frame.payload = {};
  hearing.replies[r] = run ? std::move(*run) : RankRun::ended(Outcome::Crash, run.error().message);
  if (threw(*hearing.replies[r])) hearing.trouble();
  ++hearing.settled;
  return false;
}

// Reads what rank r has sent until it is settled or has no more to read now; a closed
// connection is its death, in the words it said last if any.
void hear_from(std::size_t r, ControlSocket& rank, std::map<std::size_t, std::string>& dying_words, Hearing& hearing) {
  for (;;) {
    Result<bool> got = rank.receive_some(hearing.frames[r]);
    if (!got) {
      hearing.died[r] = dying_words[r].empty() ? std::string(kEndedWithoutWords) : dying_words[r];
      ++hearing.settled;
      hearing.trouble();
      return;
    }
    if (!*got || !take_frame(r, dying_words, hearing)) return;
  }
}

}  // namespace

RepeatedRun LaunchedWorld::run(const Case& c, const RunOptions& options, double deadline) {
  const RankRunOptions rank_options = rank_run_options(options, deadline);
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    wire::RunRequest request{c, rank_options, std::nullopt, options.fault_plan, options.schedule_seed};
    if (options.inputs != nullptr) request.input = options.inputs->at(r);
    if (Status sent = ranks_[r].send(FrameKind::Run, wire::encode(request)); !sent) {
      return ended(Outcome::Crash, "rank " + std::to_string(r) + " is gone: " + sent.error().message);
    }
  }
  return collect(seconds_from_now(deadline), deadline);
}

RepeatedRun LaunchedWorld::collect(SteadyTime deadline, double seconds) {
  Hearing hearing(ranks_.size());
  while (hearing.settled < ranks_.size()) {
    const SteadyTime until = hear_until(hearing, deadline);
    if (Clock::now() >= until) break;
    poll_waiting(ranks_, hearing, until);
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      if (hearing.waiting(r)) hear_from(r, ranks_[r], dying_words_, hearing);
    }
  }
  return judge(std::move(hearing.replies), hearing.died, hearing.planned, seconds);
}

RepeatedRun LaunchedWorld::judge(std::vector<std::optional<RankRun>> replies, const std::vector<std::string>& died,
                                 const std::vector<std::string>& planned, double seconds) {
  kill_planned(planned);
  // A rank that said how it died is the cause; mpirun then takes the others down with it.
  const bool any_words = !dying_words_.empty();
  excuse_waiting_for_exception(replies, died, planned);
  std::string dead;
  std::vector<std::uint64_t> silent;
  bool unexplained = false;  // a rank ended without a word: the log may say why
  for (std::size_t r = 0; r < replies.size(); ++r) {
    if (!died[r].empty() && (!any_words || dying_words_.contains(r))) {
      dead += (dead.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " died: " + died[r];
      unexplained = unexplained || died[r] == kEndedWithoutWords;
    } else if (!replies[r] && died[r].empty() && planned[r].empty()) {
      silent.push_back(r);
    }
  }
  if (!dead.empty()) {
    stop(false);  // mpirun has written what it saw by the time it exits
    return ended(Outcome::Crash, dead + (unexplained ? last_log_notes_ : std::string()));
  }
  if (!silent.empty()) {
    stop(false);
    char limit[32];
    std::snprintf(limit, sizeof limit, "%.1f", seconds);
    return ended(Outcome::Hang, ranks_text(silent) + " did not return within the deadline of " + limit + " s");
  }
  // The ranks the plan took away count as having seen an error: the run is at least
  // `detected`, judged otherwise on the others' replies.
  std::vector<RankRun> all;
  for (std::size_t r = 0; r < replies.size(); ++r) {
    if (!planned[r].empty()) {
      all.push_back(RankRun::ended(Outcome::Detected, "taken away by the fault plan (" + planned[r] + ")", true));
    } else {
      all.push_back(std::move(*replies[r]));
    }
    broken_ = broken_ || all.back().world_broken;
  }
  return wire::combine(std::move(all));
}

RepeatedRun LaunchedWorld::ended(Outcome outcome, std::string error) {
  RepeatedRun run;
  run.outcome = outcome;
  run.error = std::move(error);
  return run;
}

}  // namespace collcheck
