// torchmetaconvert: one JSON line per frame, in order, with the results of
// the torchinfer meta; video untouched.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "gsttorchtrack.h"

using namespace torchinfer::test;
using nlohmann::json;

namespace {

const char* kCaps = "video/x-raw,format=YUY2,width=160,height=120,framerate=30/1";

std::vector<json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line));
  return out;
}

GstVideoInfo caps_info() {
  GstCaps* caps = gst_caps_from_string(kCaps);
  GstVideoInfo info;
  gst_video_info_from_caps(&info, caps);
  gst_caps_unref(caps);
  return info;
}

GstHarness* chain(const std::string& location, const std::string& extra) {
  const std::string line = "torchinfer model=" + model("tiny_classifier.pt") +
                           " ! torchmetaconvert location=" + location + " " + extra;
  GstHarness* h = gst_harness_new_parse(line.c_str());
  gst_harness_set_src_caps_str(h, kCaps);
  return h;
}

}  // namespace

TEST(TorchMetaConvert, OneLinePerFrameInOrder) {
  const std::string path = testing::TempDir() + "mc_lines.jsonl";
  GstHarness* h = chain(path, "");
  const GstVideoInfo info = caps_info();
  std::vector<std::vector<float>> scores;
  for (int i = 0; i < 12; ++i) {
    GstBuffer* in = make_video_buffer(info, i);
    GST_BUFFER_PTS(in) = i * GST_SECOND / 30;
    GST_BUFFER_DURATION(in) = GST_SECOND / 30;
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    ASSERT_NE(out, nullptr);
    GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
    ASSERT_NE(m, nullptr);
    const float* v = static_cast<const float*>(m->tensors[0].data);
    scores.emplace_back(v, v + 5);
    gst_buffer_unref(out);
  }
  gst_harness_teardown(h);  // closes the file
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    const json& j = lines[i];
    EXPECT_EQ(j["frame"], i);
    EXPECT_EQ(j["pts"].get<std::int64_t>(), static_cast<std::int64_t>(i * GST_SECOND / 30));
    EXPECT_EQ(j["duration"].get<std::int64_t>(), static_cast<std::int64_t>(GST_SECOND / 30));
    EXPECT_TRUE(j["dts"].is_null());
    EXPECT_EQ(j["width"], 160);
    EXPECT_EQ(j["height"], 120);
    EXPECT_EQ(j["input"]["width"], 48);
    EXPECT_EQ(j["model"], model("tiny_classifier.pt"));
    ASSERT_EQ(j["classification"].size(), 3u);
    int best = 0;
    for (int c = 1; c < 5; ++c)
      if (scores[i][c] > scores[i][best]) best = c;
    EXPECT_EQ(j["classification"][0]["label_id"], best);
    EXPECT_FALSE(j.contains("tensors"));
    EXPECT_GT(j["latency"]["inference_ms"].get<double>(), 0.0);
  }
}

TEST(TorchMetaConvert, IncludesTensorValuesOnRequest) {
  const std::string path = testing::TempDir() + "mc_tensors.jsonl";
  GstHarness* h = chain(path, "include-tensors=true max-tensor-elements=4");
  GstBuffer* out = gst_harness_push_and_pull(h, make_video_buffer(caps_info(), 1));
  GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(out);
  ASSERT_NE(m, nullptr);
  std::vector<float> v(static_cast<const float*>(m->tensors[0].data),
                       static_cast<const float*>(m->tensors[0].data) + 5);
  gst_buffer_unref(out);
  guint64 lines = 0;
  GstElement* conv = gst_bin_get_by_name(GST_BIN(h->element), "torchmetaconvert0");
  if (!conv) {
    GstIterator* it = gst_bin_iterate_elements(GST_BIN(h->element));
    GValue item = G_VALUE_INIT;
    while (gst_iterator_next(it, &item) == GST_ITERATOR_OK) {
      GstElement* e = GST_ELEMENT(g_value_get_object(&item));
      if (g_str_has_prefix(GST_OBJECT_NAME(e), "torchmetaconvert"))
        conv = GST_ELEMENT(gst_object_ref(e));
      g_value_reset(&item);
    }
    g_value_unset(&item);
    gst_iterator_free(it);
  }
  ASSERT_NE(conv, nullptr);
  g_object_get(conv, "lines", &lines, nullptr);
  EXPECT_EQ(lines, 1u);
  gst_object_unref(conv);
  gst_harness_teardown(h);
  const auto j = read_lines(path);
  ASSERT_EQ(j.size(), 1u);
  const json& t = j[0]["tensors"][0];
  EXPECT_EQ(t["name"], "output");
  EXPECT_EQ(t["dtype"], "float32");
  EXPECT_EQ(t["dims"], json::array({1, 5}));
  ASSERT_EQ(t["data"].size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(t["data"][i].get<float>(), v[i]);
  EXPECT_EQ(t["truncated"], true);
}

TEST(TorchMetaConvert, FramesWithoutResultsStillGetALine) {
  const std::string path = testing::TempDir() + "mc_plain.jsonl";
  GstHarness* h = gst_harness_new_parse(("torchmetaconvert location=" + path).c_str());
  gst_harness_set_src_caps_str(h, kCaps);
  GstBuffer* in = make_video_buffer(caps_info(), 5);
  GstBuffer* expected = gst_buffer_copy_deep(in);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  GstMapInfo a, b;
  gst_buffer_map(out, &a, GST_MAP_READ);
  gst_buffer_map(expected, &b, GST_MAP_READ);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(memcmp(a.data, b.data, a.size), 0);
  gst_buffer_unmap(out, &a);
  gst_buffer_unmap(expected, &b);
  gst_buffer_unref(out);
  gst_buffer_unref(expected);
  gst_harness_teardown(h);
  const auto j = read_lines(path);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["frame"], 0);
  EXPECT_FALSE(j[0].contains("model"));
  EXPECT_FALSE(j[0].contains("classification"));
}

TEST(TorchMetaConvertErrors, UnwritableLocation) {
  GstElement* e = gst_element_factory_make("torchmetaconvert", nullptr);
  g_object_set(e, "location", "/nonexistent/dir/out.jsonl", nullptr);
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(r.error.set);
  EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR);
  EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_OPEN_WRITE);
  EXPECT_NE(r.error.message.find("/nonexistent/dir/out.jsonl"), std::string::npos);
  gst_object_unref(e);
}

// A FIFO nobody reads yet used to hold the change to PAUSED in open()
// forever; with a reader it is written like a file.
TEST(TorchMetaConvertErrors, FifoWithoutAReaderFailsAtOnceWithOneItIsWritten) {
  char dir[] = "/tmp/torchmetaconvert-fifo-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/results.jsonl";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  GstElement* e = gst_element_factory_make("torchmetaconvert", nullptr);
  g_object_set(e, "location", fifo.c_str(), nullptr);
  const StartResult r = try_start(e);
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(r.error.set);
  EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR);
  EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_OPEN_WRITE);
  EXPECT_EQ(r.error.message, "torchmetaconvert location '" + fifo +
                                 "' is a FIFO (named pipe) that no process reads; start its "
                                 "reader first or give the path of a file");
  gst_element_set_state(e, GST_STATE_NULL);
  gst_object_unref(e);

  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  GstHarness* h = gst_harness_new_parse(("torchmetaconvert location=" + fifo).c_str());
  gst_harness_set_src_caps_str(h, kCaps);
  gst_buffer_unref(gst_harness_push_and_pull(h, make_video_buffer(caps_info(), 1)));
  gst_harness_teardown(h);
  char buf[4096];
  const ssize_t n = read(reader, buf, sizeof buf);
  ASSERT_GT(n, 0);
  const std::string line(buf, static_cast<std::size_t>(n));
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(json::parse(line)["frame"], 0) << line;
  close(reader);
  unlink(fifo.c_str());
  rmdir(dir);
}

TEST(TorchMetaConvertErrors, LocationLockedWhileRunning) {
  const std::string path = testing::TempDir() + "mc_locked.jsonl";
  GstHarness* h = gst_harness_new_parse(("torchmetaconvert location=" + path).c_str());
  gst_harness_set_src_caps_str(h, kCaps);
  gst_buffer_unref(gst_harness_push_and_pull(h, make_video_buffer(caps_info(), 1)));
  GstIterator* it = gst_bin_iterate_elements(GST_BIN(h->element));
  GValue item = G_VALUE_INIT;
  ASSERT_EQ(gst_iterator_next(it, &item), GST_ITERATOR_OK);
  GstElement* conv = GST_ELEMENT(g_value_get_object(&item));
  {
    WarningCatcher w;
    g_object_set(conv, "location", "/tmp/elsewhere.jsonl", nullptr);
    EXPECT_EQ(w.messages().size(), 1u);
  }
  gchar* loc = nullptr;
  g_object_get(conv, "location", &loc, nullptr);
  EXPECT_EQ(path, loc);
  g_free(loc);
  g_value_unset(&item);
  gst_iterator_free(it);
  gst_harness_teardown(h);
}

namespace {

// A frame with one torchnms-style bolt ROI per given left edge (pixels), 40
// px wide, at the top of the frame.
GstBuffer* bolts(const GstVideoInfo& info, int n, std::initializer_list<double> xs) {
  GstBuffer* b = make_video_buffer(info, n);
  GST_BUFFER_PTS(b) = n * GST_SECOND / 30;
  for (double x : xs)
    EXPECT_NE(gst_buffer_add_torch_detection(b, "bolt", 0, 0.8, x, 10, x + 40, 50, 160, 120),
              nullptr);
  return b;
}

}  // namespace

// torchtrack's ids on the detections and its events on the frames, as the
// element messages say them.
TEST(TorchMetaConvert, WritesTorchtrackIdsAndTrackEvents) {
  const std::string path = testing::TempDir() + "mc_track.jsonl";
  GstElement* bin = gst_parse_bin_from_description(
      ("torchtrack min-hits=1 max-age=1 ! torchmetaconvert location=" + path).c_str(), TRUE,
      nullptr);
  ASSERT_NE(bin, nullptr);
  GstBus* bus = gst_bus_new();
  gst_element_set_bus(bin, bus);
  GstHarness* h = gst_harness_new_with_element(bin, "sink", "src");
  gst_object_unref(bin);
  gst_harness_set_src_caps_str(h, kCaps);
  const GstVideoInfo info = caps_info();
  // Frame 0: a bolt (track 1 starts at once); 1: it moved, a second one
  // appears (track 2); 2, 3: nothing (1 and 2 miss one frame, then end).
  for (GstBuffer* in :
       {bolts(info, 0, {10}), bolts(info, 1, {12, 100}), bolts(info, 2, {}), bolts(info, 3, {})}) {
    GstBuffer* out = gst_harness_push_and_pull(h, in);
    ASSERT_NE(out, nullptr);
    gst_buffer_unref(out);
  }
  std::vector<GstStructure*> messages;
  while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT)) {
    messages.push_back(gst_structure_copy(gst_message_get_structure(m)));
    gst_message_unref(m);
  }
  gst_harness_teardown(h);
  gst_bus_set_flushing(bus, TRUE);
  gst_object_unref(bus);

  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 4u);
  const std::string stream = lines[0]["stream_id"];
  ASSERT_EQ(lines[0]["detections"].size(), 1u);
  EXPECT_EQ(lines[0]["detections"][0]["object_id"], 1);
  EXPECT_EQ(lines[0]["detections"][0]["predicted"], false);
  ASSERT_EQ(lines[1]["detections"].size(), 2u);
  EXPECT_EQ(lines[1]["detections"][0]["object_id"], 1);
  EXPECT_EQ(lines[1]["detections"][1]["object_id"], 2);
  EXPECT_FALSE(lines[2].contains("detections"));
  EXPECT_FALSE(lines[2].contains("track_events"));

  // Every frame event as posted, in order: started 1, started 2, ended 1, 2.
  std::vector<json> events;
  for (const json& l : lines)
    if (l.contains("track_events"))
      for (const json& e : l["track_events"]) events.push_back(e);
  ASSERT_EQ(events.size(), 4u);
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(lines[0]["track_events"].size(), 1u);
  EXPECT_EQ(lines[1]["track_events"].size(), 1u);
  EXPECT_EQ(lines[3]["track_events"].size(), 2u);
  const char* want_event[] = {"started", "started", "ended", "ended"};
  const int want_id[] = {1, 2, 1, 2};
  for (std::size_t i = 0; i < 4; ++i) {
    const json& e = events[i];
    const GstStructure* s = messages[i];
    EXPECT_EQ(e["event"], want_event[i]) << i;
    EXPECT_EQ(std::string(gst_structure_get_name(s)),
              std::string("torchtrack-track-") + want_event[i]);
    EXPECT_EQ(e["id"], want_id[i]) << i;
    EXPECT_EQ(e["label"], "bolt");
    EXPECT_EQ(e["label_id"], 0);
    EXPECT_EQ(e["stream_id"], stream);
    int id = 0, age = 0;
    guint64 pts = 0;
    ASSERT_TRUE(gst_structure_get_int(s, "id", &id));
    ASSERT_TRUE(gst_structure_get_int(s, "age", &age));
    ASSERT_TRUE(gst_structure_get_uint64(s, "pts", &pts));
    EXPECT_EQ(e["id"], id) << i;
    EXPECT_EQ(e["age"], age) << i;
    EXPECT_EQ(e["pts"].get<guint64>(), pts) << i;
    EXPECT_EQ(e["stream_id"], gst_structure_get_string(s, "stream-id")) << i;
    EXPECT_EQ(e.contains("reason"), i >= 2) << i;
  }
  EXPECT_EQ(events[0]["pts"], 0);
  EXPECT_EQ(events[1]["pts"].get<guint64>(), GST_SECOND / 30);
  for (std::size_t i = 2; i < 4; ++i) {
    EXPECT_EQ(events[i]["pts"].get<guint64>(), 3 * GST_SECOND / 30) << i;
    EXPECT_EQ(events[i]["reason"], "lost") << i;
    EXPECT_EQ(events[i]["last_seen_pts"].get<guint64>(), GST_SECOND / 30) << i;
  }
  for (GstStructure* s : messages) gst_structure_free(s);
}

// Metas torchtrack did not write as documented (another element's structure
// in the events array, an object_id without "id") add nothing to the line.
TEST(TorchMetaConvert, MalformedTrackMetasAreLeftOut) {
  const std::string path = testing::TempDir() + "mc_track_bad.jsonl";
  GstHarness* h = gst_harness_new_parse(("torchmetaconvert location=" + path).c_str());
  gst_harness_set_src_caps_str(h, kCaps);  // the plugin is loaded: the events meta is registered
  GstBuffer* in = bolts(caps_info(), 0, {10});
  GstVideoRegionOfInterestMeta* roi = gst_buffer_get_video_region_of_interest_meta_id(in, 0);
  ASSERT_NE(roi, nullptr);
  gst_video_region_of_interest_meta_add_param(
      roi, gst_structure_new(GST_TORCHTRACK_OBJECT_ID_STRUCTURE_NAME, "predicted", G_TYPE_BOOLEAN,
                             TRUE, nullptr));
  GstCustomMeta* cm = gst_buffer_add_custom_meta(in, GST_TORCHTRACK_EVENTS_META_NAME);
  ASSERT_NE(cm, nullptr);
  GValue list = G_VALUE_INIT, v = G_VALUE_INIT;
  gst_value_array_init(&list, 1);
  g_value_init(&v, GST_TYPE_STRUCTURE);
  GstStructure* other = gst_structure_new("someone-elses-event", "id", G_TYPE_INT, 1, nullptr);
  gst_value_set_structure(&v, other);
  gst_structure_free(other);
  gst_value_array_append_and_take_value(&list, &v);
  gst_structure_take_value(gst_custom_meta_get_structure(cm), "events", &list);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  ASSERT_NE(out, nullptr);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0]["detections"].size(), 1u);
  EXPECT_FALSE(lines[0]["detections"][0].contains("object_id"));
  EXPECT_FALSE(lines[0]["detections"][0].contains("predicted"));
  EXPECT_FALSE(lines[0].contains("track_events"));
}
