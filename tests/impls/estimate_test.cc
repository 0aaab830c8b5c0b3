// The memory estimates of the impls rooms against what they estimate: every algorithm's
// estimated steps and scratch bound the schedule it builds from above and stay within a small
// factor of it, and the simulator's and prover's estimates grow with the schedule.
#include <gtest/gtest.h>

#include <string>

#include "impls/algorithms/algorithms.h"
#include "impls/prove/proof.h"
#include "impls/sim/simulator.h"
#include "impls/sim/topology.h"
#include "reference/counts.h"

namespace collcheck {
namespace {

struct Built {
  std::uint64_t steps = 0;
  std::uint64_t scratch = 0;
};

Built measure(const Schedule& schedule) {
  Built built;
  for (const Participant& participant : schedule.participants) {
    built.steps += participant.steps.size();
    built.scratch += participant.scratch;
  }
  return built;
}

TEST(ScheduleEstimate, BoundsEveryAlgorithmFromAboveWithinAFactor) {
  const Knobs knob_sets[] = {Knobs{}, Knobs{3, 1, 4}, Knobs{64, 3, 2}, Knobs{1, 2, 5}};
  for (const Algorithm& algorithm : all_algorithms()) {
    for (int nranks : {1, 2, 3, 5, 8, 11, 16, 17}) {
      for (std::size_t count : {0, 1, 7, 100, 333}) {
        for (const Knobs& knobs : knob_sets) {
          for (bool in_place : {false, true}) {
            Case shape;
            shape.collective = algorithm.collective;
            shape.nranks = nranks;
            shape.count = count;
            shape.in_place = in_place;
            shape.root = nranks / 2;
            if (per_rank_counts(shape.collective)) {  // counts spread around `count`, out of place
              if (in_place) continue;
              set_counts(shape, spread_counts(shape.collective, nranks, count));
            }
            const std::string what = std::string(algorithm.name) + " " + to_string(shape) + " chunk " +
                                     std::to_string(knobs.chunk) + " channels " + std::to_string(knobs.channels);
            Result<Schedule> schedule = make_schedule(algorithm.name, shape, knobs);
            Result<ScheduleSize> size = estimate_schedule(algorithm.name, shape, knobs);
            ASSERT_TRUE(schedule) << what;
            ASSERT_TRUE(size) << what;
            const Built built = measure(*schedule);
            EXPECT_EQ(size->participants, schedule->participants.size()) << what;
            EXPECT_GE(size->steps, built.steps) << what;
            EXPECT_GE(size->scratch_elements, built.scratch) << what;
            // Not wildly above where every rank has data (below that, steps of empty pieces are left
            // out): a refusal must not turn away what fits.
            if (count >= 4 * static_cast<std::size_t>(nranks) && nranks > 1) {
              EXPECT_LE(size->steps, 8 * built.steps + 2 * size->participants) << what;
            }
          }
        }
      }
    }
  }
}

TEST(ScheduleEstimate, KnowsAlgorithmsByCollective) {
  Case shape;
  shape.collective = Collective::AllToAll;
  shape.nranks = 4;
  EXPECT_FALSE(estimate_schedule("ring", shape));
  EXPECT_FALSE(estimate_schedule("wheel", shape));
  EXPECT_TRUE(estimate_schedule("pairwise", shape));
}

// The table's simulate row: 64 ranks, 1M elements, chunks of one element -- over ten gigabytes
// of steps (264 M steps of 48 bytes), estimated without building one.
TEST(ScheduleEstimate, SeesAHugeScheduleComing) {
  Case shape;
  shape.nranks = 64;
  shape.count = std::size_t{1} << 20;
  Result<ScheduleSize> size = estimate_schedule("ring", shape, Knobs{1, 1, 4});
  ASSERT_TRUE(size);
  EXPECT_GT(schedule_memory(*size).total(), std::uint64_t{10} << 30);
  // The engine's share grows with it: per step and per message, all of them on the wire at worst.
  EXPECT_GT(simulation_memory(shape, *size, SimulationOptions()).total(), std::uint64_t{8} << 30);
}

// A ring has a stream per neighbour and channel; an all-to-all one per pair. The schedule's
// estimate bounds them before it is built (exactly for pairwise, whose pairs are every pair); once
// built, a sample of participants' sends gives them and the topology links on their routes, which
// the route cache will hold.
TEST(SimulationEstimate, CountsTheStreamLinksOfTheSchedule) {
  Case ring_case;
  ring_case.nranks = 16;
  ring_case.count = 1024;
  const Topology ring16 = *make_topology("ring:16");
  EXPECT_EQ(sample_streams(*make_schedule("ring", ring_case, Knobs{0, 1, 4}), ring16).links, 16u);
  EXPECT_EQ(sample_streams(*make_schedule("ring", ring_case, Knobs{0, 3, 4}), ring16).links, 48u);
  EXPECT_GE(estimate_schedule("ring", ring_case, Knobs{0, 3, 4})->stream_links, 48u);
  Case all_to_all = ring_case;
  all_to_all.collective = Collective::AllToAll;
  all_to_all.nranks = 64;
  const Schedule pairwise = *make_schedule("pairwise", all_to_all, Knobs{});
  const Topology ring = *make_topology("ring:64");
  const std::uint64_t pairs = sample_streams(pairwise, ring).links;
  EXPECT_EQ(pairs, 64u * 63);
  const ScheduleSize size = *estimate_schedule("pairwise", all_to_all, Knobs{});
  EXPECT_EQ(size.stream_links, pairs);
  const SimulationOptions timing(0, nullptr, false);
  EXPECT_EQ(simulation_memory(all_to_all, size, timing, pairs).total(),
            simulation_memory(all_to_all, size, timing).total());
  const std::uint64_t a_ring_of_them = 64;  // a link per rank
  EXPECT_GT(simulation_memory(all_to_all, size, timing).total(),
            simulation_memory(all_to_all, size, timing, a_ring_of_them).total() + (pairs - a_ring_of_them) * 100);

  std::uint64_t route_links = 0;
  for (int from = 0; from < 64; ++from) {
    for (int to = 0; to < 64; ++to) route_links += ring.route(ring.gpus[from], ring.gpus[to]).size();
  }
  const StreamSample sampled = sample_streams(pairwise, ring);
  EXPECT_EQ(sampled.links, pairs) << "every rank of an all-to-all has as many";
  EXPECT_EQ(sampled.route_links, route_links) << "every rank of a ring topology sees the same distances";
  const StreamSample neighbours = sample_streams(*make_schedule("ring", ring_case, Knobs{0, 1, 4}), ring16);
  EXPECT_EQ(neighbours.links, 16u);
  EXPECT_EQ(neighbours.route_links, 16u) << "a hop each";
  EXPECT_GT(route_memory(sampled.links, sampled.route_links), route_links * sizeof(int));
}

TEST(ProofEstimate, GrowsWithTheSchedule) {
  Case small;
  small.nranks = 8;
  small.count = 100;
  Case large = small;
  large.nranks = 4096;
  large.count = 3 * 4096 + 2;
  const MemoryEstimate few = proof_memory(small, *estimate_schedule("ring", small));
  const MemoryEstimate many = proof_memory(large, *estimate_schedule("ring", large));
  EXPECT_GT(few.total(), 0u);
  EXPECT_GT(many.total(), std::uint64_t{1} << 30);
  EXPECT_GT(many.part("proof state"), 0u);
}

// A reduced element's contributions stay one run, held in the 16-byte Element itself, for the
// ring, for recursive halving on a power of two and for in-network aggregation; recursive halving folding extra ranks
// in keeps an allowance of several runs per element (a vector of its own): the estimate says which.
TEST(ProofEstimate, AllowsRunsPerReducedElementAsTheAlgorithmMakesThem) {
  Case shape;
  shape.collective = Collective::ReduceScatter;
  shape.nranks = 1024;
  shape.count = 1;
  auto per_element = [](const MemoryEstimate& estimate) {
    for (const MemoryPart& part : estimate.parts) {
      if (part.name == "proof state") return part.detail.substr(part.detail.find(" x ") + 3);
    }
    return std::string();
  };
  EXPECT_EQ(per_element(proof_memory(shape, *estimate_schedule("rhd", shape, Knobs{}))), "16 B, messages queued");
  EXPECT_EQ(per_element(proof_memory(shape, *estimate_schedule("ring", shape, Knobs{}))), "16 B, messages queued");
  EXPECT_EQ(per_element(proof_memory(shape, *estimate_schedule("innet", shape, Knobs{}))), "16 B, messages queued");
  Case folded = shape;
  folded.nranks = 1000;
  const ScheduleSize size = *estimate_schedule("rhd", folded, Knobs{});
  EXPECT_EQ(size.runs_per_reduced_element, 3u);
  EXPECT_EQ(per_element(proof_memory(folded, size)), "104 B, messages queued");
  // Not reducing, nothing but the Element.
  Case gather = shape;
  gather.collective = Collective::AllGather;
  EXPECT_EQ(per_element(proof_memory(gather, *estimate_schedule("ring", gather, Knobs{}))), "16 B, messages queued");
}

}  // namespace
}  // namespace collcheck
