// The ib transport's RDMA links over the loopback (impls/proc/rdma_links.h): every lane to a peer
// is a queue pair of its own, so that each channel's streams keep their order on their own pair
// and a write on one lane lands where that lane's stream said.
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "impls/backend/world.h"
#include "impls/proc/rdma_links.h"

namespace collcheck::proc {
namespace {

TEST(RdmaLinks, EveryLaneToAPeerIsAQueuePairOfItsOwn) {
  constexpr int kLanes = 3;
  constexpr std::size_t kBytes = 4096;
  std::vector<std::unique_ptr<World>> worlds = make_thread_worlds(2);
  ProcLinkOptions options;
  options.links = ProcLinks::Ib;
  options.verbs.loopback = true;
  options.queue_pairs = kLanes;
  std::vector<std::vector<std::byte>> segments(2, std::vector<std::byte>(kBytes));
  std::vector<std::unique_ptr<RdmaLinks>> links(2);
  std::vector<std::string> errors(2);
  {
    std::vector<std::jthread> ranks;
    ranks.reserve(2);
    for (int rank = 0; rank < 2; ++rank) {
      ranks.emplace_back([&, rank] {
        const auto r = static_cast<std::size_t>(rank);
        Result<std::unique_ptr<RdmaLinks>> connected =
            RdmaLinks::connect(*worlds[r], segments[r].data(), kBytes, options);
        if (connected) links[r] = std::move(*connected);
        else errors[r] = connected.error().text();
      });
    }
  }
  ASSERT_TRUE(links[0] && links[1]) << errors[0] << " " << errors[1];
  EXPECT_EQ(links[0]->lanes(), kLanes);
  // Rank 0 writes 8 bytes to rank 1 on each lane, lane l's at offset 64 l, with immediates.
  for (int lane = 0; lane < kLanes; ++lane) {
    const std::size_t at = 64 * static_cast<std::size_t>(lane);
    std::byte* staged = links[0]->staging() + at;
    const std::uint64_t word = 0x1111111111111111ULL * static_cast<std::uint64_t>(lane + 1);
    std::memcpy(staged, &word, sizeof word);
    const RemoteWords to = links[0]->segment_of(1, lane, at);
    EXPECT_EQ(to.lane, lane);
    ASSERT_TRUE(links[0]->room(to));
    ASSERT_TRUE(links[0]->write(staged, sizeof word, to, lane).ok());
  }
  EXPECT_EQ(links[0]->drain(10.0), "");
  EXPECT_EQ(links[0]->posted_per_lane(1), (std::vector<std::uint64_t>{1, 1, 1}));
  for (int lane = 0; lane < kLanes; ++lane) {
    std::uint64_t landed = 0;
    std::memcpy(&landed, segments[1].data() + 64 * static_cast<std::size_t>(lane), sizeof landed);
    EXPECT_EQ(landed, 0x1111111111111111ULL * static_cast<std::uint64_t>(lane + 1)) << "lane " << lane;
    EXPECT_EQ(links[0]->completed(links[0]->segment_of(1, lane, 0)), 1u) << "lane " << lane;
  }
  bool moved = false;
  EXPECT_EQ(links[1]->poll(moved), "");  // the immediates consumed a receive on each lane, reposted
  EXPECT_TRUE(moved);
}

}  // namespace
}  // namespace collcheck::proc
