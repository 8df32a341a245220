// torchinfer inference-region=tiles with torchnms: a frame is cut into a
// grid of model-sized tiles, inferred as one batch, and the tiles'
// detections come back as one frame's, merged across the tile borders.
// bright_box.pt (models/make_tile_test_models.py) boxes exactly the bright
// pixels each tile saw, so every box is known to the pixel.
#include <gst/check/gstharness.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

using namespace torchinfer::test;

namespace {

struct Rect {
  int x, y, w, h;
};

// A frame of `format` (RGB, GRAY8, GRAY16_LE), black with white rectangles.
GstBuffer* frame_with(const GstVideoInfo& info, const std::vector<Rect>& white, GstClockTime pts) {
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstVideoFrame f;
  EXPECT_TRUE(gst_video_frame_map(&f, const_cast<GstVideoInfo*>(&info), buf, GST_MAP_WRITE));
  auto* data = static_cast<guint8*>(GST_VIDEO_FRAME_PLANE_DATA(&f, 0));
  const int stride = GST_VIDEO_FRAME_PLANE_STRIDE(&f, 0);
  const int pixel = GST_VIDEO_FRAME_COMP_PSTRIDE(&f, 0);
  std::memset(data, 0, static_cast<std::size_t>(stride) * GST_VIDEO_INFO_HEIGHT(&info));
  for (const Rect& r : white)
    for (int y = r.y; y < r.y + r.h; ++y)
      std::memset(data + y * stride + r.x * pixel, 0xff, r.w * pixel);
  gst_video_frame_unmap(&f);
  GST_BUFFER_PTS(buf) = pts;
  GST_BUFFER_DURATION(buf) = GST_SECOND / 30;
  return buf;
}

std::string caps_of(const char* format, int w, int h) {
  return std::string("video/x-raw,format=") + format + ",width=" + std::to_string(w) +
         ",height=" + std::to_string(h) + ",framerate=30/1";
}

GstHarness* tiles_harness(const std::string& infer_props, const std::string& caps) {
  GstHarness* h = gst_harness_new_parse(
      ("torchinfer name=infer inference-region=tiles model=" + model("bright_box.pt") + " " +
       infer_props + " ! torchnms name=nms")
          .c_str());
  gst_harness_set_live(h, FALSE);  // drop-policy=auto blocks: no frame skipped under load
  gst_harness_set_src_caps_str(h, caps.c_str());
  return h;
}

// The detections' boxes in frame pixels (the param holds them normalised).
std::vector<std::array<double, 4>> boxes_of(GstBuffer* buf, double w = 160, double h = 64) {
  std::vector<std::array<double, 4>> out;
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    GstTorchDetection d;
    if (gst_torch_detection_from_roi(reinterpret_cast<GstVideoRegionOfInterestMeta*>(m), &d))
      out.push_back({d.x_min * w, d.y_min * h, d.x_max * w, d.y_max * h});
  }
  return out;
}

// (tile_index, tile_count) of each tensor meta, in the buffer's order.
std::vector<std::pair<int, int>> tiles_of(GstBuffer* buf) {
  std::vector<std::pair<int, int>> out;
  gpointer iter = nullptr;
  while (GstMeta* m =
             gst_buffer_iterate_meta_filtered(buf, &iter, GST_TORCH_TENSOR_META_API_TYPE)) {
    const auto* t = reinterpret_cast<GstTorchTensorMeta*>(m);
    EXPECT_EQ(t->roi_id, -1);
    out.push_back({t->tile_index, static_cast<int>(t->tile_count)});
  }
  return out;
}

// What each tile's tensor meta says of its result, in the buffer's order.
struct TileResult {
  int index;
  bool inferred;
  int skip;                 // GstTorchSkipReason
  GstClockTime result_pts;  // the frame it was computed on
  bool operator==(const TileResult& o) const {
    return index == o.index && inferred == o.inferred && skip == o.skip &&
           result_pts == o.result_pts;
  }
};
std::ostream& operator<<(std::ostream& os, const TileResult& t) {
  return os << "{" << t.index << " " << t.inferred << " " << t.skip << " " << t.result_pts << "}";
}

std::vector<TileResult> tile_results(GstBuffer* buf) {
  std::vector<TileResult> out;
  gpointer iter = nullptr;
  while (GstMeta* m =
             gst_buffer_iterate_meta_filtered(buf, &iter, GST_TORCH_TENSOR_META_API_TYPE)) {
    const auto* t = reinterpret_cast<GstTorchTensorMeta*>(m);
    out.push_back({t->tile_index, t->inferred != FALSE, t->skip_reason, t->result_pts});
  }
  return out;
}

guint64 stat_of(GstHarness* h, const char* field) {
  GstElement* infer = gst_bin_get_by_name(GST_BIN(h->element), "infer");
  GstStructure* st = nullptr;
  g_object_get(infer, "stats", &st, nullptr);
  gst_object_unref(infer);
  guint64 v = G_MAXUINT64;
  EXPECT_TRUE(st && gst_structure_get_uint64(st, field, &v)) << field;
  if (st) gst_structure_free(st);
  return v;
}

// 160x64 frame, 64x64 tiles (the model's input), overlap 0.25 = 16 px:
// tiles at x 0, 48, 96. A spot at x 40..70 is cut by tile 0's right side
// (it sees 40..64) and tile 1's left (48..70); one at x 120..130 lies in
// tile 2 alone.
const std::vector<Rect> kSpots{{40, 20, 30, 20}, {120, 5, 10, 10}};
const std::vector<std::array<double, 4>> kBoxes{{40, 20, 70, 40}, {120, 5, 130, 15}};

}  // namespace

TEST(TorchInferTiles, EachFrameIsItsTilesAndOneFramesDetections) {
  for (const char* format : {"RGB", "GRAY8", "GRAY16_LE"}) {
    SCOPED_TRACE(format);
    const std::string caps = caps_of(format, 160, 64);
    const GstVideoInfo info = info_of(caps);
    GstHarness* h = tiles_harness("tile-overlap=0.25 batch-size=3", caps);
    constexpr int kFrames = 4;
    for (int i = 0; i < kFrames; ++i)
      ASSERT_EQ(gst_harness_push(h, frame_with(info, kSpots, i * GST_SECOND / 30)), GST_FLOW_OK);
    for (int i = 0; i < kFrames; ++i) {
      GstBuffer* out = gst_harness_pull(h);
      ASSERT_NE(out, nullptr);
      EXPECT_EQ(GST_BUFFER_PTS(out), static_cast<GstClockTime>(i * GST_SECOND / 30));
      EXPECT_EQ(GST_BUFFER_DURATION(out), GST_SECOND / 30);
      EXPECT_EQ(tiles_of(out), (std::vector<std::pair<int, int>>{{0, 3}, {1, 3}, {2, 3}}));
      EXPECT_EQ(boxes_of(out), kBoxes);
      // The tiles are no whole-frame result.
      EXPECT_EQ(gst_buffer_get_torch_tensor_meta(out), nullptr);
      gst_buffer_unref(out);
    }
    EXPECT_EQ(gst_harness_buffers_in_queue(h), 0u);
    EXPECT_EQ(stat_of(h, "regions-inferred"), 3u * kFrames);
    EXPECT_EQ(stat_of(h, "regions-dropped"), 0u);
    gst_harness_teardown(h);
  }
}

TEST(TorchInferTiles, BayerTilesAreCutFromTheMosaic) {
  // A white spot on a Bayer mosaic: every sample 255 inside, so the tiles
  // demosaic it white; its edges blur by the interpolation, hence a pixel
  // of tolerance (the grid and the merge are what is tested here).
  const std::string caps = "video/x-bayer,format=rggb,width=160,height=64,framerate=30/1";
  GstHarness* h = tiles_harness("tile-overlap=0.25", caps);
  GstBuffer* in = gst_buffer_new_allocate(nullptr, 160 * 64, nullptr);
  GstMapInfo map;
  ASSERT_TRUE(gst_buffer_map(in, &map, GST_MAP_WRITE));
  std::memset(map.data, 0, map.size);
  for (const Rect& r : kSpots)
    for (int y = r.y; y < r.y + r.h; ++y) std::memset(map.data + y * 160 + r.x, 0xff, r.w);
  gst_buffer_unmap(in, &map);
  GST_BUFFER_PTS(in) = 7;
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(GST_BUFFER_PTS(out), 7u);
  EXPECT_EQ(tiles_of(out), (std::vector<std::pair<int, int>>{{0, 3}, {1, 3}, {2, 3}}));
  const auto boxes = boxes_of(out);
  ASSERT_EQ(boxes.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t k = 0; k < 4; ++k) EXPECT_NEAR(boxes[i][k], kBoxes[i][k], 1.0) << i << k;
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInferTiles, TileSizeFromThePropertiesAndOneTileWhenLarger) {
  const std::string caps = caps_of("RGB", 160, 64);
  const GstVideoInfo info = info_of(caps);
  // 200x100 tiles are cut to the 160x64 frame: one tile, resized to the
  // model's 64x64: x 40..70 is 16..28 there (x 0.4), and maps back exactly.
  GstHarness* h = tiles_harness("tile-width=200 tile-height=100", caps);
  GstBuffer* out = gst_harness_push_and_pull(h, frame_with(info, {{40, 20, 30, 20}}, 0));
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(tiles_of(out), (std::vector<std::pair<int, int>>{{0, 1}}));
  EXPECT_EQ(boxes_of(out), (std::vector<std::array<double, 4>>{{40, 20, 70, 40}}));
  gst_buffer_unref(out);
  EXPECT_EQ(stat_of(h, "regions-inferred"), 1u);
  gst_harness_teardown(h);
}

// inference-gate=motion with tiles: each tile is judged on its own; the
// tiles that did not move carry their latest result, so torchnms still
// gives every box, and only the moved tile is inferred again.
TEST(TorchInferTiles, MotionGateInfersOnlyTheTilesThatMovedAndCarriesTheRest) {
  const std::string caps = caps_of("RGB", 160, 64);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h = tiles_harness(
      "tile-overlap=0.25 batch-size=3 inference-gate=motion motion-hold=0 motion-threshold=2 "
      "motion-keyframe-interval=100",
      caps);
  const GstClockTime t[] = {0, GST_SECOND / 30, 2 * GST_SECOND / 30};
  // The spot of tile 2 alone moves on the third frame: tiles 0 and 1 still.
  const std::vector<Rect> moved{kSpots[0], {130, 30, 10, 10}};
  const std::vector<std::vector<Rect>> frames{kSpots, kSpots, moved};
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(gst_harness_push(h, frame_with(info, frames[i], t[i])), GST_FLOW_OK);
  const int still = GST_TORCH_SKIP_STILL, none = GST_TORCH_SKIP_NONE;
  const std::vector<std::vector<TileResult>> want{
      {{0, true, none, t[0]}, {1, true, none, t[0]}, {2, true, none, t[0]}},
      {{0, false, still, t[0]}, {1, false, still, t[0]}, {2, false, still, t[0]}},
      {{0, false, still, t[0]}, {1, false, still, t[0]}, {2, true, none, t[2]}}};
  const std::vector<std::vector<std::array<double, 4>>> boxes{
      kBoxes, kBoxes, {{40, 20, 70, 40}, {130, 30, 140, 40}}};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    GstBuffer* out = gst_harness_pull(h);
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(GST_BUFFER_PTS(out), t[i]);
    EXPECT_EQ(tile_results(out), want[i]);
    EXPECT_EQ(boxes_of(out), boxes[i]);
    gst_buffer_unref(out);
  }
  // Frames in = inferred (any tile) + skipped still (every tile still).
  EXPECT_EQ(stat_of(h, "frames-in"), 3u);
  EXPECT_EQ(stat_of(h, "frames-out"), 3u);
  EXPECT_EQ(stat_of(h, "frames-inferred"), 2u);
  EXPECT_EQ(stat_of(h, "frames-skipped-still"), 1u);
  EXPECT_EQ(stat_of(h, "regions-inferred"), 4u);
  EXPECT_EQ(stat_of(h, "regions-reused"), 5u);
  gst_harness_teardown(h);
}

TEST(TorchInferTiles, AFrameNotDueCarriesEveryTilesLatestResult) {
  const std::string caps = caps_of("GRAY8", 160, 64);
  const GstVideoInfo info = info_of(caps);
  GstHarness* h = tiles_harness("tile-overlap=0.25 batch-size=3 inference-interval=2", caps);
  ASSERT_EQ(gst_harness_push(h, frame_with(info, kSpots, 0)), GST_FLOW_OK);
  // Not due: its own spots are not looked at, the first frame's boxes stay.
  ASSERT_EQ(gst_harness_push(h, frame_with(info, {}, 10)), GST_FLOW_OK);
  gst_buffer_unref(gst_harness_pull(h));
  GstBuffer* out = gst_harness_pull(h);
  ASSERT_NE(out, nullptr);
  const int interval = GST_TORCH_SKIP_INTERVAL;
  EXPECT_EQ(tile_results(out),
            (std::vector<TileResult>{
                {0, false, interval, 0}, {1, false, interval, 0}, {2, false, interval, 0}}));
  EXPECT_EQ(boxes_of(out), kBoxes);
  gst_buffer_unref(out);
  EXPECT_EQ(stat_of(h, "regions-reused"), 3u);
  gst_harness_teardown(h);
}

// A new frame size makes a new grid: tile i covers other pixels, so a
// frame not due after it carries no tile of the old size.
TEST(TorchInferTiles, ANewFrameSizeCarriesNoTileOfTheOldGrid) {
  const std::string wide = caps_of("GRAY8", 160, 64), narrow = caps_of("GRAY8", 128, 64);
  GstHarness* h = tiles_harness("tile-overlap=0.25 batch-size=3 inference-interval=2", wide);
  ASSERT_EQ(gst_harness_push(h, frame_with(info_of(wide), kSpots, 0)), GST_FLOW_OK);
  GstBuffer* first = gst_harness_pull(h);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(boxes_of(first), kBoxes);
  gst_buffer_unref(first);
  gst_harness_set_src_caps_str(h, narrow.c_str());
  // Not due, and of a new size: no tile carried, no box.
  ASSERT_EQ(gst_harness_push(h, frame_with(info_of(narrow), {{40, 20, 30, 20}}, 10)), GST_FLOW_OK);
  GstBuffer* out = gst_harness_pull(h);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(tile_results(out), std::vector<TileResult>{});
  EXPECT_EQ(boxes_of(out, 128, 64), (std::vector<std::array<double, 4>>{}));
  gst_buffer_unref(out);
  // Due: inferred on its own grid (x 0, 48, 64).
  ASSERT_EQ(gst_harness_push(h, frame_with(info_of(narrow), {{40, 20, 30, 20}}, 20)), GST_FLOW_OK);
  out = gst_harness_pull(h);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(tiles_of(out), (std::vector<std::pair<int, int>>{{0, 3}, {1, 3}, {2, 3}}));
  EXPECT_EQ(boxes_of(out, 128, 64), (std::vector<std::array<double, 4>>{{40, 20, 70, 40}}));
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchInferTiles, OverlapOutsideItsRangeIsRefused) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  ASSERT_NE(e, nullptr);
  WarningCatcher catcher("GLib-GObject");
  g_object_set(e, "tile-overlap", 1.0, nullptr);
  g_object_set(e, "tile-overlap", -0.1, nullptr);
  gdouble v = 0;
  g_object_get(e, "tile-overlap", &v, nullptr);
  EXPECT_DOUBLE_EQ(v, 0.2);  // the default stayed
  EXPECT_EQ(catcher.messages().size(), 2u);
  gst_object_unref(e);
}

TEST(TorchInferTiles, CropAndTilesExcludeEachOther) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  ASSERT_NE(e, nullptr);
  gst_util_set_object_arg(G_OBJECT(e), "inference-region", "tiles");
  gst_util_set_object_arg(G_OBJECT(e), "crop", "0,0,10,10");
  g_object_set(e, "model", model("bright_box.pt").c_str(), nullptr);
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  EXPECT_NE(r.error.message.find("crop and inference-region=tiles"), std::string::npos)
      << r.error.message;
  gst_object_unref(e);
}
