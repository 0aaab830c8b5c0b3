// The registry of reference algorithms: each name (`ring`, `tree`, ...) with the collectives
// it implements, and one generator per (algorithm, collective) that returns a Schedule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "impls/link/hook.h"
#include "impls/schedule/schedule.h"

namespace collcheck {

// Tuning a generator accepts; tests turn `chunk` down to reach pipelined paths with little data.
struct Knobs {
  std::size_t chunk = 0;  // elements per pipeline chunk; 0: the generator's default
  int channels = 1;       // parallel pipelines, each over its own slice of the data
  int fan_in = 4;         // innet: children per switch in the aggregation tree
  // How our executors protect messages (`reliable=on`, `timeout=MS`, `retries=N`); schedules
  // ignore it.
  LinkProtocol protocol = {};
  // The cuda engine's `p2p=on`: receivers read each piece from the sender's memory
  // (cuda::EngineOptions::peer_reads); set only by @cuda and @cuda-host's options, ignored by
  // schedules and other transports.
  bool peer_reads = false;
};

using Generator = Schedule (*)(const Case& shape, const Knobs& knobs);

struct Algorithm {
  std::string_view name;  // ring tree rhd innet pairwise bruck chain binomial rd
  Collective collective;
  std::string_view description;  // one line, for `collcheck list`
  Generator generate;
  // The same schedule made on demand, participant by participant (Schedule::make_steps); null
  // where the algorithm has only the stored form.
  Generator on_demand = nullptr;
};

// Whether make_schedule stores every step, or returns a schedule whose steps are made on demand
// where the algorithm can (the same steps in the same order; a stored one where it cannot).
enum class Form : std::uint8_t { Stored, OnDemand };

std::span<const Algorithm> all_algorithms();
std::string algorithm_names();  // "ring, tree, ..." without repeats

// The schedule of `name` for the shape's collective; an error names the algorithm or the
// collective and lists what exists. Knobs are validated (channels 1..64, fan_in 2..64).
Result<Schedule> make_schedule(std::string_view name, const Case& shape, const Knobs& = {}, Form form = Form::Stored);

// The form an executor that can read either should ask for: made on demand where the algorithm
// can and its stored schedule would hold more than kStoredStepsAtMost steps (48 MiB), else stored.
inline constexpr std::uint64_t kStoredStepsAtMost = std::uint64_t{1} << 20;
Form form_for(std::string_view name, const Case& shape, const Knobs& = {});
// Whether `name` can make its schedule of the collective on demand.
bool has_on_demand_form(std::string_view name, Collective);

// How big the schedule of `name` for the shape will be, estimated without building it: at least
// its steps (within a small factor) and its scratch. An error where `name` lacks the collective.
Result<ScheduleSize> estimate_schedule(std::string_view name, const Case& shape, const Knobs& = {});

}  // namespace collcheck
