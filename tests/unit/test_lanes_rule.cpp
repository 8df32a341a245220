// lanes=0 (automatic): the lane count and threads per lane chosen from the
// physical cores and the threads setting (src/model/lanes_rule.h).
#include <gtest/gtest.h>

#include "model/lanes_rule.h"

using namespace torchinfer;

namespace {

LanesPlan automatic(int cores, int threads = 0) {
  return choose_lanes({cores, threads, 0});
}

}  // namespace

TEST(LanesRule, AutomaticTakesLanesOfAboutSqrtCoresThreads) {
  struct Case {
    int cores, lanes, threads_per_lane;
  };
  for (const Case& c : {Case{1, 1, 1}, Case{2, 2, 1}, Case{3, 3, 1}, Case{4, 2, 2}, Case{5, 2, 2},
                        Case{6, 3, 2}, Case{8, 4, 2}, Case{9, 3, 3}, Case{12, 4, 3}, Case{16, 4, 4},
                        Case{32, 6, 5}, Case{64, 8, 8}, Case{128, 11, 11}}) {
    const LanesPlan p = automatic(c.cores);
    EXPECT_EQ(p.lanes, c.lanes) << c.cores << " cores";
    EXPECT_EQ(p.threads_per_lane, c.threads_per_lane) << c.cores << " cores";
  }
}

TEST(LanesRule, ThreadsSettingIsSharedOutAndCapsTheLanes) {
  // threads=1 on 8 cores: one lane, one thread.
  EXPECT_EQ(automatic(8, 1).lanes, 1);
  EXPECT_EQ(automatic(8, 1).threads_per_lane, 1);
  // threads=2 on 2 cores: as the default there.
  EXPECT_EQ(automatic(2, 2).lanes, 2);
  // threads=4 on 16 cores: the rule runs on the 4 threads (2 x 2).
  EXPECT_EQ(automatic(16, 4).lanes, 2);
  EXPECT_EQ(automatic(16, 4).threads_per_lane, 2);
  // More threads than cores: never more lanes than cores.
  EXPECT_EQ(automatic(2, 16).lanes, 2);
  EXPECT_EQ(automatic(2, 16).threads_per_lane, 8);
  EXPECT_EQ(automatic(1, 9).lanes, 1);
}

TEST(LanesRule, NeverMoreThanTheLoaderTakes) {
  EXPECT_EQ(automatic(100000).lanes, 64);
  EXPECT_EQ(automatic(100000).threads_per_lane, 100000 / 64);
}

TEST(LanesRule, ASetLaneCountIsKept) {
  EXPECT_EQ(choose_lanes({2, 0, 1}).lanes, 1);
  EXPECT_EQ(choose_lanes({2, 0, 1}).threads_per_lane, 2);
  EXPECT_EQ(choose_lanes({16, 0, 3}).lanes, 3);
  EXPECT_EQ(choose_lanes({16, 0, 3}).threads_per_lane, 5);
  // Out of range stays out of range: the loader refuses it, naming it.
  EXPECT_EQ(choose_lanes({2, 0, 5}).lanes, 5);
}

TEST(LanesRule, NonsenseCountsGiveOneLane) {
  EXPECT_EQ(automatic(0).lanes, 1);
  EXPECT_EQ(automatic(-3).lanes, 1);
  EXPECT_EQ(automatic(-3).threads_per_lane, 1);
  EXPECT_EQ(automatic(4, -2).lanes, 2) << "threads below 0 read as automatic";
}
