// inference-region=tiles: the tile grid (stream/tiles.h) and the merge of
// the tiles' detections into one frame's (decode/tile_merge.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/error.h"
#include "decode/tile_merge.h"
#include "stream/tiles.h"

using namespace torchinfer;

namespace {

std::vector<std::vector<int>> as_rows(const std::vector<Crop>& tiles) {
  std::vector<std::vector<int>> out;
  for (const Crop& c : tiles) out.push_back({c.x, c.y, c.width, c.height});
  return out;
}

Detection det(int label, double conf, double x0, double y0, double x1, double y1) {
  Detection d;
  d.label_id = label;
  d.label = "c" + std::to_string(label);
  d.confidence = conf;
  d.x_min = x0;
  d.y_min = y0;
  d.x_max = x1;
  d.y_max = y1;
  return d;
}

void expect_box(const Detection& d, double x0, double y0, double x1, double y1) {
  EXPECT_DOUBLE_EQ(d.x_min, x0);
  EXPECT_DOUBLE_EQ(d.y_min, y0);
  EXPECT_DOUBLE_EQ(d.x_max, x1);
  EXPECT_DOUBLE_EQ(d.y_max, y1);
}

}  // namespace

TEST(TileGrid, TwelveMegapixelsIn640TilesWithOverlap) {
  // 4000x3000, 640 tiles, overlap 0.2 -> 128 px, step 512.
  // x: 0,512,...,3072 (7 starts < 3360) then 3360; y: 0,512,...,2048 then 2360.
  const auto tiles = tile_grid(4000, 3000, {640, 640, 0.2});
  ASSERT_EQ(tiles.size(), 8u * 6u);
  EXPECT_EQ(tile_starts(4000, 640, 0.2),
            (std::vector<int>{0, 512, 1024, 1536, 2048, 2560, 3072, 3360}));
  EXPECT_EQ(tile_starts(3000, 640, 0.2), (std::vector<int>{0, 512, 1024, 1536, 2048, 2360}));
  // Row-major, every tile full-size and inside the frame.
  EXPECT_EQ(
      as_rows({tiles[0], tiles[7], tiles[8], tiles[47]}),
      (std::vector<std::vector<int>>{
          {0, 0, 640, 640}, {3360, 0, 640, 640}, {0, 512, 640, 640}, {3360, 2360, 640, 640}}));
  for (const Crop& c : tiles) {
    EXPECT_LE(c.x + c.width, 4000);
    EXPECT_LE(c.y + c.height, 3000);
  }
}

TEST(TileGrid, ExactFitNeedsNoShiftedTile) {
  // 1000 = 0..400, 300..700, 600..1000 with overlap 100 px (0.25 of 400).
  EXPECT_EQ(tile_starts(1000, 400, 0.25), (std::vector<int>{0, 300, 600}));
  // No overlap: tiles side by side; a remainder gives a shifted last tile.
  EXPECT_EQ(tile_starts(1200, 400, 0.0), (std::vector<int>{0, 400, 800}));
  EXPECT_EQ(tile_starts(1000, 400, 0.0), (std::vector<int>{0, 400, 600}));
}

TEST(TileGrid, OverlapRoundsHalfAwayFromZero) {
  // 0.25 x 10 = 2.5 -> 3 px: step 7. 0.24 x 10 = 2.4 -> 2 px: step 8.
  EXPECT_EQ(tile_starts(30, 10, 0.25), (std::vector<int>{0, 7, 14, 20}));
  EXPECT_EQ(tile_starts(30, 10, 0.24), (std::vector<int>{0, 8, 16, 20}));
  // 0.9 of a 1-pixel-step tile still moves one pixel at a time.
  EXPECT_EQ(tile_starts(4, 2, 0.9), (std::vector<int>{0, 1, 2}));
}

TEST(TileGrid, TileLargerThanTheFrameIsCutToIt) {
  // Documented: one tile along that axis, of the frame's size.
  EXPECT_EQ(as_rows(tile_grid(300, 200, {640, 640, 0.2})),
            (std::vector<std::vector<int>>{{0, 0, 300, 200}}));
  EXPECT_EQ(as_rows(tile_grid(1000, 200, {640, 640, 0.2})),
            (std::vector<std::vector<int>>{{0, 0, 640, 200}, {360, 0, 640, 200}}));
}

TEST(TileGrid, RefusesBadValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double bad : {1.0, 0.95, -0.1, nan})
    EXPECT_THROW(tile_grid(100, 100, {10, 10, bad}), Error) << bad;
  EXPECT_NO_THROW(tile_grid(100, 100, {10, 10, 0.9}));
  EXPECT_THROW(tile_grid(100, 100, {0, 10, 0.2}), Error);
  EXPECT_THROW(tile_grid(100, 100, {10, -5, 0.2}), Error);
  EXPECT_THROW(tile_grid(0, 100, {10, 10, 0.2}), Error);
  try {
    tile_grid(100, 100, {10, 10, 1.0});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("tile-overlap"), std::string::npos);
  }
}

// Two tiles of a 200x100 frame: A = x 0..120, B = x 80..200 (overlap 40).
const Box kTileA{0, 0, 120, 100};
const Box kTileB{80, 0, 200, 100};
TileMergeOptions two_tiles() {
  TileMergeOptions o;
  o.frame_width = 200;
  o.frame_height = 100;
  o.iou_threshold = 0.45;
  return o;
}

TEST(TileMerge, ObjectCutByABorderIsOneBoxWithTheWholeTilesExtent) {
  // Object at x 100..150: A sees the piece 100..120 (cut by its right side),
  // B sees it whole. IoU 20/50 = 0.4 would not suppress; the piece lies
  // inside the whole box.
  const auto out = merge_tile_detections(
      {{kTileA, {det(0, 0.6, 100, 40, 120, 60)}}, {kTileB, {det(0, 0.9, 100, 40, 150, 60)}}},
      two_tiles());
  ASSERT_EQ(out.size(), 1u);
  expect_box(out[0], 100, 40, 150, 60);
  EXPECT_DOUBLE_EQ(out[0].confidence, 0.9);
}

TEST(TileMerge, ObjectWiderThanTheOverlapIsTheUnionOfItsPieces) {
  // Object x 60..150: A sees 60..120 (cut), B sees 80..150 (cut by its left
  // side). IoU 40/90 = 0.44; over the smaller 40/60 = 0.67.
  const auto out = merge_tile_detections(
      {{kTileA, {det(0, 0.7, 60, 30, 120, 70)}}, {kTileB, {det(0, 0.8, 80, 30, 150, 70)}}},
      two_tiles());
  ASSERT_EQ(out.size(), 1u);
  expect_box(out[0], 60, 30, 150, 70);
  EXPECT_DOUBLE_EQ(out[0].confidence, 0.8);
  EXPECT_EQ(out[0].label_id, 0);
}

TEST(TileMerge, SeparateObjectsStaySeparate) {
  const auto out = merge_tile_detections(
      {{kTileA, {det(0, 0.7, 10, 10, 30, 30)}}, {kTileB, {det(0, 0.9, 160, 50, 190, 80)}}},
      two_tiles());
  ASSERT_EQ(out.size(), 2u);
  expect_box(out[0], 160, 50, 190, 80);  // best first
  expect_box(out[1], 10, 10, 30, 30);
}

TEST(TileMerge, ClassesMergeOnlyWithTheirOwn) {
  // The same pieces as above but of two classes: two boxes; class-agnostic: one.
  const std::vector<TileDetections> tiles{{kTileA, {det(0, 0.7, 60, 30, 120, 70)}},
                                          {kTileB, {det(1, 0.8, 80, 30, 150, 70)}}};
  EXPECT_EQ(merge_tile_detections(tiles, two_tiles()).size(), 2u);
  TileMergeOptions any = two_tiles();
  any.class_agnostic = true;
  EXPECT_EQ(merge_tile_detections(tiles, any).size(), 1u);
}

TEST(TileMerge, UncutNeighboursInsideOneAnotherFollowPlainNms) {
  // A small box inside a large one, neither touching a tile border inside
  // the frame (A's left side is the frame's edge): IoU 0.04, both kept.
  const auto out = merge_tile_detections(
      {{kTileA, {det(0, 0.9, 0, 10, 50, 60), det(0, 0.5, 10, 20, 20, 30)}}}, two_tiles());
  ASSERT_EQ(out.size(), 2u);
  // Overlapping duplicates in the overlap (both whole): NMS keeps the best.
  const auto dup = merge_tile_detections(
      {{kTileA, {det(0, 0.6, 90, 40, 110, 60)}}, {kTileB, {det(0, 0.8, 91, 40, 110, 60)}}},
      two_tiles());
  ASSERT_EQ(dup.size(), 1u);
  expect_box(dup[0], 91, 40, 110, 60);
}

TEST(TileMerge, BoxesClippedToTheirTileAndCapped) {
  TileMergeOptions o = two_tiles();
  o.max_detections = 1;
  // B's box reaching past B's left side is clipped to 80.., A's is kept apart.
  const auto out = merge_tile_detections(
      {{kTileA, {det(0, 0.5, 2, 2, 12, 12)}}, {kTileB, {det(0, 0.9, 60, 2, 100, 12)}}}, o);
  ASSERT_EQ(out.size(), 1u);
  expect_box(out[0], 80, 2, 100, 12);
}
