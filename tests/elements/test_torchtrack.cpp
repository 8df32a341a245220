// torchtrack: object ids on torchnms's region-of-interest metas over
// scripted trajectories, track messages, streams, and predicted boxes on
// frames torchinfer did not infer.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "gsttorchtrack.h"

using namespace torchinfer::test;

namespace {

const char* kCaps = "video/x-raw,format=RGB,width=640,height=480,framerate=30/1";
constexpr guint kW = 640, kH = 480;
constexpr GstClockTime kFrame = GST_SECOND / 30;

struct Obj {
  double cx, cy;
  const char* label = "bolt";
  double w = 40, h = 40;
};

// A frame of the caps' size with one torchnms-style ROI per object; with
// `inferred` set, also a tensor meta saying whether torchinfer inferred it.
GstBuffer* frame(int n, const std::vector<Obj>& objs, int inferred = -1) {
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, kW * kH * 3, nullptr);
  GST_BUFFER_PTS(buf) = n * kFrame;
  for (const Obj& o : objs)
    gst_buffer_add_torch_detection(buf, o.label, std::string(o.label) == "bolt" ? 0 : 1, 0.8,
                                   o.cx - o.w / 2, o.cy - o.h / 2, o.cx + o.w / 2, o.cy + o.h / 2,
                                   kW, kH);
  if (inferred >= 0) {
    GstTorchTensorMeta* m = gst_buffer_add_torch_tensor_meta(buf, 0, nullptr);
    m->inferred = inferred;
    m->frame_width = kW;
    m->frame_height = kH;
  }
  return buf;
}

struct Roi {
  int id = -1;  // -1: no object_id
  gboolean predicted = FALSE;
  int age = 0;
  GstTorchDetection det{};  // det.label is not kept: it dies with the buffer
  std::string label;
  guint x = 0, y = 0, w = 0, h = 0;
  bool has_detection = false;
};

std::vector<Roi> rois(GstBuffer* buf) {
  std::vector<Roi> out;
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    auto* roi = reinterpret_cast<GstVideoRegionOfInterestMeta*>(m);
    Roi r;
    r.x = roi->x, r.y = roi->y, r.w = roi->w, r.h = roi->h;
    r.has_detection = gst_torch_detection_from_roi(roi, &r.det);
    if (r.has_detection) r.label = r.det.label;
    r.det.label = nullptr;
    if (GstStructure* s = gst_video_region_of_interest_meta_get_param(
            roi, GST_TORCHTRACK_OBJECT_ID_STRUCTURE_NAME)) {
      EXPECT_TRUE(gst_structure_get_int(s, "id", &r.id));
      EXPECT_TRUE(gst_structure_get_boolean(s, "predicted", &r.predicted));
      EXPECT_TRUE(gst_structure_get_int(s, "age", &r.age));
    }
    out.push_back(r);
  }
  return out;
}

std::vector<int> ids(const std::vector<Roi>& rs) {
  std::vector<int> out;
  for (const Roi& r : rs) out.push_back(r.id);
  return out;
}

struct TrackMsg {
  std::string name, label, stream, reason;
  int id = 0, label_id = 0, age = 0;
  guint64 pts = 0, last_seen_pts = 0;
};

struct Tracked {
  GstHarness* h = nullptr;
  GstBus* bus = nullptr;

  explicit Tracked(const std::string& props) {
    GstElement* e = gst_parse_launch(("torchtrack " + props).c_str(), nullptr);
    EXPECT_NE(e, nullptr);
    h = gst_harness_new_with_element(e, "sink", "src");
    gst_object_unref(e);
    bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    gst_harness_set_src_caps_str(h, kCaps);
  }
  ~Tracked() {
    // Messages left on the bus hold the element, which holds the bus.
    gst_bus_set_flushing(bus, TRUE);
    gst_harness_teardown(h);
    gst_object_unref(bus);
  }
  // The track events the latest frame carried, as "started 1", "ended 2".
  std::vector<std::string> frame_events;

  std::vector<Roi> push(GstBuffer* in) {
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    EXPECT_NE(out, nullptr);
    if (!out) return {};
    std::vector<Roi> r = rois(out);
    frame_events.clear();
    if (GstCustomMeta* m = gst_buffer_get_custom_meta(out, GST_TORCHTRACK_EVENTS_META_NAME)) {
      const GstStructure* s = gst_custom_meta_get_structure(m);
      EXPECT_STREQ(gst_structure_get_name(s), "torchtrack-events");
      const GValue* events = gst_structure_get_value(s, "events");
      EXPECT_NE(events, nullptr);
      for (guint i = 0; events && i < gst_value_array_get_size(events); ++i) {
        const GstStructure* e = gst_value_get_structure(gst_value_array_get_value(events, i));
        int id = 0;
        gst_structure_get_int(e, "id", &id);
        const std::string name = gst_structure_get_name(e);
        frame_events.push_back(name.substr(name.rfind('-') + 1) + " " + std::to_string(id));
      }
      // Copies of the frame keep them (the meta's transform).
      GstBuffer* copy = gst_buffer_copy(out);
      EXPECT_NE(gst_buffer_get_custom_meta(copy, GST_TORCHTRACK_EVENTS_META_NAME), nullptr);
      gst_buffer_unref(copy);
    }
    gst_buffer_unref(out);
    return r;
  }
  void stream_start(const char* id) {
    EXPECT_TRUE(gst_harness_push_event(h, gst_event_new_stream_start(id)));
  }
  std::vector<TrackMsg> messages() {
    std::vector<TrackMsg> out;
    while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT)) {
      const GstStructure* s = gst_message_get_structure(m);
      TrackMsg t;
      t.name = gst_structure_get_name(s);
      if (t.name.rfind("torchtrack-track-", 0) == 0) {
        EXPECT_TRUE(gst_structure_get_int(s, "id", &t.id));
        EXPECT_TRUE(gst_structure_get_int(s, "label-id", &t.label_id));
        EXPECT_TRUE(gst_structure_get_int(s, "age", &t.age));
        EXPECT_TRUE(gst_structure_get_uint64(s, "pts", &t.pts));
        t.label = gst_structure_get_string(s, "label");
        t.stream = gst_structure_get_string(s, "stream-id");
        if (const gchar* r = gst_structure_get_string(s, "reason")) t.reason = r;
        EXPECT_EQ(gst_structure_get_uint64(s, "last-seen-pts", &t.last_seen_pts),
                  t.name == "torchtrack-track-ended");
        out.push_back(t);
      }
      gst_message_unref(m);
    }
    return out;
  }
};

double centre_x(const Roi& r) {
  return (r.det.x_min + r.det.x_max) / 2 * kW;
}
double centre_y(const Roi& r) {
  return (r.det.y_min + r.det.y_max) / 2 * kH;
}

}  // namespace

TEST(TorchTrack, StableIdsOverCrossingTrajectories) {
  Tracked t("tracking-type=zero-term min-hits=1");
  // A bolt moving right, a nut left, crossing at frame 10; detection order
  // alternates so ids cannot come from the order.
  for (int f = 0; f < 20; ++f) {
    const Obj a{100.0 + 10 * f, 200}, b{300.0 - 10 * f, 212, "nut"};
    const bool a_first = f % 2 == 0;
    const std::vector<Roi> r =
        t.push(frame(f, a_first ? std::vector<Obj>{a, b} : std::vector<Obj>{b, a}));
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(ids(r), a_first ? (std::vector<int>{1, 2}) : (std::vector<int>{2, 1})) << f;
    EXPECT_FALSE(r[0].predicted);
    EXPECT_EQ(r[0].age, f + 1);
    // The detection is left as torchnms made it.
    ASSERT_TRUE(r[0].has_detection);
    EXPECT_DOUBLE_EQ(r[0].det.confidence, 0.8);
    EXPECT_DOUBLE_EQ(centre_x(r[0]), a_first ? a.cx : b.cx);
  }
  const auto msgs = t.messages();
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].name, "torchtrack-track-started");
  EXPECT_EQ(msgs[0].id, 1);
  EXPECT_EQ(msgs[0].label, "bolt");
  EXPECT_EQ(msgs[1].id, 2);
  EXPECT_EQ(msgs[1].label, "nut");
  EXPECT_EQ(msgs[1].label_id, 1);
  EXPECT_EQ(msgs[1].pts, 0u);
  EXPECT_EQ(msgs[1].reason, "");
}

TEST(TorchTrack, IdAfterMinHitsEndAfterMaxAge) {
  Tracked t("min-hits=3 max-age=2");
  for (int f = 0; f < 5; ++f) {
    const std::vector<Roi> r = t.push(frame(f, {{100.0 + 5 * f, 100}}));
    ASSERT_EQ(r.size(), 1u);  // unconfirmed detections stay, without an id
    EXPECT_EQ(r[0].id, f < 2 ? -1 : 1) << f;
    EXPECT_EQ(t.frame_events,
              f == 2 ? std::vector<std::string>{"started 1"} : std::vector<std::string>{})
        << f;
  }
  auto msgs = t.messages();
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].name, "torchtrack-track-started");
  EXPECT_EQ(msgs[0].pts, 2 * kFrame);
  EXPECT_EQ(msgs[0].age, 3);
  // Gone: survives 2 frames, ends on the third.
  for (int f = 5; f < 7; ++f) EXPECT_TRUE(t.push(frame(f, {})).empty());
  EXPECT_TRUE(t.messages().empty());
  t.push(frame(7, {}));
  EXPECT_EQ(t.frame_events, std::vector<std::string>{"ended 1"});
  msgs = t.messages();
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].name, "torchtrack-track-ended");
  EXPECT_EQ(msgs[0].id, 1);
  EXPECT_EQ(msgs[0].reason, "lost");
  EXPECT_EQ(msgs[0].pts, 7 * kFrame);
  EXPECT_EQ(msgs[0].last_seen_pts, 4 * kFrame);
  EXPECT_EQ(msgs[0].age, 8);
}

TEST(TorchTrack, OcclusionGapKeepsTheId) {
  Tracked t("min-hits=1 max-age=4");
  int f = 0;
  for (; f < 10; ++f) EXPECT_EQ(ids(t.push(frame(f, {{100.0 + 6 * f, 300}}))), std::vector<int>{1});
  for (; f < 14; ++f) EXPECT_TRUE(t.push(frame(f, {})).empty());
  for (; f < 17; ++f) EXPECT_EQ(ids(t.push(frame(f, {{100.0 + 6 * f, 300}}))), std::vector<int>{1});
  const auto msgs = t.messages();
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].name, "torchtrack-track-started");
}

TEST(TorchTrack, StreamsKeepTheirOwnIds) {
  Tracked t("min-hits=1");
  t.stream_start("cam-a");
  EXPECT_EQ(ids(t.push(frame(0, {{100, 100}}))), std::vector<int>{1});
  t.stream_start("cam-b");
  // Another stream: ids start from 1 there too; its box is where cam-a's
  // object is, yet it is not cam-a's object.
  EXPECT_EQ(ids(t.push(frame(0, {{400, 300}, {100, 100}}))), (std::vector<int>{1, 2}));
  t.stream_start("cam-a");
  EXPECT_EQ(ids(t.push(frame(1, {{104, 100}, {500, 400}}))), (std::vector<int>{1, 2}));
  t.stream_start("cam-b");
  EXPECT_EQ(ids(t.push(frame(1, {{100, 100}, {404, 300}}))), (std::vector<int>{2, 1}));
  auto msgs = t.messages();
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[0].stream, "cam-a");
  EXPECT_EQ(msgs[1].stream, "cam-b");
  EXPECT_EQ(msgs[2].stream, "cam-b");
  EXPECT_EQ(msgs[3].stream, "cam-a");
  EXPECT_EQ(msgs[3].id, 2);
  // End of stream ends every track of every stream.
  EXPECT_TRUE(gst_harness_push_event(t.h, gst_event_new_eos()));
  msgs = t.messages();
  ASSERT_EQ(msgs.size(), 4u);
  for (const auto& m : msgs) {
    EXPECT_EQ(m.name, "torchtrack-track-ended");
    EXPECT_EQ(m.reason, "eos");
    EXPECT_EQ(m.pts, kFrame);
  }
  EXPECT_EQ(msgs[0].last_seen_pts, kFrame);  // cam-a's first object, seen on both frames
  EXPECT_EQ(msgs[1].last_seen_pts, kFrame);
  EXPECT_EQ(msgs[3].last_seen_pts, kFrame);
  EXPECT_EQ(msgs[0].stream, "cam-a");
  EXPECT_EQ(msgs[2].stream, "cam-b");
  EXPECT_EQ(msgs[3].id, 2);
}

TEST(TorchTrack, FlushEndsTracksAndIdsGoOn) {
  Tracked t("min-hits=1");
  t.push(frame(0, {{100, 100}}));
  t.messages();
  EXPECT_TRUE(gst_harness_push_event(t.h, gst_event_new_flush_start()));
  EXPECT_TRUE(gst_harness_push_event(t.h, gst_event_new_flush_stop(TRUE)));
  const auto msgs = t.messages();
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].name, "torchtrack-track-ended");
  EXPECT_EQ(msgs[0].reason, "flush");
  GstSegment segment;
  gst_segment_init(&segment, GST_FORMAT_TIME);
  EXPECT_TRUE(gst_harness_push_event(t.h, gst_event_new_segment(&segment)));
  EXPECT_EQ(ids(t.push(frame(0, {{100, 100}}))), std::vector<int>{2});
}

// Frames 0..9 inferred, 10..12 not (carrying frame 9's detection, as torchnms
// re-attaches it), 13 inferred. The object moves (8, -4) px per frame.
static std::vector<std::vector<Roi>> skipped_frames_run(const std::string& props) {
  Tracked t(props);
  std::vector<std::vector<Roi>> out;
  auto at = [](int f) { return Obj{100.0 + 8 * f, 300.0 - 4 * f, "nut", 60, 30}; };
  for (int f = 0; f < 14; ++f) {
    const bool inferred = f < 10 || f == 13;
    std::vector<Obj> objs{inferred ? at(f) : at(9)};
    GstBuffer* buf = frame(f, objs, inferred);
    // Not a detection (no "detection" param): torchtrack leaves it alone.
    gst_buffer_add_video_region_of_interest_meta(buf, "zone", 0, 0, 10, 10);
    out.push_back(t.push(buf));
  }
  return out;
}

TEST(TorchTrack, ShortTermPredictsBoxesOnFramesNotInferred) {
  const auto run = skipped_frames_run("tracking-type=short-term min-hits=1");
  for (int f = 0; f < 14; ++f) {
    const auto& r = run[f];
    ASSERT_EQ(r.size(), 2u) << f;
    // The zone stays, untracked; the detection comes first or last.
    const Roi& zone = r[0].has_detection ? r[1] : r[0];
    const Roi& obj = r[0].has_detection ? r[0] : r[1];
    EXPECT_EQ(zone.id, -1);
    EXPECT_EQ(zone.w, 10u);
    EXPECT_EQ(obj.id, 1) << f;
    EXPECT_EQ(obj.age, f + 1);
    const bool predicted = f >= 10 && f < 13;
    EXPECT_EQ(obj.predicted, predicted) << f;
    ASSERT_TRUE(obj.has_detection);
    EXPECT_EQ(obj.label, "nut");
    EXPECT_EQ(obj.det.label_id, 1);
    EXPECT_DOUBLE_EQ(obj.det.confidence, 0.8);
    // Predicted boxes follow the motion (within 1 px), not frame 9's box.
    EXPECT_NEAR(centre_x(obj), 100.0 + 8 * f, 1.0) << f;
    EXPECT_NEAR(centre_y(obj), 300.0 - 4 * f, 1.0) << f;
    EXPECT_NEAR((obj.det.x_max - obj.det.x_min) * kW, 60, 1.0) << f;
    EXPECT_NEAR(double(obj.x), (100.0 + 8 * f) - 30, 2.0) << f;
  }
}

TEST(TorchTrack, ZeroTermTakesRepeatedDetectionsAsTheyAre) {
  const auto run = skipped_frames_run("tracking-type=zero-term min-hits=1");
  for (int f = 10; f < 13; ++f) {
    const Roi& obj = run[f][0].has_detection ? run[f][0] : run[f][1];
    EXPECT_EQ(obj.id, 1);
    EXPECT_FALSE(obj.predicted);
    EXPECT_DOUBLE_EQ(centre_x(obj), 100.0 + 8 * 9);
  }
}

TEST(TorchTrack, PredictionsAreClippedToTheFrame) {
  Tracked t("min-hits=1");
  // 60 x 20 box moving left 10 px/frame; frames 23.. are not inferred.
  auto at = [](int f) { return Obj{250.0 - 10 * f, 200, "bolt", 60, 20}; };
  for (int f = 0; f < 23; ++f) EXPECT_EQ(ids(t.push(frame(f, {at(f)}, TRUE))), std::vector<int>{1});
  // Frame 23: centre 20, box -10..50, clipped to 0..50.
  auto r = t.push(frame(23, {at(22)}, FALSE));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].id, 1);
  EXPECT_TRUE(r[0].predicted);
  EXPECT_EQ(r[0].x, 0u);
  EXPECT_DOUBLE_EQ(r[0].det.x_min, 0.0);
  EXPECT_NEAR(r[0].det.x_max * kW, 50, 0.5);
  // Frame 27: -50..10, clipped to 0..10; frame 28: -60..0, gone: no box.
  for (int f = 24; f < 27; ++f) t.push(frame(f, {at(22)}, FALSE));
  r = t.push(frame(27, {at(22)}, FALSE));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NEAR(r[0].det.x_max * kW, 10, 0.5);
  EXPECT_TRUE(t.push(frame(28, {at(22)}, FALSE)).empty());
}

TEST(TorchTrackErrors, BadPropertyValuesAreRejected) {
  GstElement* e = gst_element_factory_make("torchtrack", nullptr);
  ASSERT_NE(e, nullptr);
  {
    WarningCatcher w("GLib-GObject");
    g_object_set(e, "min-hits", 0u, nullptr);
    g_object_set(e, "max-age", 200000u, nullptr);
    g_object_set(e, "iou-threshold", 1.5, nullptr);
    g_object_set(e, "iou-threshold", -0.1, nullptr);
    EXPECT_EQ(w.messages().size(), 4u);
  }
  guint min_hits = 0, max_age = 0;
  double iou = 0;
  g_object_get(e, "min-hits", &min_hits, "max-age", &max_age, "iou-threshold", &iou, nullptr);
  EXPECT_EQ(min_hits, 3u);
  EXPECT_EQ(max_age, 30u);
  EXPECT_DOUBLE_EQ(iou, 0.3);
  gst_object_unref(e);

  GError* err = nullptr;
  GstElement* bad = gst_parse_launch("torchtrack tracking-type=long-term", &err);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->domain, GST_PARSE_ERROR);
  EXPECT_EQ(err->code, GST_PARSE_ERROR_COULD_NOT_SET_PROPERTY);
  EXPECT_NE(std::string(err->message).find("tracking-type"), std::string::npos) << err->message;
  g_clear_error(&err);
  if (bad) gst_object_unref(bad);
}

TEST(TorchTrackErrors, ZeroIouThresholdFailsAtStart) {
  GstElement* e = gst_parse_launch("torchtrack iou-threshold=0", nullptr);
  ASSERT_NE(e, nullptr);
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(r.error.set);
  EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR);
  EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_SETTINGS);
  EXPECT_NE(r.error.message.find("iou-threshold must be in (0, 1]"), std::string::npos)
      << r.error.message;
  gst_object_unref(e);
}

// The real chain: torchinfer marks frames it skipped (inference-interval),
// torchnms repeats their detections, torchtrack replaces them by predictions.
TEST(TorchTrack, BehindTorchinferWithInferenceInterval) {
  const std::string line = "torchinfer inference-interval=3 model=" + model("yolo_candidates.pt") +
                           " ! torchnms ! torchtrack min-hits=1";
  GstHarness* h = gst_harness_new_parse(line.c_str());
  // Not live, so drop-policy=auto waits for the model (see Upstream).
  gst_harness_set_live(h, FALSE);
  const char* caps = "video/x-raw,format=RGB,width=640,height=512,framerate=30/1";
  gst_harness_set_src_caps_str(h, caps);
  const GstVideoInfo info = info_of(caps);
  for (int i = 0; i < 6; ++i) {
    GstBuffer* buf = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
    gst_buffer_memset(buf, 0, 255, GST_VIDEO_INFO_SIZE(&info));
    GST_BUFFER_PTS(buf) = i * kFrame;
    ASSERT_EQ(gst_harness_push(h, buf), GST_FLOW_OK);
  }
  std::map<int, Roi> first;  // by id, from frame 0
  for (int i = 0; i < 6; ++i) {
    GstBuffer* out = gst_harness_pull(h);
    ASSERT_NE(out, nullptr);
    const GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(bool(m->inferred), i % 3 == 0) << i;
    const std::vector<Roi> r = rois(out);
    gst_buffer_unref(out);
    ASSERT_EQ(r.size(), 6u) << i;
    std::vector<int> seen;
    for (const Roi& roi : r) {
      seen.push_back(roi.id);
      EXPECT_EQ(bool(roi.predicted), i % 3 != 0) << i;
      if (i == 0) {
        first[roi.id] = roi;
        continue;
      }
      // A still scene: every box stays where it was detected.
      ASSERT_EQ(first.count(roi.id), 1u);
      const Roi& was = first[roi.id];
      EXPECT_EQ(roi.label, was.label);
      EXPECT_NEAR(roi.det.x_min, was.det.x_min, 1e-6) << i;
      EXPECT_NEAR(roi.det.y_max, was.det.y_max, 1e-6) << i;
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4, 5, 6})) << i;
  }
  gst_harness_teardown(h);
}

// Two streams interleaved into one torchtrack by a funnel, which sends each
// stream's stream-start again whenever it switches: each keeps its own ids.
TEST(TorchTrack, StreamsThroughAFunnelKeepTheirOwnIds) {
  const std::string caps = std::string("caps=\"") + kCaps + "\"";
  const std::string line = "appsrc name=a format=time " + caps +
                           " ! f. appsrc name=b format=time " + caps +
                           " ! f. funnel name=f ! torchtrack name=t min-hits=1 ! appsink name=s "
                           "sync=false";
  GError* err = nullptr;
  GstElement* pipeline = gst_parse_launch(line.c_str(), &err);
  ASSERT_EQ(err, nullptr) << err->message;
  GstElement* a = gst_bin_get_by_name(GST_BIN(pipeline), "a");
  GstElement* b = gst_bin_get_by_name(GST_BIN(pipeline), "b");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "s");
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  // One frame at a time, waiting for it at the sink, so the order is known.
  auto through = [&](GstElement* src, GstBuffer* buf) {
    GstFlowReturn ret = GST_FLOW_ERROR;
    g_signal_emit_by_name(src, "push-buffer", buf, &ret);
    gst_buffer_unref(buf);
    EXPECT_EQ(ret, GST_FLOW_OK);
    GstSample* sample = nullptr;
    g_signal_emit_by_name(sink, "pull-sample", &sample);
    EXPECT_NE(sample, nullptr);
    if (!sample) return std::vector<int>{};
    std::vector<int> got = ids(rois(gst_sample_get_buffer(sample)));
    gst_sample_unref(sample);
    return got;
  };
  EXPECT_EQ(through(a, frame(0, {{100, 100}})), std::vector<int>{1});
  // Sharing a's tracker, this object would be id 2.
  EXPECT_EQ(through(b, frame(0, {{400, 300}})), std::vector<int>{1});
  EXPECT_EQ(through(a, frame(1, {{104, 100}, {500, 400}})), (std::vector<int>{1, 2}));
  EXPECT_EQ(through(b, frame(1, {{404, 300}})), std::vector<int>{1});
  GstBus* bus = gst_element_get_bus(pipeline);
  std::vector<std::string> started;  // stream-id of each started message
  while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT)) {
    const GstStructure* s = gst_message_get_structure(m);
    if (gst_structure_has_name(s, "torchtrack-track-started"))
      started.push_back(gst_structure_get_string(s, "stream-id"));
    gst_message_unref(m);
  }
  ASSERT_EQ(started.size(), 3u);
  EXPECT_NE(started[0], started[1]);
  EXPECT_EQ(started[0], started[2]);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(a);
  gst_object_unref(b);
  gst_object_unref(sink);
  gst_object_unref(pipeline);
}

// A part moves 10 frames, stops; then 50 frames the motion gate found still
// (skip_reason still, carrying frame 9's detection), then an inferred frame
// finds it where it stopped. Still frames hold the track at its last box
// and do not move it on: it keeps id 1. The same frames marked as skipped
// for an interval are predictions at the part's old speed, which lose it
// (max-age 30 counts neither kind; the predicted box has left it).
static std::vector<Roi> after_still_run(int skip_reason, std::vector<Roi>* last_still) {
  Tracked t("min-hits=1");
  auto at = [](int f) { return Obj{100.0 + 10 * std::min(f, 9), 240, "bolt", 60, 40}; };
  for (int f = 0; f < 10; ++f) t.push(frame(f, {at(f)}, TRUE));
  for (int f = 10; f < 60; ++f) {
    GstBuffer* buf = frame(f, {at(9)}, FALSE);
    gst_buffer_get_torch_tensor_meta(buf)->skip_reason =
        static_cast<GstTorchSkipReason>(skip_reason);
    *last_still = t.push(buf);
  }
  return t.push(frame(60, {at(60)}, TRUE));
}

TEST(TorchTrack, StillFramesHoldTracksWhereTheyStopped) {
  std::vector<Roi> still;
  const std::vector<Roi> found = after_still_run(GST_TORCH_SKIP_STILL, &still);
  ASSERT_EQ(still.size(), 1u);
  EXPECT_EQ(still[0].id, 1);
  EXPECT_FALSE(still[0].predicted);
  EXPECT_EQ(still[0].age, 60);
  EXPECT_NEAR(centre_x(still[0]), 190.0, 1e-9) << "frame 9's box";
  EXPECT_NEAR(centre_y(still[0]), 240.0, 1e-9);
  EXPECT_NEAR((still[0].det.x_max - still[0].det.x_min) * kW, 60.0, 1e-9);
  EXPECT_EQ(ids(found), std::vector<int>{1});

  std::vector<Roi> predicted;
  const std::vector<Roi> lost = after_still_run(GST_TORCH_SKIP_INTERVAL, &predicted);
  EXPECT_TRUE(predicted.empty() || predicted[0].predicted);
  EXPECT_EQ(ids(lost), std::vector<int>{2});

  // Empty inferred frames, and frames with neither a tensor meta nor a
  // detection, are misses: max-age 30 ends the track on the 31st.
  for (int inferred : {int(TRUE), -1}) {
    Tracked t("min-hits=1");
    for (int f = 0; f < 10; ++f) t.push(frame(f, {Obj{100.0 + 10 * f, 240, "bolt", 60, 40}}, TRUE));
    for (int f = 10; f < 60; ++f) EXPECT_TRUE(t.push(frame(f, {}, inferred)).empty());
    EXPECT_EQ(ids(t.push(frame(60, {Obj{190, 240, "bolt", 60, 40}}, TRUE))), std::vector<int>{2})
        << "inferred " << inferred;
  }
}
