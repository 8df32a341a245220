// torchoverlay: draws in place in every format it accepts; frames without
// results pass through byte for byte.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "gsttorchtrack.h"
#include "overlay/draw.h"

using namespace torchinfer;
using namespace torchinfer::test;

namespace {

std::string caps_for(const std::string& format) {
  return "video/x-raw,format=" + format + ",width=160,height=120,framerate=30/1";
}

// A black frame (YUV: limited-range black).
GstBuffer* black(const GstVideoInfo& info) {
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  GstVideoFrame f;
  gst_video_frame_map(&f, &info, buf, GST_MAP_WRITE);
  const bool yuv = GST_VIDEO_INFO_IS_YUV(&info);
  const GstVideoFormat fmt = GST_VIDEO_INFO_FORMAT(&info);
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&f); ++p) {
    auto* d = static_cast<guint8*>(GST_VIDEO_FRAME_PLANE_DATA(&f, p));
    const gsize n =
        GST_VIDEO_FRAME_PLANE_STRIDE(&f, p) * GST_VIDEO_FRAME_COMP_HEIGHT(&f, p == 0 ? 0 : 1);
    if (fmt == GST_VIDEO_FORMAT_YUY2 || fmt == GST_VIDEO_FORMAT_UYVY) {
      for (gsize i = 0; i < n; ++i)
        d[i] = (i % 2 == (fmt == GST_VIDEO_FORMAT_YUY2 ? 0u : 1u)) ? 16 : 128;
    } else {
      std::memset(d, yuv ? (p == 0 ? 16 : 128) : 0, n);
    }
  }
  gst_video_frame_unmap(&f);
  return buf;
}

struct Pixel {
  int y, u, v;  // or R, G, B for RGB formats
};

// Pixel (x, y) located through GStreamer's own description of the format
// (plane, pixel stride, offset and subsampling of each component), so the
// test does not share the element's format table. Gray: {y, 0, 0}.
Pixel read(const GstVideoInfo& info, GstBuffer* buf, int x, int y) {
  GstVideoFrame f;
  gst_video_frame_map(&f, &info, buf, GST_MAP_READ);
  const GstVideoFormatInfo* fi = info.finfo;
  auto comp = [&](guint c) -> int {
    const guint p = GST_VIDEO_FORMAT_INFO_PLANE(fi, c);
    const auto* d = static_cast<const guint8*>(GST_VIDEO_FRAME_PLANE_DATA(&f, p));
    return d[(y >> GST_VIDEO_FORMAT_INFO_H_SUB(fi, c)) * GST_VIDEO_FRAME_PLANE_STRIDE(&f, p) +
             (x >> GST_VIDEO_FORMAT_INFO_W_SUB(fi, c)) * GST_VIDEO_FORMAT_INFO_PSTRIDE(fi, c) +
             GST_VIDEO_FORMAT_INFO_POFFSET(fi, c)];
  };
  const Pixel px = GST_VIDEO_FORMAT_INFO_N_COMPONENTS(fi) == 1 ? Pixel{comp(0), 0, 0}
                                                               : Pixel{comp(0), comp(1), comp(2)};
  gst_video_frame_unmap(&f);
  return px;
}

GstBuffer* run_overlay(const std::string& caps, GstBuffer* in, const std::string& props = "") {
  GstHarness* h = gst_harness_new_parse(("torchoverlay " + props).c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  gst_harness_teardown(h);
  return out;
}

bool same_bytes(GstBuffer* a, GstBuffer* b) {
  GstMapInfo ma, mb;
  gst_buffer_map(a, &ma, GST_MAP_READ);
  gst_buffer_map(b, &mb, GST_MAP_READ);
  const bool same = ma.size == mb.size && std::memcmp(ma.data, mb.data, ma.size) == 0;
  gst_buffer_unmap(a, &ma);
  gst_buffer_unmap(b, &mb);
  return same;
}

}  // namespace

class TorchOverlayFormats : public testing::TestWithParam<const char*> {};

TEST_P(TorchOverlayFormats, DrawsTheClassColourOnTheBoxEdgeOnly) {
  const std::string caps = caps_for(GetParam());
  const GstVideoInfo info = info_of(caps);
  GstBuffer* in = black(info);
  ASSERT_NE(gst_buffer_add_torch_detection(in, "bolt", 3, 0.9, 40, 30, 120, 90, 160, 120), nullptr);
  GstBuffer* out = run_overlay(caps, in);
  ASSERT_NE(out, nullptr);
  const Rgb c = class_colour(3);
  Pixel want{c.r, c.g, c.b};
  Pixel bg{0, 0, 0};
  if (GST_VIDEO_INFO_IS_YUV(&info)) {
    std::uint8_t y, u, v;
    rgb_to_yuv(c, YuvMatrix::kBT601, false, &y, &u, &v);
    want = {y, u, v};
    bg = {16, 128, 128};
  } else if (GST_VIDEO_INFO_IS_GRAY(&info)) {  // GStreamer's gray is full range
    std::uint8_t y, u, v;
    rgb_to_yuv(c, YuvMatrix::kBT601, true, &y, &u, &v);
    want = {y, 0, 0};
  }
  for (auto [x, y] : {std::pair{40, 60}, std::pair{119, 60}, std::pair{80, 89}}) {
    const Pixel p = read(info, out, x, y);
    EXPECT_EQ(p.y, want.y) << GetParam() << " edge " << x << "," << y;
    EXPECT_EQ(p.u, want.u) << GetParam() << " edge " << x << "," << y;
    EXPECT_EQ(p.v, want.v) << GetParam() << " edge " << x << "," << y;
  }
  for (auto [x, y] : {std::pair{80, 60}, std::pair{150, 110}, std::pair{20, 100}}) {
    const Pixel p = read(info, out, x, y);
    EXPECT_EQ(p.y, bg.y) << GetParam() << " untouched " << x << "," << y;
    EXPECT_EQ(p.u, bg.u) << GetParam() << " untouched " << x << "," << y;
    EXPECT_EQ(p.v, bg.v) << GetParam() << " untouched " << x << "," << y;
  }
  gst_buffer_unref(out);
}

TEST_P(TorchOverlayFormats, FramesWithoutResultsAreUntouched) {
  const std::string caps = caps_for(GetParam());
  const GstVideoInfo info = info_of(caps);
  GstBuffer* in = make_video_buffer(info, 3);
  GstBuffer* expected = gst_buffer_copy_deep(in);
  GstBuffer* out = run_overlay(caps, in);
  EXPECT_TRUE(same_bytes(out, expected)) << GetParam();
  gst_buffer_unref(out);
  gst_buffer_unref(expected);
}

INSTANTIATE_TEST_SUITE_P(Formats, TorchOverlayFormats,
                         testing::Values("RGB", "BGR", "RGBx", "BGRx", "xRGB", "xBGR", "RGBA",
                                         "BGRA", "ARGB", "ABGR", "YUY2", "UYVY", "NV12", "NV21",
                                         "I420", "YV12", "GRAY8"));

TEST(TorchOverlay, ColoursAreStablePerClass) {
  for (int id = 0; id < 30; ++id) {
    EXPECT_EQ(class_colour(id).r, class_colour(id).r);
    const Rgb a = class_colour(id), b = class_colour(id + 1);
    EXPECT_FALSE(a.r == b.r && a.g == b.g && a.b == b.b) << id;
  }
  const Rgb a = class_colour(5), b = class_colour(5);
  EXPECT_TRUE(a.r == b.r && a.g == b.g && a.b == b.b);
}

TEST(TorchOverlay, ClassificationAndHudWriteTheTopLeftCorner) {
  const std::string caps = caps_for("I420");
  const GstVideoInfo info = info_of(caps);
  // Mid-grey, so the black text background shows.
  auto grey = [&] {
    GstBuffer* b = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
    gst_buffer_memset(b, 0, 128, GST_VIDEO_INFO_SIZE(&info));
    return b;
  };
  GstBuffer* plain = run_overlay(caps, grey(), "show-hud=false");
  EXPECT_EQ(read(info, plain, 1, 1).y, 128);
  gst_buffer_unref(plain);
  GstBuffer* hud = run_overlay(caps, grey(), "show-hud=true");
  EXPECT_EQ(read(info, hud, 1, 1).y, 16);  // black background of the HUD line
  gst_buffer_unref(hud);

  gst_torch_classification_meta_register();
  GstBuffer* in = grey();
  GstCustomMeta* cm = gst_buffer_add_custom_meta(in, GST_TORCH_CLASSIFICATION_META_NAME);
  GstStructure* s = gst_custom_meta_get_structure(cm);
  gst_structure_set(s, "label", G_TYPE_STRING, "washer", "confidence", G_TYPE_DOUBLE, 0.5, nullptr);
  GstBuffer* cls = run_overlay(caps, in);
  EXPECT_EQ(read(info, cls, 1, 1).y, 16);
  gst_buffer_unref(cls);
  GstBuffer* in2 = grey();
  cm = gst_buffer_add_custom_meta(in2, GST_TORCH_CLASSIFICATION_META_NAME);
  gst_structure_set(gst_custom_meta_get_structure(cm), "label", G_TYPE_STRING, "washer",
                    "confidence", G_TYPE_DOUBLE, 0.5, nullptr);
  GstBuffer* off = run_overlay(caps, in2, "show-classification=false");
  EXPECT_EQ(read(info, off, 1, 1).y, 128);
  gst_buffer_unref(off);
}

TEST(TorchOverlay, AfterTorchnmsInAPipelineOnYuy2) {
  const std::string caps = "video/x-raw,format=YUY2,width=640,height=512";
  GstHarness* h = gst_harness_new_parse(
      ("torchinfer model=" + model("yolo_candidates.pt") + " ! torchnms ! torchoverlay").c_str());
  gst_harness_set_src_caps_str(h, caps.c_str());
  const GstVideoInfo info = info_of(caps);
  GstBuffer* in = black(info);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  // The 0.9 bolt (pixels 96,80-224,176, two boxes drawn over it may differ):
  // its left edge at mid-height carries class 0's colour.
  std::uint8_t y, u, v;
  rgb_to_yuv(class_colour(0), YuvMatrix::kBT601, false, &y, &u, &v);
  EXPECT_EQ(read(info, out, 96, 150).y, y);
  EXPECT_EQ(read(info, out, 320, 400).y, 16);  // nothing there
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

TEST(TorchOverlayErrors, RejectsFormatsItCannotDrawOn) {
  GstHarness* h = gst_harness_new("torchoverlay");
  GstCaps* caps = gst_caps_from_string("video/x-raw,format=v210,width=64,height=48");
  GstCaps* allowed = gst_pad_query_caps(GST_PAD_PEER(h->srcpad), nullptr);
  EXPECT_FALSE(gst_caps_can_intersect(caps, allowed));
  gst_caps_unref(allowed);
  gst_caps_unref(caps);
  gst_harness_teardown(h);
}

namespace {

// A harness around a launch line, with a bus on it so warnings can be counted.
struct WatchedOverlay {
  GstHarness* h = nullptr;
  GstBus* bus = nullptr;

  WatchedOverlay(const std::string& line, const std::string& caps) {
    GstElement* bin = gst_parse_bin_from_description(line.c_str(), TRUE, nullptr);
    bus = gst_bus_new();
    gst_element_set_bus(bin, bus);
    h = gst_harness_new_with_element(bin, "sink", "src");
    gst_object_unref(bin);
    gst_harness_set_src_caps_str(h, caps.c_str());
  }
  ~WatchedOverlay() {
    gst_harness_teardown(h);
    gst_bus_set_flushing(bus, TRUE);
    gst_object_unref(bus);
  }
  void push(GstBuffer* b) {
    GstBuffer* out = gst_harness_push_and_pull(h, b);
    ASSERT_NE(out, nullptr);
    gst_buffer_unref(out);
  }
  void eos() { ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos())); }
  // Warnings posted so far (posted on the streaming thread: already there).
  std::vector<BusError> warnings() {
    std::vector<BusError> out;
    while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_WARNING)) {
      GError* err = nullptr;
      gchar* dbg = nullptr;
      gst_message_parse_warning(m, &err, &dbg);
      out.push_back({true, err->domain, err->code, err->message, dbg ? dbg : ""});
      g_error_free(err);
      g_free(dbg);
      gst_message_unref(m);
    }
    return out;
  }
};

}  // namespace

// Without torchinfer upstream nothing is drawn: say so once, after the
// first 10 frames, not on every frame.
TEST(TorchOverlayNoResults, WarnsOnceWhenTheFirstTenFramesCarryNoResults) {
  const std::string caps = caps_for("RGB");
  const GstVideoInfo info = info_of(caps);
  WatchedOverlay o("torchoverlay", caps);
  for (int i = 0; i < 9; ++i) o.push(make_video_buffer(info, i));
  EXPECT_TRUE(o.warnings().empty());
  o.push(make_video_buffer(info, 9));
  const auto w = o.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].domain, GST_STREAM_ERROR);
  EXPECT_EQ(w[0].code, GST_STREAM_ERROR_FORMAT);
  EXPECT_NE(w[0].message.find("No torchinfer results on the first 10 frame(s)"), std::string::npos)
      << w[0].message;
  EXPECT_NE(w[0].message.find("draws nothing"), std::string::npos) << w[0].message;
  EXPECT_NE(w[0].debug.find("put it after them"), std::string::npos) << w[0].debug;
  for (int i = 10; i < 40; ++i) o.push(make_video_buffer(info, i));
  o.eos();
  EXPECT_TRUE(o.warnings().empty());
}

TEST(TorchOverlayNoResults, AShortStreamWithoutResultsWarnsAtEos) {
  const std::string caps = caps_for("NV12");
  const GstVideoInfo info = info_of(caps);
  WatchedOverlay o("torchoverlay", caps);
  for (int i = 0; i < 3; ++i) o.push(make_video_buffer(info, i));
  EXPECT_TRUE(o.warnings().empty());
  o.eos();
  const auto w = o.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].message.find("No torchinfer results on the first 3 frame(s)"), std::string::npos)
      << w[0].message;
}

// Results on one early frame (a detection, a classification) are enough:
// later frames without any are an empty scene, not a mistake.
TEST(TorchOverlayNoResults, OneFrameWithResultsMeansNoWarning) {
  const std::string caps = caps_for("I420");
  const GstVideoInfo info = info_of(caps);
  gst_torch_classification_meta_register();
  for (int kind = 0; kind < 2; ++kind) {
    WatchedOverlay o("torchoverlay", caps);
    o.push(make_video_buffer(info, 0));
    GstBuffer* b = make_video_buffer(info, 1);
    if (kind == 0) {
      ASSERT_NE(gst_buffer_add_torch_detection(b, "bolt", 3, 0.9, 40, 30, 120, 90, 160, 120),
                nullptr);
    } else {
      GstCustomMeta* cm = gst_buffer_add_custom_meta(b, GST_TORCH_CLASSIFICATION_META_NAME);
      gst_structure_set(gst_custom_meta_get_structure(cm), "label", G_TYPE_STRING, "washer",
                        "confidence", G_TYPE_DOUBLE, 0.5, nullptr);
    }
    o.push(b);
    for (int i = 2; i < 30; ++i) o.push(make_video_buffer(info, i));
    o.eos();
    EXPECT_TRUE(o.warnings().empty()) << kind;
  }
}

// torchinfer and torchnms upstream with nothing above the threshold: no box
// to draw, but the results are there, so no warning.
TEST(TorchOverlayNoResults, NoDetectionsAfterTorchinferIsNotWarnedAbout) {
  const std::string caps = "video/x-raw,format=RGB,width=320,height=256,framerate=30/1";
  const GstVideoInfo info = info_of(caps);
  WatchedOverlay o("torchinfer model=" + model("yolo_candidates.pt") +
                       " ! torchnms confidence-threshold=0.999 ! torchoverlay",
                   caps);
  for (int i = 0; i < 12; ++i) o.push(black(info));
  o.eos();
  EXPECT_TRUE(o.warnings().empty());
}

namespace {

// An RGB frame of `info` with torchnms's bolt of the format tests, tracked
// by torchtrack as object 3.
GstBuffer* tracked_bolt(const GstVideoInfo& info, bool predicted) {
  GstBuffer* in = black(info);
  GstVideoRegionOfInterestMeta* roi =
      gst_buffer_add_torch_detection(in, "bolt", 3, 0.9, 40, 30, 120, 90, 160, 120);
  EXPECT_NE(roi, nullptr);
  gst_video_region_of_interest_meta_add_param(
      roi,
      gst_structure_new(GST_TORCHTRACK_OBJECT_ID_STRUCTURE_NAME, "id", G_TYPE_INT, 3, "predicted",
                        G_TYPE_BOOLEAN, predicted, "age", G_TYPE_INT, 7, nullptr));
  return in;
}

// What the drawing core makes of that box with this text: the reference the
// element's output must equal byte for byte.
GstBuffer* drawn(const GstVideoInfo& info, const std::string& text, bool dashed,
                 const std::string& caption = "") {
  GstBuffer* buf = black(info);
  GstMapInfo map;
  gst_buffer_map(buf, &map, GST_MAP_WRITE);
  OverlayImage img;
  img.format = PixelFormat::kRGB;
  img.width = GST_VIDEO_INFO_WIDTH(&info);
  img.height = GST_VIDEO_INFO_HEIGHT(&info);
  img.planes[0] = map.data;
  img.strides[0] = GST_VIDEO_INFO_PLANE_STRIDE(&info, 0);
  OverlayScene scene;
  OverlayBox b;
  b.x_min = 40, b.y_min = 30, b.x_max = 120, b.y_max = 90;
  b.class_id = 3;
  b.text = text;
  b.dashed = dashed;
  b.caption = caption;
  scene.boxes.push_back(b);
  Overlay().draw(scene, img);
  gst_buffer_unmap(buf, &map);
  return buf;
}

}  // namespace

TEST(TorchOverlayTracks, TheObjectIdPrefixesTheLabel) {
  const std::string caps = caps_for("RGB");
  const GstVideoInfo info = info_of(caps);
  GstBuffer* out = run_overlay(caps, tracked_bolt(info, false));
  GstBuffer* want = drawn(info, "#3 bolt 0.90", false);
  GstBuffer* untracked = drawn(info, "bolt 0.90", false);
  EXPECT_TRUE(same_bytes(out, want));
  EXPECT_FALSE(same_bytes(out, untracked));  // the text shows on the frame
  gst_buffer_unref(out);
  gst_buffer_unref(want);
  gst_buffer_unref(untracked);

  // The id goes with the label: without labels, the confidence alone.
  out = run_overlay(caps, tracked_bolt(info, false), "show-labels=false");
  want = drawn(info, "0.90", false);
  EXPECT_TRUE(same_bytes(out, want));
  gst_buffer_unref(out);
  gst_buffer_unref(want);
  out = run_overlay(caps, tracked_bolt(info, false), "show-confidence=false");
  want = drawn(info, "#3 bolt", false);
  EXPECT_TRUE(same_bytes(out, want));
  gst_buffer_unref(out);
  gst_buffer_unref(want);
}

TEST(TorchOverlayCodes, APartsCodeIsWrittenUnderItsBox) {
  const std::string caps = caps_for("RGB");
  const GstVideoInfo info = info_of(caps);
  const auto with_code = [&] {
    GstBuffer* in = tracked_bolt(info, false);
    auto* roi = reinterpret_cast<GstVideoRegionOfInterestMeta*>(
        gst_buffer_get_meta(in, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE));
    gst_video_region_of_interest_meta_add_param(
        roi, gst_structure_new(GST_TORCH_CODE_STRUCTURE_NAME, "format", G_TYPE_STRING, "DataMatrix",
                               "text", G_TYPE_STRING, "SN-0001", nullptr));
    return in;
  };
  GstBuffer* out = run_overlay(caps, with_code());
  GstBuffer* want = drawn(info, "#3 bolt 0.90", false, "SN-0001");
  GstBuffer* without = drawn(info, "#3 bolt 0.90", false);
  EXPECT_TRUE(same_bytes(out, want));
  EXPECT_FALSE(same_bytes(out, without));  // the code shows on the frame
  gst_buffer_unref(out);
  gst_buffer_unref(want);
  // Text goes with the labels: show-labels=false draws no code either.
  out = run_overlay(caps, with_code(), "show-labels=false");
  want = drawn(info, "0.90", false);
  EXPECT_TRUE(same_bytes(out, want));
  gst_buffer_unref(out);
  gst_buffer_unref(want);
  gst_buffer_unref(without);
}

TEST(TorchOverlayTracks, PredictedBoxesAreDashed) {
  const std::string caps = caps_for("RGB");
  const GstVideoInfo info = info_of(caps);
  GstBuffer* out = run_overlay(caps, tracked_bolt(info, true));
  GstBuffer* want = drawn(info, "#3 bolt 0.90", true);
  EXPECT_TRUE(same_bytes(out, want));
  gst_buffer_unref(want);
  // 160x120: 1 px outline, dashes and gaps of 6 px from each edge's first
  // corner (clockwise from the top-left).
  ASSERT_EQ(dash_length(box_thickness(120)), 6);
  const Rgb c = class_colour(3);
  for (auto [x, y] :
       {std::pair{40, 30}, std::pair{45, 30}, std::pair{52, 30}, std::pair{119, 30},
        std::pair{119, 35}, std::pair{119, 42}, std::pair{119, 89}, std::pair{40, 89}}) {
    const Pixel p = read(info, out, x, y);
    EXPECT_EQ(p.y, c.r) << "dash " << x << "," << y;
    EXPECT_EQ(p.u, c.g) << "dash " << x << "," << y;
    EXPECT_EQ(p.v, c.b) << "dash " << x << "," << y;
  }
  for (auto [x, y] : {std::pair{46, 30}, std::pair{51, 30}, std::pair{119, 36}, std::pair{119, 41},
                      std::pair{119, 60}, std::pair{113, 89}, std::pair{40, 83}}) {
    const Pixel p = read(info, out, x, y);
    EXPECT_EQ(p.y + p.u + p.v, 0) << "gap " << x << "," << y;
  }
  gst_buffer_unref(out);
}

// The dashes in a subsampled YUV format: luma marks the dash, the gap stays
// black.
TEST(TorchOverlayTracks, PredictedBoxesAreDashedInNv12) {
  const std::string caps = caps_for("NV12");
  const GstVideoInfo info = info_of(caps);
  GstBuffer* out = run_overlay(caps, tracked_bolt(info, true));
  std::uint8_t y, u, v;
  rgb_to_yuv(class_colour(3), YuvMatrix::kBT601, false, &y, &u, &v);
  EXPECT_EQ(read(info, out, 119, 32).y, y);
  EXPECT_EQ(read(info, out, 119, 32).u, u);
  EXPECT_EQ(read(info, out, 119, 38).y, 16);
  EXPECT_EQ(read(info, out, 119, 60).y, 16);
  EXPECT_EQ(read(info, out, 40, 60).y, y);
  gst_buffer_unref(out);
  GstBuffer* solid = run_overlay(caps, tracked_bolt(info, false));
  EXPECT_EQ(read(info, solid, 119, 38).y, y);
  EXPECT_EQ(read(info, solid, 119, 60).y, y);
  gst_buffer_unref(solid);
}

// ---- anomaly heat maps ------------------------------------------------------

namespace {

// An anomaly result as torchinfer attaches it: a 4x4 map of `value` (raw,
// anomalous at >= 0.5) on a 16x16 input that covers frame x, y 40..120
// (model = frame * 0.2 - 8), and the "anomaly" structure naming it.
void add_anomaly_result(GstBuffer* buf, bool anomalous, float value = 1.0f) {
  gst_torch_anomaly_meta_register();
  auto* map = new std::vector<float>(16, value);
  GBytes* owner = g_bytes_new_with_free_func(
      map->data(), map->size() * sizeof(float),
      [](gpointer p) { delete static_cast<std::vector<float>*>(p); }, map);
  GstTorchTensorMeta* tm = gst_buffer_add_torch_tensor_meta(buf, 1, owner);
  g_bytes_unref(owner);
  tm->input_width = tm->input_height = 16;
  tm->frame_width = 160;
  tm->frame_height = 120;
  tm->transform = {0.2, 0.2, -8.0, -8.0};
  tm->tensors[0].name = g_strdup("map");
  tm->tensors[0].dtype = GST_TORCH_DTYPE_FLOAT32;
  tm->tensors[0].n_dims = 4;
  const gint64 dims[] = {1, 1, 4, 4};
  std::copy(dims, dims + 4, tm->tensors[0].dims);
  tm->tensors[0].data = map->data();
  tm->tensors[0].size = map->size() * sizeof(float);
  GstStructure* s =
      gst_custom_meta_get_structure(gst_buffer_add_custom_meta(buf, GST_TORCH_ANOMALY_META_NAME));
  gst_structure_set_name(s, GST_TORCH_ANOMALY_STRUCTURE_NAME);
  gst_structure_set(s, "score", G_TYPE_DOUBLE, static_cast<double>(value), "raw_score",
                    G_TYPE_DOUBLE, static_cast<double>(value), "anomalous", G_TYPE_BOOLEAN,
                    anomalous, "threshold", G_TYPE_DOUBLE, 0.5, "normalized", G_TYPE_BOOLEAN, FALSE,
                    "map", G_TYPE_STRING, "map", "map_threshold", G_TYPE_DOUBLE, 0.5, nullptr);
}

}  // namespace

class TorchOverlayAnomalyFormats : public testing::TestWithParam<const char*> {};

// Inside the map's area: black blended with the colour map's red (heat 1)
// at alpha 0.4; its anomalous area outlined; outside it untouched.
TEST_P(TorchOverlayAnomalyFormats, BlendsTheHeatMapOverItsAreaAndOutlinesIt) {
  const std::string caps = caps_for(GetParam());
  const GstVideoInfo info = info_of(caps);
  GstBuffer* in = black(info);
  add_anomaly_result(in, true);
  GstBuffer* out = run_overlay(caps, in);
  ASSERT_NE(out, nullptr);
  const Rgb hot = heat_colour(1.0), edge = class_colour(0);
  Pixel want{blend_sample(0, hot.r, 0.4), blend_sample(0, hot.g, 0.4), blend_sample(0, hot.b, 0.4)};
  Pixel outline{edge.r, edge.g, edge.b}, bg{0, 0, 0};
  if (GST_VIDEO_INFO_IS_YUV(&info) || GST_VIDEO_INFO_IS_GRAY(&info)) {
    const bool full = GST_VIDEO_INFO_IS_GRAY(&info);  // GStreamer's gray is full range
    std::uint8_t y, u, v, ey, eu, ev;
    rgb_to_yuv(hot, YuvMatrix::kBT601, full, &y, &u, &v);
    rgb_to_yuv(edge, YuvMatrix::kBT601, full, &ey, &eu, &ev);
    bg = full ? Pixel{0, 0, 0} : Pixel{16, 128, 128};
    want = {blend_sample(bg.y, y, 0.4), blend_sample(bg.u, u, 0.4), blend_sample(bg.v, v, 0.4)};
    outline = {ey, eu, ev};
    if (full) want.u = want.v = outline.u = outline.v = 0;
  }
  auto expect = [&](int x, int y, const Pixel& w, const char* what) {
    const Pixel p = read(info, out, x, y);
    EXPECT_EQ(p.y, w.y) << GetParam() << " " << what << " " << x << "," << y;
    EXPECT_EQ(p.u, w.u) << GetParam() << " " << what << " " << x << "," << y;
    EXPECT_EQ(p.v, w.v) << GetParam() << " " << what << " " << x << "," << y;
  };
  expect(80, 80, want, "heat");
  expect(100, 60, want, "heat");
  expect(40, 80, outline, "outline");
  expect(80, 40, outline, "outline");
  expect(20, 20, bg, "untouched");
  expect(138, 100, bg, "untouched");
  gst_buffer_unref(out);
}

INSTANTIATE_TEST_SUITE_P(Formats, TorchOverlayAnomalyFormats,
                         testing::Values("RGB", "BGR", "RGBx", "BGRx", "xRGB", "xBGR", "RGBA",
                                         "BGRA", "ARGB", "ABGR", "YUY2", "UYVY", "NV12", "NV21",
                                         "I420", "YV12", "GRAY8"));

TEST(TorchOverlayAnomaly, NormalResultsAndShowAnomalyMapOffDrawNothing) {
  const std::string caps = caps_for("RGB");
  const GstVideoInfo info = info_of(caps);
  for (const auto& [anomalous, props] :
       {std::pair{false, ""}, std::pair{true, "show-anomaly-map=false"}}) {
    GstBuffer* in = black(info);
    add_anomaly_result(in, anomalous);
    GstBuffer* expected = gst_buffer_copy_deep(in);
    GstBuffer* out = run_overlay(caps, in, std::string(props) + " show-classification=false");
    EXPECT_TRUE(same_bytes(out, expected)) << props;
    gst_buffer_unref(out);
    gst_buffer_unref(expected);
  }
}

TEST(TorchOverlayAnomaly, AnomalyMapNormalDrawsNormalResultsWithoutOutline) {
  const std::string caps = caps_for("RGB");
  const GstVideoInfo info = info_of(caps);
  GstBuffer* in = black(info);
  add_anomaly_result(in, false, 0.25f);  // below 0.5: no anomalous area, heat 0.25
  GstBuffer* out = run_overlay(caps, in, "anomaly-map-normal=true anomaly-map-alpha=1.0");
  const Rgb c = heat_colour(0.25);
  for (auto [x, y] : {std::pair{80, 80}, std::pair{40, 80}}) {
    const Pixel p = read(info, out, x, y);
    EXPECT_EQ(p.y, c.r) << x;
    EXPECT_EQ(p.u, c.g) << x;
    EXPECT_EQ(p.v, c.b) << x;
  }
  EXPECT_EQ(read(info, out, 20, 20).y, 0);
  gst_buffer_unref(out);
}
