// How the proc transport's senders store pieces into the receivers' slots (proc::SlotStores): the
// way that costs less, each way tried now and then; and when a waiting rank gives its core away at
// once (its host runs more ranks than cores).
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "impls/proc/progress.h"

namespace collcheck {
namespace {

// A sender fills the receivers' slots the way that costs less, tries each now and then, and so
// follows a change of costs (its two cores coming to share a cache, or ceasing to).
TEST(SlotStores, FillsTheCheaperWayAndFollowsAMove) {
  proc::SlotStores stores;
  const std::size_t piece = std::size_t{128} << 10;
  double ordinary = 4e-9, around = 1e-9;  // seconds per byte of each way, as the fills would find
  auto fills = [&](int count) {
    int ordinary_fills = 0;
    for (int i = 0; i < count; ++i) {
      const bool around_cache = stores.around_cache(piece);
      ordinary_fills += around_cache ? 0 : 1;
      stores.filled(around_cache, piece, static_cast<double>(piece) * (around_cache ? around : ordinary));
    }
    return ordinary_fills;
  };
  // Each way is tried once first, then the cheaper taken, the other only as a probe: once per
  // 32 fills times how much dearer it is (4 times here), so that probes cost about 1/32 of the time.
  EXPECT_EQ(fills(2), 1);
  const int probes = fills(1290);
  EXPECT_GE(probes, 8);
  EXPECT_LE(probes, 12);
  EXPECT_DOUBLE_EQ(stores.cost(true), 1e-9);
  // Ordinary stores become the cheaper: within a few probes they are taken.
  ordinary = 0.5e-9;
  fills(300);
  EXPECT_GE(fills(100), 90);
  EXPECT_LT(stores.cost(false), stores.cost(true));
  // The way taken becomes the dearer: the other is taken at once (but for a probe).
  ordinary = 2e-9;
  fills(1);
  EXPECT_LE(fills(10), 1);
  // A fill the clock did not see still counts: the way is tried, not untried for ever.
  proc::SlotStores fresh;
  fresh.filled(true, piece, 0.0);
  EXPECT_GT(fresh.cost(true), 0.0);
  EXPECT_FALSE(fresh.around_cache(piece));  // the other way is tried next
  // Fills too small to time take the cheaper way, uncounted.
  for (int i = 0; i < 64; ++i) EXPECT_TRUE(stores.around_cache(proc::SlotStores::kTimedBytes - 1));
  const double before = stores.cost(true);
  stores.filled(true, proc::SlotStores::kTimedBytes - 1, 1.0);
  EXPECT_DOUBLE_EQ(stores.cost(true), before);
}

// A way's cost is the fill and the receiver's taking together: stores around the cache that are
// cheaper to fill but leave the receiver reading from memory lose to ordinary stores that the
// receiver reads from a shared cache. A chooser that weighed the fills alone fails here.
TEST(SlotStores, WeighsWhatTheReceiverPaysToo) {
  proc::SlotStores stores;
  const std::size_t piece = std::size_t{128} << 10;
  const double fill_ordinary = 2e-9, fill_around = 1e-9;
  const double take_ordinary = 0.5e-9, take_around = 3e-9;
  int ordinary_fills = 0;
  for (int i = 0; i < 400; ++i) {
    if (i >= 2) stores.heard(take_ordinary, take_around);  // once the receiver has taken a piece each way
    const bool around_cache = stores.around_cache(piece);
    ordinary_fills += around_cache ? 0 : 1;
    stores.filled(around_cache, piece, static_cast<double>(piece) * (around_cache ? fill_around : fill_ordinary));
  }
  EXPECT_GE(ordinary_fills, 380);
  EXPECT_DOUBLE_EQ(stores.total(false), fill_ordinary + take_ordinary);
  EXPECT_DOUBLE_EQ(stores.total(true), fill_around + take_around);
  // The receiver's cost of ordinary stores rises (the cores no longer share a cache): around the cache again.
  stores.heard(4e-9, take_around);
  int around_fills = 0;
  for (int i = 0; i < 100; ++i) {
    const bool around_cache = stores.around_cache(piece);
    around_fills += around_cache ? 1 : 0;
    stores.filled(around_cache, piece, static_cast<double>(piece) * (around_cache ? fill_around : fill_ordinary));
  }
  EXPECT_GE(around_fills, 90);
}

// Ranks count as crowded by their own host's ranks only, against the cores given.
TEST(WaitingRanks, YieldAtOnceWhereTheirHostRunsMoreRanksThanCores) {
  const std::vector<std::string> hosts{"a", "a", "a", "b"};
  EXPECT_TRUE(proc::more_ranks_than(hosts, 0, 2));
  EXPECT_FALSE(proc::more_ranks_than(hosts, 1, 3));
  EXPECT_FALSE(proc::more_ranks_than(hosts, 3, 1)) << "b runs one rank";
  EXPECT_TRUE(proc::more_ranks_than(hosts, 3, 0));
}

}  // namespace
}  // namespace collcheck
