// inference-region=tiles with inference-gate=motion (stream/tile_gate.h):
// each tile judged on its own against its own reference, exactly (which
// tiles move, hold, staggered keyframes), overlapping tiles that do not
// hide a change from each other, and the cases that start afresh.
#include <gtest/gtest.h>

#include <vector>

#include "common/error.h"
#include "gray_frame.h"
#include "stream/tile_gate.h"

using namespace torchinfer;
using torchinfer::test::Gray;

namespace {

constexpr GateDecision F = GateDecision::kFirst, M = GateDecision::kMotion, H = GateDecision::kHold,
                       K = GateDecision::kKeyframe, S = GateDecision::kStill;

MotionGateOptions options(int hold = 0, int keyframe = 100, double threshold = 8) {
  MotionGateOptions o;
  o.enabled = true;
  o.threshold = threshold;
  o.hold = hold;
  o.keyframe_interval = keyframe;
  return o;
}

RegionOfInterest tile(int x, int y, int w, int h) {
  RegionOfInterest r;
  r.x = x, r.y = y, r.width = w, r.height = h;
  return r;
}

// Columns of width w over a frame height h high.
std::vector<RegionOfInterest> columns(int n, int w, int h) {
  std::vector<RegionOfInterest> out;
  for (int i = 0; i < n; ++i) out.push_back(tile(i * w, 0, w, h));
  return out;
}

// Judges the frame and, as the session does, commits it (the frame went to
// the model unless every tile was still).
std::vector<GateDecision> step(TileGate& g, const Gray& f,
                               const std::vector<RegionOfInterest>& tiles) {
  std::vector<GateDecision> d = g.decide(f.view(), tiles);
  for (GateDecision x : d)
    if (x != S) {
      g.commit();
      break;
    }
  return d;
}

using D = std::vector<GateDecision>;

}  // namespace

TEST(TileGate, OnlyTheTileThatChangedIsInferredThenItsHold) {
  TileGate g(options(/*hold=*/1));
  const auto tiles = columns(2, 128, 64);
  Gray f(256, 64, 50);
  EXPECT_EQ(step(g, f, tiles), (D{F, F}));
  EXPECT_EQ(step(g, f, tiles), (D{S, S}));
  f.add(140, 0, 200, 64, 30);  // inside tile 1 only
  EXPECT_EQ(step(g, f, tiles), (D{S, M}));
  EXPECT_EQ(step(g, f, tiles), (D{S, H}));
  EXPECT_EQ(step(g, f, tiles), (D{S, S}));
  f.add(0, 0, 10, 10, 30);  // a corner of tile 0: 1 of its 2 cells, mean 30*4/64 < 8
  EXPECT_EQ(step(g, f, tiles), (D{S, S}));
  f.add(0, 0, 64, 64, 10);  // now the cell's mean is over 8
  EXPECT_EQ(step(g, f, tiles), (D{M, S}));
}

TEST(TileGate, OverlappingTilesKeepTheirOwnReference) {
  // A = [0,128), B = [64,192): [64,128) is A's second cell and B's first.
  TileGate g(options());
  const std::vector<RegionOfInterest> tiles{tile(0, 0, 128, 64), tile(64, 0, 128, 64)};
  Gray f(192, 64, 50);
  EXPECT_EQ(step(g, f, tiles), (D{F, F}));
  f.add(0, 0, 64, 64, 20).add(64, 0, 128, 64, 5);  // A moves; the shared cell +5 only
  EXPECT_EQ(step(g, f, tiles), (D{M, S}));
  // The shared cell +5 again: +5 for A (inferred last frame), +10 for B,
  // whose reference is still the first frame. A shared reference would
  // have hidden the change from B.
  f.add(64, 0, 128, 64, 5);
  EXPECT_EQ(step(g, f, tiles), (D{S, M}));
  EXPECT_EQ(step(g, f, tiles), (D{S, S}));
}

TEST(TileGate, KeyframesAreStaggeredOneTileAFrame) {
  TileGate g(options(0, /*keyframe=*/4));
  const auto tiles = columns(4, 64, 64);
  const Gray f(256, 64, 50);
  EXPECT_EQ(step(g, f, tiles), (D{F, F, F, F}));
  EXPECT_EQ(step(g, f, tiles), (D{S, S, S, K}));
  EXPECT_EQ(step(g, f, tiles), (D{S, S, K, S}));
  EXPECT_EQ(step(g, f, tiles), (D{S, K, S, S}));
  EXPECT_EQ(step(g, f, tiles), (D{K, S, S, S}));
  EXPECT_EQ(step(g, f, tiles), (D{S, S, S, K}));
}

TEST(TileGate, AFrameNotCommittedLeavesTheReferences) {
  TileGate g(options());
  const auto tiles = columns(2, 64, 64);
  Gray f(128, 64, 50);
  step(g, f, tiles);
  f.add(0, 0, 64, 64, 20);
  EXPECT_EQ(g.decide(f.view(), tiles), (D{M, S}));  // not committed (busy)
  EXPECT_EQ(g.decide(f.view(), tiles), (D{M, S}));
}

TEST(TileGate, NewTilesNewSizeResetOrUnreadableStartAfresh) {
  TileGate g(options());
  auto tiles = columns(2, 64, 64);
  const Gray f(128, 64, 50);
  step(g, f, tiles);
  EXPECT_EQ(step(g, f, tiles), (D{S, S}));
  tiles[1].width = 60;  // a new grid
  EXPECT_EQ(step(g, f, tiles), (D{F, F}));
  EXPECT_EQ(step(g, f, tiles), (D{S, S}));
  const Gray wider(192, 64, 50);
  EXPECT_EQ(step(g, wider, tiles), (D{F, F}));
  g.reset();
  EXPECT_EQ(step(g, wider, tiles), (D{F, F}));
  EXPECT_EQ(g.decide(FrameView{}, tiles), (D{F, F}));  // no pixels
  g.commit();                                          // nothing to take
  EXPECT_EQ(step(g, wider, tiles), (D{F, F}));
  EXPECT_EQ(step(g, wider, tiles), (D{S, S}));
}

TEST(TileGate, ATileBetweenSamplesIsAlwaysInferred) {
  // Samples sit at x = 4, 12, ...: a tile of x 5..11 holds none.
  TileGate g(options());
  const std::vector<RegionOfInterest> tiles{tile(5, 0, 6, 64), tile(64, 0, 64, 64)};
  const Gray f(128, 64, 50);
  EXPECT_EQ(step(g, f, tiles), (D{F, F}));
  EXPECT_EQ(step(g, f, tiles), (D{F, S}));
}

TEST(TileGate, OptionsOutOfRangeAreRefused) {
  MotionGateOptions o = options();
  o.threshold = 300;
  EXPECT_THROW(TileGate{o}, Error);
  o = options();
  o.keyframe_interval = 0;
  EXPECT_THROW(TileGate{o}, Error);
  o = options();
  o.min_area = 1.5;
  EXPECT_THROW(TileGate{o}, Error);
}
