// torchinfer inference-gate=motion through a GstHarness: on a constructed
// GRAY8 sequence (an empty scene, a part entering, staying, leaving) exactly
// the frames with motion and the motion-hold after them are inferred; every
// buffer comes out, in order, timestamps, flags and bytes untouched; the
// still ones carry the latest result marked not inferred with skip_reason
// still, counted as frames-skipped-still. Refused property values.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

using namespace torchinfer::test;
using torchinfer::SkipReason;

namespace {

// 64x64: 8x8 luma samples, one cell.
const char* kGray = "video/x-raw,format=GRAY8,width=64,height=64,framerate=30/1";

std::string gated(const std::string& extra) {
  return "model=" + model("identity.pt") +
         " mean=0 std=1 drop-policy=block inference-gate=motion " + extra;
}

// Frame i: every pixel `value`, timestamps and offsets from i.
GstBuffer* frame(const GstVideoInfo& info, int i, int value) {
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(buf, 0, static_cast<guint8>(value), GST_VIDEO_INFO_SIZE(&info));
  GST_BUFFER_PTS(buf) = i * 33 * GST_MSECOND;
  GST_BUFFER_DTS(buf) = i * 33 * GST_MSECOND + 1;
  GST_BUFFER_DURATION(buf) = 33 * GST_MSECOND;
  GST_BUFFER_OFFSET(buf) = i;
  if (i % 4 == 0) GST_BUFFER_FLAG_SET(buf, GST_BUFFER_FLAG_DELTA_UNIT);
  return buf;
}

// The pixel value the model saw for the result a buffer carries.
int seen_value(GstTorchTensorMeta* m) {
  if (!m || m->n_tensors == 0) return -1;
  return static_cast<int>(std::lround(static_cast<const float*>(m->tensors[0].data)[0] * 255.f));
}

struct Out {
  bool inferred;
  int skip;
  int seen;
  GstClockTime result_pts;
};

// Pushes the frames, then EOS; checks every buffer out in order, untouched.
std::vector<Out> run(GstHarness* h, const std::vector<int>& values) {
  const GstVideoInfo info = info_of(kGray);
  for (std::size_t i = 0; i < values.size(); ++i)
    gst_harness_push(h, frame(info, int(i), values[i]));
  gst_harness_push_event(h, gst_event_new_eos());
  std::vector<Out> out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    GstBuffer* b = gst_harness_pull(h);
    if (!b) {
      ADD_FAILURE() << "buffer " << i << " missing";
      break;
    }
    EXPECT_EQ(GST_BUFFER_PTS(b), i * 33 * GST_MSECOND) << i;
    EXPECT_EQ(GST_BUFFER_DTS(b), i * 33 * GST_MSECOND + 1) << i;
    EXPECT_EQ(GST_BUFFER_DURATION(b), 33 * GST_MSECOND) << i;
    EXPECT_EQ(GST_BUFFER_OFFSET(b), i) << i;
    EXPECT_EQ(GST_BUFFER_FLAG_IS_SET(b, GST_BUFFER_FLAG_DELTA_UNIT), i % 4 == 0) << i;
    GstMapInfo map;
    EXPECT_TRUE(gst_buffer_map(b, &map, GST_MAP_READ));
    EXPECT_EQ(map.data[map.size - 1], static_cast<guint8>(values[i])) << "bytes untouched";
    gst_buffer_unmap(b, &map);
    GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(b);
    EXPECT_NE(m, nullptr) << i;
    if (m) out.push_back({bool(m->inferred), int(m->skip_reason), seen_value(m), m->result_pts});
    gst_buffer_unref(b);
  }
  EXPECT_EQ(gst_harness_buffers_in_queue(h), 0u) << "no more buffers than frames";
  return out;
}

guint64 stat(GstElement* e, const char* field) {
  GstStructure* s = nullptr;
  g_object_get(e, "stats", &s, nullptr);
  guint64 v = G_MAXUINT64;
  gst_structure_get_uint64(s, field, &v);
  gst_structure_free(s);
  return v;
}

}  // namespace

TEST(TorchInferGate, InfersMotionAndItsHoldAndCountsTheRestStill) {
  GstHarness* h = torchinfer_harness(gated("motion-hold=1"), kGray);
  // Empty (10), a part (60) enters at 3 and stays, leaves at 7.
  const std::vector<int> values = {10, 10, 10, 60, 60, 60, 60, 10, 10, 10};
  const std::vector<Out> out = run(h, values);
  ASSERT_EQ(out.size(), values.size());
  const int result_of[] = {0, 0, 0, 3, 4, 4, 4, 7, 8, 8};  // the frame each result is from
  for (std::size_t i = 0; i < out.size(); ++i) {
    const bool inferred = result_of[i] == int(i);
    EXPECT_EQ(out[i].inferred, inferred) << i;
    EXPECT_EQ(out[i].skip, inferred ? GST_TORCH_SKIP_NONE : GST_TORCH_SKIP_STILL) << i;
    EXPECT_EQ(out[i].seen, values[result_of[i]]) << i;
    EXPECT_EQ(out[i].result_pts, result_of[i] * 33 * GST_MSECOND) << i;
  }
  EXPECT_TRUE(out[3].inferred) << "the first frame after motion started";
  EXPECT_EQ(stat(h->element, "frames-inferred"), 5u);
  EXPECT_EQ(stat(h->element, "frames-skipped"), 5u);
  EXPECT_EQ(stat(h->element, "frames-skipped-still"), 5u);
  EXPECT_EQ(stat(h->element, "frames-skipped-interval"), 0u);
  EXPECT_TRUE(frames_add_up(frame_counts(h->element), Settled::kYes));
  gst_harness_teardown(h);
}

TEST(TorchInferGate, KeyframeIntervalBoundsStillRunsAndNoneInfersAll) {
  GstHarness* h = torchinfer_harness(gated("motion-keyframe-interval=4 motion-hold=0"), kGray);
  const std::vector<Out> out = run(h, std::vector<int>(11, 30));
  ASSERT_EQ(out.size(), 11u);
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].inferred, i % 4 == 0) << i;
  EXPECT_EQ(stat(h->element, "frames-skipped-still"), 8u);
  gst_harness_teardown(h);

  GstHarness* all = torchinfer_harness(
      "model=" + model("identity.pt") + " mean=0 std=1 drop-policy=block", kGray);
  for (const Out& o : run(all, std::vector<int>(5, 30))) EXPECT_TRUE(o.inferred);
  EXPECT_EQ(stat(all->element, "frames-skipped-still"), 0u);
  gst_harness_teardown(all);
}

TEST(TorchInferGate, NegativeAndOutOfRangeValuesAreRefused) {
  GstElement* e = gst_element_factory_make("torchinfer", nullptr);
  ASSERT_NE(e, nullptr);
  {
    WarningCatcher w("GLib-GObject");
    g_object_set(e, "motion-threshold", -1.0, nullptr);
    g_object_set(e, "motion-threshold", 256.0, nullptr);
    g_object_set(e, "motion-min-area", -0.01, nullptr);
    g_object_set(e, "motion-min-area", 1.5, nullptr);
    g_object_set(e, "motion-hold", -1, nullptr);
    g_object_set(e, "motion-keyframe-interval", -5, nullptr);
    g_object_set(e, "motion-keyframe-interval", 0, nullptr);
    EXPECT_EQ(w.messages().size(), 7u);
  }
  double threshold = 0, area = 0;
  int hold = 0, keyframe = 0, gate = -1;
  g_object_get(e, "motion-threshold", &threshold, "motion-min-area", &area, "motion-hold", &hold,
               "motion-keyframe-interval", &keyframe, "inference-gate", &gate, nullptr);
  EXPECT_DOUBLE_EQ(threshold, 8.0);
  EXPECT_DOUBLE_EQ(area, 0.0);
  EXPECT_EQ(hold, 3);
  EXPECT_EQ(keyframe, 30);
  EXPECT_EQ(gate, 0) << "none by default";
  gst_object_unref(e);

  GError* err = nullptr;
  GstElement* bad = gst_parse_launch("torchinfer inference-gate=sometimes", &err);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->code, GST_PARSE_ERROR_COULD_NOT_SET_PROPERTY);
  g_clear_error(&err);
  if (bad) gst_object_unref(bad);
}
