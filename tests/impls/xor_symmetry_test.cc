// Proof by XOR symmetry: on a power of two, where every rank r's program is rank 0's with every
// peer and block XOR r (recursive doubling), rank 0 alone stands for every rank. The runs of
// contributions turn as their ranks do, a message of several blocks takes its sender's order,
// and a schedule whose two ends of a message, or of a copy, take their blocks in different orders
// is sent back to the full proof, which finds the rank that is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "impls/algorithms/algorithms.h"
#include "impls/algorithms/generator_support.h"
#include "impls/prove/proof.h"
#include "impls/prove/symmetry.h"
#include "reference/counts.h"
#include "tests/impls/proof_support.h"

namespace collcheck {
namespace {

using provenance::Element;
using ContributionRun = provenance::Run;
using provenance::Symmetry;
using provenance::Turn;

// Recursive doubling on a power of two is symmetric by XOR (not by rotation), at every count,
// channel count and chunk, and proven on rank 0 with the steps and messages the full proof counts;
// with ranks beyond a power of two folded in it is not symmetric at all.
TEST(XorSymmetry, ProvesRecursiveDoublingOnRankZero) {
  for (int n : {4, 8, 16, 64}) {
    for (std::size_t count : {1, 3, 8, 16}) {
      for (const Knobs& knobs : {Knobs{1 << 20, 1, 2}, Knobs{2, 2, 2}}) {
        Result<Schedule> schedule = make_schedule("rd", spread_case(Collective::AllGather, count, n), knobs);
        ASSERT_TRUE(schedule.ok());
        const std::optional<Symmetry> symmetry = provenance::find_symmetry(*schedule);
        ASSERT_TRUE(symmetry) << n << " ranks, count " << count;
        EXPECT_EQ(symmetry->turn, Turn::Xor);
        const Proof proof = prove(*schedule);
        EXPECT_TRUE(proof.ok && proof.by_symmetry) << proof.message;
        const Proof full = prove_in_full(*schedule);
        EXPECT_EQ(proof.steps, full.steps);
        EXPECT_EQ(proof.messages, full.messages);
        // Made on demand (replayed), the same.
        const std::optional<Proof> replayed = prove_by_symmetry(proof_support::on_demand(*schedule));
        ASSERT_TRUE(replayed);
        EXPECT_TRUE(replayed->ok && replayed->by_symmetry) << replayed->message;
      }
    }
  }
  Result<Schedule> folded = make_schedule("rd", spread_case(Collective::AllGather, 4, 12), Knobs{});
  ASSERT_TRUE(folded.ok());
  EXPECT_FALSE(provenance::find_symmetry(*folded));
  EXPECT_TRUE(prove(*folded).ok);
}

// `run` turned by XOR `by` holds exactly its ranks XOR'd; consecutive ranks come out in the runs a
// union would leave (joined where they meet).
void expect_turned_as_its_ranks(const Symmetry& symmetry, const ContributionRun& run, std::uint32_t by,
                                std::uint32_t n) {
  std::vector<ContributionRun> turned;
  symmetry.contributions(run, by, n, turned);
  std::multiset<std::uint32_t> want, got;
  for (std::uint32_t k = 0; k < run.count; ++k) want.insert(run.rank(k, n) ^ by);
  for (const ContributionRun& piece : turned) {
    EXPECT_EQ(piece.index, run.index);
    for (std::uint32_t k = 0; k < piece.count; ++k) got.insert(piece.rank(k, n));
  }
  const std::string what =
      provenance::show(std::span<const ContributionRun>(&run, 1), n) + " XOR " + std::to_string(by);
  EXPECT_EQ(got, want) << what;
  if (run.stride == 1) {
    EXPECT_EQ(turned, provenance::combine(turned, {}, n).runs) << what;
  }
  if (run.stride == 1 && run.count == n) {
    EXPECT_EQ(turned.size(), 1u) << "every rank stays one run: " << what;
  }
}

// Every run of 16 ranks (any first rank, stride and count, wrapping or not) turned by every XOR.
TEST(XorSymmetry, TurnsRunsAsTheirRanksTurn) {
  constexpr std::uint32_t n = 16;
  Symmetry symmetry;
  symmetry.turn = Turn::Xor;
  for (std::uint32_t stride : {1u, 2u, 4u, 8u, 3u, 5u}) {
    for (std::uint32_t first = 0; first < n; ++first) {
      for (std::uint32_t count = 1; count * stride <= n; ++count) {
        for (std::uint32_t by = 0; by < n; ++by) {
          expect_turned_as_its_ranks(symmetry, provenance::make_run(7, first, count, n, stride), by, n);
        }
      }
    }
  }
}

// A message of 4 blocks of 2 elements, rank 0's, turned into the one rank 3 sends: each element's
// contribution XOR 3, and block b read from rank 0's block b XOR 3.
TEST(XorSymmetry, AMessageOfSeveralBlocksTakesItsSendersOrder) {
  Symmetry symmetry;
  symmetry.turn = Turn::Xor;
  symmetry.cut(BufferKind::Output) = provenance::BufferCut{8, 2};
  std::vector<Element> message;
  for (std::uint64_t j = 0; j < 8; ++j) message.emplace_back(j, 0);
  symmetry.turn_message(message, Range{BufferKind::Output, 0, 8}, 3, 4);
  const std::vector<std::uint64_t> order{6, 7, 4, 5, 2, 3, 0, 1};
  for (std::size_t j = 0; j < 8; ++j) {
    ASSERT_EQ(message[j].runs().size(), 1u);
    EXPECT_EQ(message[j].runs()[0], ContributionRun(order[j], 3, 1)) << "element " << j;
  }
  // Inside one block the elements keep their order.
  std::vector<Element> inside{Element(2, 0), Element(3, 0)};
  symmetry.turn_message(inside, Range{BufferKind::Output, 2, 2}, 3, 4);
  EXPECT_EQ(inside[0].runs()[0], ContributionRun(2, 3, 1));
  EXPECT_EQ(inside[1].runs()[0], ContributionRun(3, 3, 1));
}

// All-gather on 4 ranks, one element a rank, every rank's program rank 0's XOR its rank: its own
// block, then an exchange of one block with r XOR 1, then the pair of blocks it holds to r XOR 2
// (`pair_through_scratch`: received into scratch and copied out one block at a time; else sent
// from scratch a block at a time after a copy of the pair into it). The blocks come out in the
// wrong order on odd ranks, while rank 0, run alone, would see them right: the pair's two ends (a
// message, or a copy) take its blocks in different orders, which the shortcut must not accept.
Schedule pair_out_of_order(bool pair_through_scratch) {
  constexpr int n = 4;
  Schedule schedule = generators::start(spread_case(Collective::AllGather, 1, n), "pair-out-of-order");
  const auto out = [](int block, std::size_t count = 1) {
    return Range{BufferKind::Output, static_cast<std::size_t>(block), count};
  };
  const auto scratch = [](std::size_t at, std::size_t count = 1) { return Range{BufferKind::Scratch, at, count}; };
  for (int r = 0; r < n; ++r) {
    schedule.participants[static_cast<std::size_t>(r)].scratch = 2;
    generators::copy(schedule, r, Range{BufferKind::Input, 0, 1}, out(r), 0);
    generators::send(schedule, r, r ^ 1, out(r), 0);
    generators::recv(schedule, r, r ^ 1, out(r ^ 1), 0);
    if (pair_through_scratch) {
      generators::send(schedule, r, r ^ 2, out(r & ~1, 2), 0);
      generators::recv(schedule, r, r ^ 2, scratch(0, 2), 0);
      generators::copy(schedule, r, scratch(0), out(2 ^ r), 0);
      generators::copy(schedule, r, scratch(1), out(3 ^ r), 0);
    } else {
      generators::copy(schedule, r, out(r & ~1, 2), scratch(0, 2), 0);
      generators::send(schedule, r, r ^ 2, scratch(0), 0);
      generators::send(schedule, r, r ^ 2, scratch(1), 0);
      generators::recv(schedule, r, r ^ 2, out(2 ^ r), 0);
      generators::recv(schedule, r, r ^ 2, out(3 ^ r), 0);
    }
  }
  return schedule;
}

TEST(XorSymmetry, RefusesTheShortcutWhereAMessagesEndsOrderItsBlocksApart) {
  const Schedule schedule = pair_out_of_order(true);
  const std::optional<Symmetry> symmetry = provenance::find_symmetry(schedule);
  ASSERT_TRUE(symmetry) << "every rank is rank 0 XOR its rank, range by range";
  EXPECT_EQ(symmetry->turn, Turn::Xor);
  EXPECT_FALSE(prove_by_symmetry(schedule)) << "the message's ends differ: rank 0 alone stands for no one";
  const Proof proof = prove(schedule);
  EXPECT_FALSE(proof.ok);
  EXPECT_FALSE(proof.by_symmetry);
  EXPECT_NE(proof.message.find("rank 1 output element 2"), std::string::npos) << proof.message;
}

TEST(XorSymmetry, RefusesTheShortcutWhereACopyOrdersItsRangesApart) {
  const Schedule schedule = pair_out_of_order(false);
  EXPECT_FALSE(provenance::find_symmetry(schedule)) << "the copy of the pair takes its blocks in another order";
  const Proof proof = prove(schedule);
  EXPECT_FALSE(proof.ok);
  EXPECT_FALSE(proof.by_symmetry);
  EXPECT_NE(proof.message.find("rank 1 output element 2"), std::string::npos) << proof.message;
}

}  // namespace
}  // namespace collcheck
