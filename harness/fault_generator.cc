// Random fault plans: mild faults drawn from RapidCheck's Random (so a seed gives the same plans
// everywhere), shrinking along faults/plan.h's simpler(), and the `--faults` choice parsed.
#include "harness/fault_generator.h"

#include <algorithm>
#include <array>

#include "reference/case.h"
#include "reference/key_values.h"
#include "reference/random.h"

namespace collcheck {
namespace {

// Uniform draws from one RapidCheck Random; values come from short lists so that plans print
// the way people type them.
class Draw {
 public:
  explicit Draw(const rc::Random& random) : random_(random) {}
  std::uint64_t below(std::uint64_t n) { return random_.next() % n; }
  bool chance(std::uint64_t percent) { return below(100) < percent; }
  template <typename T, std::size_t N>
  T one_of(const std::array<T, N>& values) {
    return values[below(N)];
  }

 private:
  rc::Random random_;
};

bool message_kind(FaultKind kind) {
  return kind == FaultKind::Drop || kind == FaultKind::Delay || kind == FaultKind::Corrupt ||
         kind == FaultKind::Duplicate || kind == FaultKind::Reorder;
}

bool needs_link(FaultKind kind) { return kind == FaultKind::LinkDown || kind == FaultKind::LinkFlap; }

// A start time: a simulated run of a small case lasts microseconds, a launched one milliseconds,
// so both scales are drawn.
constexpr std::array<double, 7> kStarts = {0, 0, 1e-6, 5e-6, 2e-5, 2e-4, 2e-3};

Target link_target(Draw& draw, int nranks) {
  const int from = static_cast<int>(draw.below(static_cast<std::uint64_t>(nranks)));
  const int to = (from + 1 + static_cast<int>(draw.below(static_cast<std::uint64_t>(nranks - 1)))) % nranks;
  return Target{Target::Scope::Link, from, to, 0};
}

Target rank_target(Draw& draw, int nranks) {
  return Target{Target::Scope::Rank, 0, 0, static_cast<int>(draw.below(static_cast<std::uint64_t>(nranks)))};
}

// Drop, delay, corrupt, duplicate, reorder: a link mostly, a rank or every message sometimes;
// a few messages from one of the first ones on, or a small probability, rarely unbounded; or,
// where the plan is placed (`position`), only the first or the last message of each stream's
// call (sent or sent again). A corruption, half the time, flips bits where bugs hide: the first
// or last byte, the tail after the last whole word, a chunk or piece boundary.
void draw_message_fault(Draw& draw, Fault& f, int nranks, StreamPosition position) {
  const std::uint64_t where = draw.below(100);
  f.target = where < 60 ? link_target(draw, nranks) : where < 85 ? rank_target(draw, nranks) : Target{};
  if (draw.chance(50)) f.trigger.after = draw.below(8);
  if (draw.chance(15)) f.trigger.at = draw.one_of(kStarts);
  if (draw.chance(30)) f.trigger.p = draw.one_of(std::array<double, 4>{0.01, 0.05, 0.1, 0.25});
  // Unbounded (times=0) only one time in five, and then mostly with p < 1.
  f.trigger.times = draw.chance(20) ? 0 : 1 + draw.below(3);
  if (f.kind == FaultKind::Delay) {
    f.ms = draw.one_of(std::array<double, 8>{0.01, 0.05, 0.1, 0.5, 1, 2, 5, 20});
    if (draw.chance(30)) f.jitter = draw.one_of(std::array<double, 3>{0.1, 1, 5});
  }
  if (f.kind == FaultKind::Corrupt) f.bits = 1 + static_cast<int>(draw.below(8));
  if (position != StreamPosition::Any) {
    f.trigger.message = position;
    f.trigger.after = 0;  // the position says which message
  }
  if (f.kind == FaultKind::Corrupt && draw.chance(50)) {
    f.where =
        draw.one_of(std::array<BytePlace, 4>{BytePlace::First, BytePlace::Last, BytePlace::Tail, BytePlace::Boundary});
  }
}

Fault draw_fault(Draw& draw, FaultKind kind, int nranks, StreamPosition position) {
  Fault f;
  f.kind = kind;
  if (message_kind(kind)) {
    draw_message_fault(draw, f, nranks, position);
    return f;
  }
  f.trigger.at = draw.one_of(kStarts);
  if (needs_link(kind)) {
    f.target = link_target(draw, nranks);
    if (kind == FaultKind::LinkFlap) f.period = draw.one_of(std::array<double, 4>{0.5, 1, 2, 5});
    return f;
  }
  f.target = rank_target(draw, nranks);
  if (kind == FaultKind::Straggler) {
    f.factor = draw.one_of(std::array<double, 4>{1.5, 2, 4, 8});
    if (draw.chance(30)) f.ms = draw.one_of(std::array<double, 3>{0.01, 0.1, 1});
  }
  return f;
}

}  // namespace

bool transient(const Fault& f) {
  switch (f.kind) {
    case FaultKind::Delay:
    case FaultKind::Straggler:
    case FaultKind::LinkFlap: return true;
    case FaultKind::LinkDown:
    case FaultKind::Stop:
    case FaultKind::Kill: return false;
    default: return f.trigger.times > 0 || f.trigger.p < 1;
  }
}

bool transient(const FaultPlan& plan) {
  return std::all_of(plan.faults.begin(), plan.faults.end(), [](const Fault& f) { return transient(f); });
}

FaultPlan fit(const FaultPlan& plan, int nranks) {
  FaultPlan out;
  for (Fault f : plan.faults) {
    if (f.target.scope == Target::Scope::Link) {
      if (nranks < 2) {
        if (needs_link(f.kind)) continue;
        f.target = Target{};
      } else {
        f.target.from %= nranks;
        f.target.to %= nranks;
        if (f.target.to == f.target.from) f.target.to = (f.target.from + 1) % nranks;
      }
    }
    if (f.target.scope == Target::Scope::Rank) f.target.rank %= nranks;
    out.faults.push_back(f);
  }
  return out;
}

rc::Gen<FaultPlan> fault_plan_generator(int nranks, std::vector<FaultKind> swarm) {
  if (swarm.empty()) swarm.assign(all_fault_kinds().begin(), all_fault_kinds().end());
  return rc::Gen<FaultPlan>([nranks, swarm](const rc::Random& random, int) {
    Draw draw(random);
    // Links need two ranks: on one rank the plan is drawn for two and fitted back.
    const int world = std::max(nranks, 2);
    FaultPlan plan;
    const std::uint64_t count = 1 + draw.below(3);
    // One plan in four is placed: all its message faults on the first, or all on the last,
    // message of each stream's call, so that no fault of it hits an earlier message first.
    const std::uint64_t placed = draw.below(8);
    const StreamPosition position = placed == 0   ? StreamPosition::First
                                    : placed == 1 ? StreamPosition::Last
                                                  : StreamPosition::Any;
    for (std::uint64_t i = 0; i < count; ++i) {
      plan.faults.push_back(draw_fault(draw, swarm[draw.below(swarm.size())], world, position));
    }
    return rc::shrinkable::shrinkRecur(fit(plan, nranks),
                                       [](const FaultPlan& p) { return rc::seq::fromContainer(simpler(p)); });
  });
}

std::vector<FaultKind> draw_swarm(std::uint64_t seed) {
  const std::uint64_t bits = mix64(seed ^ 0x5a7a4d5f0f1e2d3cull);
  std::vector<FaultKind> swarm;
  for (std::size_t i = 0; i < fault_kind_count; ++i) {
    if ((bits >> i) & 1) swarm.push_back(all_fault_kinds()[i]);
  }
  if (swarm.empty()) swarm.push_back(all_fault_kinds()[(bits >> 32) % fault_kind_count]);
  return swarm;
}

std::vector<FaultKind> swarm_for_case(const FaultChoice& choice, std::uint64_t seed, std::size_t index) {
  if (choice.swarm_given) return choice.swarm;
  const std::uint64_t batch = index / kSwarmBatch;
  return draw_swarm(batch == 0 ? seed : mix64(seed ^ mix64(batch ^ 0xba7c4ull)));
}

Result<FaultChoice> parse_fault_choice(std::string_view text, std::uint64_t /*seed*/) {
  FaultChoice choice;
  if (text == "random") {
    choice.random = true;
    return choice;
  }
  if (text.starts_with("random:")) {
    choice.random = true;
    choice.swarm_given = true;
    for (std::string_view name : split_list(text.substr(7))) {
      Result<FaultKind> kind = parse_fault_kind(name);
      if (!kind) return Error{"--faults", "random:KIND,...: " + kind.error().message};
      if (std::find(choice.swarm.begin(), choice.swarm.end(), *kind) == choice.swarm.end())
        choice.swarm.push_back(*kind);
    }
    return choice;
  }
  Result<FaultPlan> plan = parse_fault_plan(text);
  if (!plan) return plan.error();
  if (Status valid = validate(*plan, kMaxRanks); !valid) return valid.error();
  choice.plan = std::move(plan).value();
  return choice;
}

std::string describe(const FaultChoice& choice, std::uint64_t seed) {
  if (!choice.random) return to_string(choice.plan);
  if (!choice.swarm_given) {
    return "random, a swarm per " + std::to_string(kSwarmBatch) + " cases (from seed " + std::to_string(seed) + ")";
  }
  std::string kinds;
  for (FaultKind kind : choice.swarm) kinds += (kinds.empty() ? "" : ", ") + std::string(to_string(kind));
  return "random, swarm " + kinds + " (given)";
}

}  // namespace collcheck
