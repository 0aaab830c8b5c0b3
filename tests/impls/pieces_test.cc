// Proofs in pieces: a v-collective's schedule that keeps every element in its place on the
// collective's line is proven with an element per piece and proves what its full proof proves; a
// message received elsewhere (even one whose pieces line up, with more or fewer elements), a copy
// to another place, or a range across two blocks of an alltoallv's output is not proven in pieces.
#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/prove/pieces.h"
#include "impls/prove/proof.h"
#include "reference/counts.h"
#include "tests/impls/proof_support.h"

namespace collcheck {
namespace {

struct Named {
  const char* algorithm;
  Collective collective;
};

// The ring's allgatherv and reducescatterv and pairwise alltoallv on every rank count in 2..12,
// counts spread around two values, with one chunk per block and with chunks of 2 on two channels:
// in pieces, the proof agrees with the full proof, step for step, and has fewer elements (one per
// piece) than the line.
TEST(InPieces, ProvesWhatTheFullProofProves) {
  const std::vector<Named> algorithms = {
      {"ring", Collective::AllGatherV}, {"ring", Collective::ReduceScatterV}, {"pairwise", Collective::AllToAllV}};
  for (const auto& [algorithm, collective] : algorithms) {
    std::size_t proven = 0;
    for (int nranks = 2; nranks <= 12; ++nranks) {
      for (std::size_t count : {std::size_t{5}, std::size_t{9}}) {
        for (const Knobs& knobs : {Knobs{}, Knobs{2, 2, 4}}) {
          const Case shape = spread_case(collective, count, nranks);
          Result<Schedule> schedule = make_schedule(algorithm, shape, knobs);
          ASSERT_TRUE(schedule.ok()) << schedule.error().message;
          const std::string what =
              std::string(algorithm) + " " + to_string(shape) + " chunk " + std::to_string(knobs.chunk);
          const std::optional<InPieces> pieces = in_pieces(*schedule);
          ASSERT_TRUE(pieces) << what;
          EXPECT_LT(pieces->pieces, shape.count) << what;
          EXPECT_EQ(pieces->schedule.shape.count, pieces->pieces) << what;
          const Proof proof = prove_in_pieces(*pieces);
          const Proof full = prove_in_full(*schedule);
          EXPECT_TRUE(proof.ok) << what << ": " << proof.message;
          EXPECT_TRUE(full.ok) << what << ": " << full.message;
          EXPECT_EQ(proof.steps, full.steps) << what;
          EXPECT_EQ(proof.messages, full.messages) << what;
          EXPECT_EQ(proof.pieces, pieces->pieces) << what;
          // The line kept as its cuts (as a long one is) cuts the same pieces.
          const std::optional<InPieces> sparse = provenance::in_pieces(*schedule, false);
          ASSERT_TRUE(sparse) << what;
          EXPECT_EQ(sparse->schedule.shape.counts, pieces->schedule.shape.counts) << what;
          const Proof sparse_proof = prove_in_pieces(*sparse);
          EXPECT_TRUE(sparse_proof.ok) << what << ": " << sparse_proof.message;
          EXPECT_EQ(sparse_proof.steps, full.steps) << what;
          // prove() finds its way there by itself where the shape is not in units (on 2 ranks the
          // counts c and 0 share c) and no cover is offered (pairwise all-to-all-v's, one chunk per
          // block: rotation_test.cc).
          if (!in_units(*schedule) && !schedule->cover) {
            EXPECT_EQ(prove(*schedule).pieces, pieces->pieces) << what;
          }
          ++proven;
        }
      }
    }
    EXPECT_GT(proven, 0U) << name(collective);
  }
}

// One chunk per block, the line has a piece per non-empty block; chunks of 2 cut each block in
// pieces of 2 (and the last of 1 where the block is odd).
TEST(InPieces, CutsWhereBlocksAndRangesStart) {
  Case shape = spread_case(Collective::AllGatherV, 4, 4);  // counts 4, 0, 5, 2
  ASSERT_EQ(shape.counts, (std::vector<std::size_t>{4, 0, 5, 2}));
  Result<Schedule> whole = make_schedule("ring", shape, Knobs{});
  ASSERT_TRUE(whole.ok());
  std::optional<InPieces> pieces = in_pieces(*whole);
  ASSERT_TRUE(pieces);
  EXPECT_EQ(pieces->pieces, 3U);
  EXPECT_EQ(pieces->schedule.shape.counts, (std::vector<std::size_t>{1, 0, 1, 1}));
  Result<Schedule> chunked = make_schedule("ring", shape, Knobs{2, 1, 4});
  ASSERT_TRUE(chunked.ok());
  pieces = in_pieces(*chunked);
  ASSERT_TRUE(pieces);
  EXPECT_EQ(pieces->schedule.shape.counts, (std::vector<std::size_t>{2, 0, 3, 1}));
  // Every element already a piece of its own: nothing to gain.
  EXPECT_FALSE(in_pieces(*make_schedule("ring", shape, Knobs{1, 1, 4})));
  // Not a v-collective on a line.
  EXPECT_FALSE(in_pieces(*make_schedule("ring", spread_case(Collective::AllGather, 4, 4), Knobs{})));
}

// allgatherv on 2 ranks, counts 2 and 4 (the line: block 0 at 0..1, block 1 at 2..5), by hand:
// each rank copies its input into its block of the output and sends it to the other, which receives
// it into that block. `stray`: rank 1 first sends its 4 elements once more, which rank 0 receives
// into its own block (2 elements) before its copy overwrites it: one piece each, so the pieces'
// counts agree where the elements' do not.
Schedule by_hand(bool stray) {
  Schedule schedule;
  schedule.algorithm = "by hand";
  schedule.shape.collective = Collective::AllGatherV;
  schedule.shape.nranks = 2;
  schedule.shape.counts = {2, 4};
  schedule.shape.count = 6;
  schedule.participants.resize(2);
  const Range input0{BufferKind::Input, 0, 2}, input1{BufferKind::Input, 0, 4};
  const Range block0{BufferKind::Output, 0, 2}, block1{BufferKind::Output, 2, 4};
  if (stray) schedule.send_recv(1, input1, 0, block0);
  schedule.copy(0, input0, block0);
  schedule.copy(1, input1, block1);
  schedule.send_recv(0, input0, 1, block0);
  schedule.send_recv(1, input1, 0, block1);
  return schedule;
}

TEST(InPieces, AMessageReceivedElsewhereIsNotProvenInPieces) {
  const Schedule right = by_hand(false);
  ASSERT_TRUE(prove_in_full(right).ok);
  ASSERT_TRUE(prove(right).ok);

  // Stored, validate() finds the counts apart; made on demand, only the proof sees the message, and
  // in pieces it must see that the message left its place.
  const Schedule stray = proof_support::on_demand(by_hand(true));
  const Proof full = prove_in_full(stray);
  EXPECT_FALSE(full.ok);
  EXPECT_NE(full.message.find("matching send has 4"), std::string::npos) << full.message;
  const std::optional<InPieces> pieces = in_pieces(stray);
  ASSERT_TRUE(pieces);
  const Proof in_pieces_proof = prove_in_pieces(*pieces);
  EXPECT_FALSE(in_pieces_proof.ok);
  EXPECT_NE(in_pieces_proof.message.find("stay in its place"), std::string::npos) << in_pieces_proof.message;
  EXPECT_FALSE(prove(stray).ok);
  EXPECT_FALSE(prove(by_hand(true)).ok);
}

// An alltoallv's output holds its blocks apart on the line (block (s, d) of row s): a range across
// two of them is not one stretch of the line, and is left to the full proof. Here rank 0 copies its
// input block for itself (2 elements) over the end of its own block and the start of rank 1's.
TEST(InPieces, ARangeAcrossTwoBlocksOfAnAllToAllVOutputIsLeftToTheFullProof) {
  Case shape;
  shape.collective = Collective::AllToAllV;
  shape.nranks = 2;
  shape.counts = {2, 3, 1, 2};  // (0,0) (0,1) (1,0) (1,1): rank 0's output holds 2 then 1 elements
  shape.count = 8;
  Result<Schedule> right = make_schedule("pairwise", shape, Knobs{});
  ASSERT_TRUE(right.ok());
  ASSERT_TRUE(in_pieces(*right));
  Schedule across = *right;
  across.copy(0, Range{BufferKind::Input, 0, 2}, Range{BufferKind::Output, 1, 2});
  EXPECT_FALSE(in_pieces(across));
  EXPECT_FALSE(prove(across).ok);
}

// A copy that moves elements elsewhere on the line (here the first half of rank 1's input copied
// over block 0 as well, which then holds the wrong contributions; the line would have 3 pieces) is
// left to the full proof.
TEST(InPieces, ACopyElsewhereIsLeftToTheFullProof) {
  Schedule moved = by_hand(false);
  ASSERT_TRUE(in_pieces(moved));
  moved.copy(1, Range{BufferKind::Input, 0, 2}, Range{BufferKind::Output, 0, 2});
  EXPECT_FALSE(in_pieces(moved));
  EXPECT_FALSE(prove(moved).ok);
}

}  // namespace
}  // namespace collcheck
