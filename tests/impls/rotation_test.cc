// Proof by rotation: rank 0 alone stands for every rank where every rank's program is rank 0's
// turned (equal blocks), or a cover turned and cut (the ring's or pairwise all-to-all-v's blocks of
// unequal length); any one rank changed, or a collective whose outputs do not turn, sends the proof
// back to every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/prove/cover.h"
#include "impls/prove/proof.h"
#include "impls/prove/symmetry.h"
#include "reference/counts.h"
#include "tests/impls/proof_support.h"

namespace collcheck {
namespace {

using proof_support::on_demand;

// A schedule written by hand for `shape`: one participant per rank, no steps yet.
Schedule by_hand(Case shape) {
  Schedule schedule;
  schedule.algorithm = "hand";
  schedule.participants.resize(static_cast<std::size_t>(shape.nranks));
  schedule.shape = std::move(shape);
  return schedule;
}

// Where every channel's part splits into n equal blocks, every rank's ring program is rank 0's
// turned by its rank; where the blocks differ in length (17 elements on 8 ranks, or 12 per
// channel), it is the ring's cover turned and cut. Either way rank 0 alone runs, the proof says so,
// and it counts the steps and messages the full proof counts.
TEST(Proof, ProvesASymmetricRingOnRankZeroAndSaysSo) {
  for (auto [count, channels, equal_blocks] : {std::tuple{16, 1, true}, std::tuple{32, 2, true}, std::tuple{0, 1, true},
                                               std::tuple{17, 1, false}, std::tuple{24, 2, false}}) {
    for (bool in_place : {false, true}) {
      Result<Schedule> schedule =
          make_schedule("ring", spread_case(Collective::AllReduce, static_cast<std::size_t>(count), 8, 0, in_place),
                        Knobs{1 << 20, channels, 2});
      ASSERT_TRUE(schedule.ok());
      const Proof proof = prove(*schedule);
      EXPECT_TRUE(proof.ok) << proof.message;
      EXPECT_TRUE(proof.by_symmetry) << count << " elements, " << channels << " channels";
      EXPECT_EQ(provenance::find_symmetry(*schedule).has_value(), equal_blocks) << count;
      EXPECT_EQ(provenance::cover_rank0(*schedule).has_value(), !equal_blocks) << count;
      const Proof full = prove_in_full(*schedule);
      EXPECT_EQ(proof.steps, full.steps) << count;
      EXPECT_EQ(proof.messages, full.messages) << count;
    }
  }
}

// The ring of 8 ranks at count 16 with rank 5's program changed: the symmetric path must refuse
// it, and the full proof decide. A step added that changes nothing (a copy of a block onto
// itself) is proven; the last receive landing in the next block is caught, although rank 0's
// program, run alone, would prove.
TEST(Proof, RefusesTheSymmetricPathWhereOneRankDiffers) {
  const Case shape = spread_case(Collective::AllReduce, 16, 8);
  Result<Schedule> harmless = make_schedule("ring", shape, Knobs{});
  ASSERT_TRUE(harmless.ok());
  ASSERT_TRUE(provenance::find_symmetry(*harmless));
  const Range block{BufferKind::Output, 2, 2};
  harmless.value().copy(5, block, block);
  EXPECT_FALSE(provenance::find_symmetry(*harmless));
  Proof proof = prove(*harmless);
  EXPECT_TRUE(proof.ok) << proof.message;
  EXPECT_FALSE(proof.by_symmetry);

  Result<Schedule> broken = make_schedule("ring", shape, Knobs{});
  ASSERT_TRUE(broken.ok());
  auto& steps = broken.value().participants[5].steps;
  const auto last = std::find_if(steps.rbegin(), steps.rend(), [](const Step& step) { return step.receives(); });
  ASSERT_NE(last, steps.rend());
  last->to.offset = (last->to.offset + 2) % 16;  // the next block: in range, but wrong
  EXPECT_FALSE(provenance::find_symmetry(*broken));
  proof = prove(*broken);
  EXPECT_FALSE(proof.ok);
  EXPECT_FALSE(proof.by_symmetry);
  // The step that wrote the wrong element last is found by running the proof again.
  EXPECT_NE(proof.message.find("(last written by rank 5 step "), std::string::npos) << proof.message;
}

// A schedule whose every rank is rank 0's turned, and whose rank 0 alone would prove, but whose
// collective does not require of rank 1 what it requires of rank 0, turned: the outputs' check
// must say so, and the full proof must fail too.
void expect_outputs_refused(const Schedule& schedule, const std::string& collective) {
  const std::optional<provenance::Symmetry> rotation = provenance::find_symmetry(schedule);
  ASSERT_TRUE(rotation) << collective;
  EXPECT_TRUE(provenance::outputs_turn(schedule, *rotation)) << collective;
  const Proof proof = prove(schedule);
  EXPECT_FALSE(proof.ok) << collective;
  EXPECT_NE(proof.message.find("rank 1's program is rank 0's turned, but " + collective + " does not require"),
            std::string::npos)
      << proof.message;
  EXPECT_FALSE(prove_in_full(schedule).ok) << collective;
}

// Every rank copying its input to its output is a symmetric program, and right for the root of a
// broadcast from rank 0: rank 0's outputs alone would prove it. The symmetric path must see that
// the broadcast's outputs do not turn (every rank needs rank 0's input, not its own turned), which
// makes rank 1's outputs, rank 0's turned, wrong.
TEST(Proof, RefusesTheSymmetricPathWhereTheCollectiveDoesNotTurn) {
  Schedule copies = by_hand(spread_case(Collective::Broadcast, 5, 4));
  for (int rank = 0; rank < 4; ++rank)
    copies.copy(rank, Range{BufferKind::Input, 0, 5}, Range{BufferKind::Output, 0, 5});
  expect_outputs_refused(copies, "broadcast");
}

// An all-reduce needs no outputs check only where its input and output turn alike. Here 2 ranks
// exchange their inputs element by element (the input does not turn) and reduce each into the
// output block of that element (the output turns): rank 0 alone proves, but rank 1, rank 0 turned,
// puts the sum of elements 0 into its output element 1. The check must run and refuse it.
TEST(Proof, AnAllReduceWhoseInputDoesNotTurnStillHasItsOutputsChecked) {
  Schedule swapped = by_hand(spread_case(Collective::AllReduce, 2, 2));
  for (int rank = 0; rank < 2; ++rank) {
    for (std::uint64_t element : {0, 1}) {
      const std::uint64_t into = (element + static_cast<std::uint64_t>(rank)) % 2;
      swapped.add(rank, Step{StepKind::Send, 1 - rank, Range{BufferKind::Input, element, 1}, Range{}, 0, 0});
      swapped.add(rank, Step{StepKind::RecvReduce, 1 - rank, Range{BufferKind::Input, element, 1},
                             Range{BufferKind::Output, into, 1}, 0, 0});
    }
  }
  const std::optional<provenance::Symmetry> rotation = provenance::find_symmetry(swapped);
  ASSERT_TRUE(rotation);
  EXPECT_EQ(rotation->of(BufferKind::Input).part, 0U);
  EXPECT_EQ(rotation->of(BufferKind::Output).part, 2U);
  expect_outputs_refused(swapped, "allreduce");
}

// An all-to-all needs no outputs check only where both buffers turn in blocks of its count. Here 2
// ranks keep their output's places (the output does not turn): each copies its own input block into
// output block 0 and receives its peer's into block 1, right for rank 0 alone and wrong for rank 1,
// whose own block belongs in block 1. The check must run and refuse it.
TEST(Proof, AnAllToAllWhoseOutputDoesNotTurnStillHasItsOutputsChecked) {
  Schedule kept = by_hand(spread_case(Collective::AllToAll, 1, 2));
  for (int rank = 0; rank < 2; ++rank) {
    const auto own = static_cast<std::uint64_t>(rank);
    kept.copy(rank, Range{BufferKind::Input, own, 1}, Range{BufferKind::Output, 0, 1});
    kept.add(rank, Step{StepKind::Send, 1 - rank, Range{BufferKind::Input, 1 - own, 1}, Range{}, 0, 0});
    kept.add(rank, Step{StepKind::Recv, 1 - rank, Range{}, Range{BufferKind::Output, 1, 1}, 0, 0});
  }
  const std::optional<provenance::Symmetry> rotation = provenance::find_symmetry(kept);
  ASSERT_TRUE(rotation);
  EXPECT_EQ(rotation->of(BufferKind::Input).part, 2U);
  EXPECT_EQ(rotation->of(BufferKind::Output).part, 0U);
  expect_outputs_refused(kept, "alltoall");
}

// The rotation check on several threads compares every rank: a ring of 100 ranks made on demand
// is proven on rank 0 alone with 1, 3 or 8 threads, and one whose rank 1, 16, 17, 50, 98 or 99 alone differs
// (a harmless copy added) is refused the symmetric path by each, then proven in full.
TEST(Proof, TheRotationCheckOnSeveralThreadsComparesEveryRank) {
  const Case shape = spread_case(Collective::AllReduce, 100, 100);
  Result<Schedule> ring = make_schedule("ring", shape, Knobs{});
  ASSERT_TRUE(ring.ok());
  for (unsigned threads : {1U, 3U, 8U}) {
    const std::optional<Proof> symmetric = prove_by_symmetry(on_demand(*ring), threads);
    ASSERT_TRUE(symmetric) << threads << " threads";
    EXPECT_TRUE(symmetric->ok && symmetric->by_symmetry) << symmetric->message;
    for (int rank : {1, 16, 17, 50, 98, 99}) {
      Schedule changed = *ring;
      const Range block{BufferKind::Output, 3, 1};
      changed.copy(rank, block, block);
      EXPECT_FALSE(prove_by_symmetry(on_demand(changed), threads)) << "rank " << rank << ", " << threads << " threads";
    }
  }
}

// In place an all-gather's input is block r of its output, and a reduce-scatter's output block r
// of its input: rank 0 alone stands for every rank where that place turns with the buffer around
// it, as it does for the ring (by rotation) and recursive doubling (by XOR).
TEST(Proof, ProvesInPlaceGathersAndScattersOnRankZero) {
  for (const auto& [algorithm, collective] :
       {std::pair{"ring", Collective::AllGather}, std::pair{"rd", Collective::AllGather},
        std::pair{"ring", Collective::ReduceScatter}}) {
    for (int n : {2, 4, 8, 16}) {
      Result<Schedule> schedule = make_schedule(algorithm, spread_case(collective, 5, n, 0, true), Knobs{2, 2, 2});
      ASSERT_TRUE(schedule.ok());
      const Proof proof = prove(*schedule);
      EXPECT_TRUE(proof.ok && proof.by_symmetry) << algorithm << " on " << n << ": " << proof.message;
      EXPECT_EQ(proof.steps, prove_in_full(*schedule).steps);
    }
  }
}

// An in-place all-gather of 2 ranks whose every rank sends output element 0 and receives into
// element 1: rank 1 is rank 0 turned step by step (neither range moves), and rank 0, run alone,
// would be right, but rank 1's input lies at element 1, which its program overwrites, and what it
// sends it never had. Its input's place does not turn with the output: the shortcut must refuse it.
TEST(Proof, InPlaceTheInputsPlaceMustTurnWithTheOutput) {
  Schedule schedule = by_hand(spread_case(Collective::AllGather, 1, 2, 0, true));
  for (int rank = 0; rank < 2; ++rank) {
    schedule.add(rank, Step{StepKind::Send, 1 - rank, Range{BufferKind::Output, 0, 1}, Range{}, 0, 0});
    schedule.add(rank, Step{StepKind::Recv, 1 - rank, Range{}, Range{BufferKind::Output, 1, 1}, 0, 0});
  }
  EXPECT_FALSE(provenance::find_symmetry(schedule));
  const Proof proof = prove(schedule);
  EXPECT_FALSE(proof.ok);
  EXPECT_FALSE(proof.by_symmetry);
}

// Ranks are compared side by side, a stretch of rank 0's steps at a time (symmetry.cc): a ring of
// 8 ranks in chunks of one element (thousands of steps a rank, several stretches, made on demand in
// batches, or stored) whose rank 5 differs only in its last step, has one step more or one fewer, or whose
// rank 3 differs in one step in the middle of a stretch, is refused the symmetric path on 1 or 3
// threads.
TEST(Proof, TheRotationCheckComparesRanksSideBySideToTheirLastStep) {
  Result<Schedule> ring = make_schedule("ring", spread_case(Collective::AllReduce, 3200, 8), Knobs{1, 1, 2});
  ASSERT_TRUE(ring.ok());
  ASSERT_GT(ring->participants[0].steps.size(), 3 * 2048U);
  using Change = void (*)(Schedule&);
  const std::pair<const char*, Change> changes[] = {
      {"rank 5's last step lands elsewhere",
       [](Schedule& s) {
         s.participants[5].steps.back().to.offset = (s.participants[5].steps.back().to.offset + 1) % 3200;
       }},
      {"rank 5 has one step fewer", [](Schedule& s) { s.participants[5].steps.pop_back(); }},
      {"rank 5 has one step more",
       [](Schedule& s) {
         s.copy(5, Range{BufferKind::Output, 3, 1}, Range{BufferKind::Output, 3, 1});
       }},
      {"rank 3's step 3000 goes elsewhere", [](Schedule& s) { s.participants[3].steps[3000].channel = 1; }},
  };
  for (unsigned threads : {1U, 3U}) {
    const std::optional<Proof> symmetric = prove_by_symmetry(on_demand(*ring), threads);
    ASSERT_TRUE(symmetric);
    EXPECT_TRUE(symmetric->ok && symmetric->by_symmetry) << symmetric->message;
    // Stored, a rank's steps come as one batch, which every stretch cuts.
    EXPECT_TRUE(provenance::find_symmetry(*ring, {ring->participants[0].steps}, threads));
    for (const auto& [what, change] : changes) {
      Schedule changed = *ring;
      change(changed);
      EXPECT_FALSE(provenance::find_symmetry(on_demand(changed), {ring->participants[0].steps}, threads))
          << what << ", " << threads << " threads";
      EXPECT_FALSE(provenance::find_symmetry(changed, {ring->participants[0].steps}, threads))
          << what << ", stored, " << threads << " threads";
    }
  }
}

// The cover's check compares every rank with the cover turned and cut: a ring of 9 ranks at counts
// whose blocks differ (one block empty at 8, one longer at 10, 2 channels of chunks of 2 at 41) is
// proven on rank 0 alone through its cover, on 1 or 3 threads; with any one rank changed (a step
// gone, a range an element short, a harmless copy added, a peer turned the wrong way) the cover is
// refused and the full proof decides. A cover that is not this schedule's (one more element per
// block) is refused too.
TEST(Proof, TheCoverCheckComparesEveryRankTurnedAndCut) {
  using Change = void (*)(std::vector<Step>&);
  const std::pair<const char*, Change> changes[] = {
      {"last step gone", [](std::vector<Step>& steps) { steps.pop_back(); }},
      {"a range an element short",
       [](std::vector<Step>& steps) {
         Step& last = steps.back();
         last.to.count -= 1;
         if (last.kind == StepKind::RecvReduce) last.from.count -= 1;
       }},
      {"a copy added",
       [](std::vector<Step>& steps) {
         steps.push_back(Step{StepKind::Copy, -1, steps.back().to, steps.back().to, 0, 0});
       }},
      {"a peer the wrong way",
       [](std::vector<Step>& steps) {
         for (Step& step : steps) {
           if (step.sends()) step.peer = (step.peer + 7) % 9;
         }
       }},
  };
  for (auto [count, knobs] : {std::pair{std::size_t{8}, Knobs{}}, std::pair{std::size_t{10}, Knobs{}},
                              std::pair{std::size_t{41}, Knobs{2, 2, 2}}}) {
    Result<Schedule> ring = make_schedule("ring", spread_case(Collective::AllReduce, count, 9), knobs);
    ASSERT_TRUE(ring.ok());
    ASSERT_TRUE(ring->cover) << count;
    for (unsigned threads : {1U, 3U}) {
      const std::optional<Proof> covered = prove_by_symmetry(on_demand(*ring), threads);
      ASSERT_TRUE(covered) << count << " elements, " << threads << " threads";
      EXPECT_TRUE(covered->ok && covered->by_symmetry) << covered->message;
      for (int rank : {0, 1, 4, 8}) {
        for (const auto& [what, change] : changes) {
          Schedule changed = *ring;
          change(changed.participants[static_cast<std::size_t>(rank)].steps);
          EXPECT_FALSE(provenance::cover_rank0(on_demand(changed), threads))
              << count << " elements, rank " << rank << ": " << what;
          const Proof proof = prove(changed);
          EXPECT_EQ(proof.ok, prove_in_full(changed).ok) << what;
          EXPECT_FALSE(proof.by_symmetry) << what;
        }
      }
    }
    const Case covering = ring->cover.make().shape;
    Schedule wrong_cover = *ring;
    wrong_cover.cover.make = [covering, knobs = knobs] {
      Case more = covering;
      more.count += 9 * static_cast<std::size_t>(knobs.channels);
      return *make_schedule("ring", more, knobs);
    };
    EXPECT_FALSE(provenance::cover_rank0(wrong_cover)) << count;
    wrong_cover.cover.make = [covering] { return *make_schedule("rhd", covering, Knobs{}); };
    EXPECT_FALSE(provenance::cover_rank0(wrong_cover)) << count;
  }
}

// The cover's messages must keep their elements in place, or cutting them to the schedule's blocks
// gives a send and its receive different lengths. Here each rank of the 2-rank cover (blocks of 2)
// sends its block r and takes its peer's into block r: cut to 3 elements (blocks of 2 and 1), rank
// 0 sends 2 elements that rank 1 receives as 1. Every rank is the cover cut, so only the check of
// the messages refuses it.
TEST(Proof, TheCoverCheckRefusesAMessageThatMovesItsElements) {
  const auto program = [](std::uint64_t from, std::uint64_t into, std::uint64_t count) {
    return std::vector<Step>{Step{StepKind::Send, 1, Range{BufferKind::Input, from, count}, Range{}, 0, 0},
                             Step{StepKind::Recv, 1, Range{}, Range{BufferKind::Output, into, count}, 0, 0}};
  };
  Schedule cover = by_hand(spread_case(Collective::AllReduce, 4, 2));
  cover.participants[0].steps = program(0, 0, 2);
  cover.participants[1].steps = program(2, 2, 2);
  cover.participants[1].steps[0].peer = cover.participants[1].steps[1].peer = 0;
  Schedule cut = cover;
  cut.shape.count = 3;
  cut.participants[1].steps = program(2, 2, 1);
  cut.participants[1].steps[0].peer = cut.participants[1].steps[1].peer = 0;
  cut.cover = BlockCover{1, [cover] { return cover; }};
  EXPECT_FALSE(provenance::cover_rank0(cut));
  EXPECT_FALSE(prove(cut).ok);
}

// Counts that differ for every pair (and an empty block on every row but the last): not the sweep's
// spread counts, whose rows repeat.
Case uneven_alltoallv(int nranks) {
  Case shape = spread_case(Collective::AllToAllV, 1, nranks);
  std::vector<std::size_t> counts(shape.counts.size());
  for (std::size_t pair = 0; pair < counts.size(); ++pair) counts[pair] = (pair * 7 + pair / 3) % 6;
  set_counts(shape, std::move(counts));
  return shape;
}

// Pairwise all-to-all-v's blocks differ in length (the counts of its pairs), so no rank's program is
// rank 0's turned; its cover is all-to-all on the longest pair's count, turned and cut. On every
// rank count in 2..12, at spread counts and at counts that differ for every pair, rank 0 alone runs
// (in units of a block), on 1 or 3 threads, and counts the steps and messages the full proof counts.
// Chunks shorter than the longest block come in another order than the cover's: no cover is
// offered, and the proof goes another way.
TEST(Proof, ProvesPairwiseAllToAllVThroughItsCover) {
  for (int nranks = 2; nranks <= 12; ++nranks) {
    for (const Case& shape : {spread_case(Collective::AllToAllV, 4, nranks), uneven_alltoallv(nranks)}) {
      Result<Schedule> pairwise = make_schedule("pairwise", shape, Knobs{}, Form::OnDemand);
      ASSERT_TRUE(pairwise.ok()) << pairwise.error().message;
      ASSERT_TRUE(pairwise->cover) << to_string(shape);
      for (unsigned threads : {1U, 3U}) {
        const std::optional<Proof> proof = prove_by_symmetry(*pairwise, threads);
        ASSERT_TRUE(proof) << to_string(shape);
        EXPECT_TRUE(proof->ok && proof->by_symmetry) << proof->message;
        EXPECT_GT(proof->unit, 1U) << to_string(shape);
        const Proof full = prove_in_full(*pairwise);
        EXPECT_EQ(proof->steps, full.steps) << to_string(shape);
        EXPECT_EQ(proof->messages, full.messages) << to_string(shape);
      }
    }
    Result<Schedule> chunked = make_schedule("pairwise", spread_case(Collective::AllToAllV, 4, nranks), Knobs{2, 1, 4});
    ASSERT_TRUE(chunked.ok());
    EXPECT_FALSE(chunked->cover);
    EXPECT_FALSE(prove(*chunked).by_symmetry);
  }
}

// The cover's check compares every rank of pairwise all-to-all-v with the cover turned and cut: with
// any one rank changed -- a block received where the next begins, a send to the wrong peer, a step
// gone, two blocks of the same length received into each other's place (which rank 0's program,
// run alone, would prove) -- the cover is refused and the full proof decides. A cover on another
// count, or of another algorithm, is refused too.
TEST(Proof, TheAllToAllVCoverCheckRefusesAnyRankChanged) {
  using Change = bool (*)(std::vector<Step>&, int nranks);
  const std::pair<const char*, Change> changes[] = {
      {"a block received an element on",
       [](std::vector<Step>& steps, int) {
         steps.back().to.offset += 1;
         return true;
       }},
      {"a send to the wrong peer",
       [](std::vector<Step>& steps, int nranks) {
         steps[1].peer = (steps[1].peer + 1) % nranks;
         return true;
       }},
      {"a step gone",
       [](std::vector<Step>& steps, int) {
         steps.erase(steps.begin() + 1);
         return true;
       }},
      {"two blocks received into each other's place",
       [](std::vector<Step>& steps, int) {
         for (Step& first : steps) {
           for (Step& second : steps) {
             if (&first != &second && first.receives() && second.receives() && first.to.count == second.to.count &&
                 first.to.offset < second.to.offset) {
               std::swap(first.to, second.to);
               return true;
             }
           }
         }
         return false;
       }},
  };
  const int nranks = 7;
  const Case shape = uneven_alltoallv(nranks);
  Result<Schedule> pairwise = make_schedule("pairwise", shape, Knobs{});
  ASSERT_TRUE(pairwise.ok());
  ASSERT_TRUE(provenance::cover_rank0(on_demand(*pairwise)));
  for (int rank : {0, 3, 6}) {
    for (const auto& [what, change] : changes) {
      Schedule changed = *pairwise;
      if (!change(changed.participants[static_cast<std::size_t>(rank)].steps, nranks)) continue;
      for (unsigned threads : {1U, 3U}) {
        EXPECT_FALSE(provenance::cover_rank0(on_demand(changed), threads)) << "rank " << rank << ": " << what;
      }
      const Proof proof = prove(changed);
      EXPECT_FALSE(proof.ok) << "rank " << rank << ": " << what;
      EXPECT_FALSE(proof.by_symmetry) << what;
    }
  }
  const Case covering = pairwise->cover.make().shape;
  Schedule wrong_cover = *pairwise;
  wrong_cover.cover.make = [covering] {
    Case more = covering;
    more.count += 1;
    return *make_schedule("pairwise", more, Knobs{});
  };
  EXPECT_FALSE(provenance::cover_rank0(wrong_cover));
  wrong_cover.cover.make = [covering] { return *make_schedule("bruck", covering, Knobs{}); };
  EXPECT_FALSE(provenance::cover_rank0(wrong_cover));
}

// An all-to-all's message must carry its pair's elements to the same place in the pair's block.
// Here the 2-rank cover (blocks of 2) sends the first element of the block for its peer and takes
// its peer's into the second element of the block from it: cut to counts whose block from rank 1
// to rank 0 has one element, rank 0 no longer receives while rank 1 still sends. Every rank is the
// cover cut, so only the check of the messages refuses it.
TEST(Proof, TheAllToAllVCoverCheckRefusesAMessageThatMovesItsElements) {
  const auto program = [](int peer, std::uint64_t from, std::uint64_t into, bool receives) {
    std::vector<Step> steps{Step{StepKind::Send, peer, Range{BufferKind::Input, from, 1}, Range{}, 0, 0}};
    if (receives) steps.push_back(Step{StepKind::Recv, peer, Range{}, Range{BufferKind::Output, into, 1}, 0, 0});
    return steps;
  };
  Schedule cover = by_hand(uniform_case(spread_case(Collective::AllToAllV, 2, 2), 2));
  cover.participants[0].steps = program(1, 2, 3, true);  // pair (0, 1) element 0; pair (1, 0) element 1
  cover.participants[1].steps = program(0, 0, 1, true);  // pair (1, 0) element 0; pair (0, 1) element 1
  Case uneven = spread_case(Collective::AllToAllV, 2, 2);
  set_counts(uneven, {2, 2, 1, 2});
  Schedule cut = by_hand(uneven);
  cut.participants[0].steps = program(1, 2, 0, false);  // the block from 1 holds 1 element: element 1 is gone
  cut.participants[1].steps = program(0, 0, 1, true);   // rank 1's output: 2 from rank 0, then its own
  cut.cover = BlockCover{1, [cover] { return cover; }};
  EXPECT_FALSE(provenance::cover_rank0(cut));
  EXPECT_FALSE(prove(cut).ok);
}

}  // namespace
}  // namespace collcheck
