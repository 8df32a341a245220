// Once-per-burst reporting of bad frames, and the invalid-frame counter.
#include <gtest/gtest.h>

#include <vector>

#include "common/burst_report.h"
#include "common/stream_stats.h"

using namespace torchinfer;

TEST(BurstReport, WarnsOnTheFirstBadFrameOfEachBurst) {
  BurstReport r;
  // good, bad x3, good x2, bad, good, bad x2
  const std::vector<bool> bad{false, true, true, true, false, false, true, false, true, true};
  std::vector<int> warned_at;
  std::vector<std::uint64_t> previous;
  for (std::size_t i = 0; i < bad.size(); ++i)
    if (r.record(bad[i])) {
      warned_at.push_back(static_cast<int>(i));
      previous.push_back(r.previous_burst());
    }
  EXPECT_EQ(warned_at, (std::vector<int>{1, 6, 8}));
  // Each warning names the length of the burst before it.
  EXPECT_EQ(previous, (std::vector<std::uint64_t>{0, 3, 1}));
  EXPECT_EQ(r.bursts(), 3u);
  EXPECT_EQ(r.total_bad(), 6u);
  EXPECT_EQ(r.current_burst(), 2u);
}

TEST(BurstReport, AllGoodNeverWarnsAndAFirstBadFrameDoes) {
  BurstReport good;
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(good.record(false));
  EXPECT_EQ(good.bursts(), 0u);
  EXPECT_EQ(good.total_bad(), 0u);
  BurstReport bad;
  EXPECT_TRUE(bad.record(true));
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(bad.record(true));
  EXPECT_EQ(bad.bursts(), 1u);
  EXPECT_EQ(bad.current_burst(), 101u);
  EXPECT_EQ(bad.previous_burst(), 0u);
}

TEST(StreamStats, CountsInvalidFrames) {
  StreamStats s;
  s.frame_invalid();
  s.frame_invalid();
  const StatsSnapshot snap = s.snapshot(StreamStats::Clock::now(), false);
  EXPECT_EQ(snap.invalid, 2u);
  EXPECT_EQ(snap.inferred, 0u);
}
