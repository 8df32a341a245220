// torchpublish against a real mosquitto broker: one message per frame equal
// to torchmetaconvert's line, mode=detections, broker down at start, broker
// restart, credentials, and every bad setting.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "mqtt_broker.h"

using namespace torchinfer::test;
using nlohmann::json;

namespace {

const char* kCaps = "video/x-raw,format=YUY2,width=160,height=120,framerate=30/1";
const char* kRgbCaps = "video/x-raw,format=RGB,width=320,height=256,framerate=30/1";

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// A harness around `chain` (a launch line whose publisher is named "pub"),
// with a bus on the bin so warnings can be read.
struct Chain {
  GstHarness* h = nullptr;
  GstElement* pub = nullptr;
  GstBus* bus = nullptr;

  Chain(const std::string& line, const char* caps) {
    // The bus goes on before the harness starts the bin: the first warning
    // can come a millisecond after start.
    GstElement* bin = gst_parse_bin_from_description(line.c_str(), TRUE, nullptr);
    bus = gst_bus_new();
    gst_element_set_bus(bin, bus);
    pub = gst_bin_get_by_name(GST_BIN(bin), "pub");
    h = gst_harness_new_with_element(bin, "sink", "src");
    gst_object_unref(bin);
    gst_harness_set_src_caps_str(h, caps);
  }
  ~Chain() {
    if (pub) gst_object_unref(pub);
    gst_harness_teardown(h);
    gst_bus_set_flushing(bus, TRUE);
    gst_object_unref(bus);
  }
  void push(GstBuffer* b) {
    GstBuffer* out = gst_harness_push_and_pull(h, b);
    EXPECT_NE(out, nullptr);
    if (out) gst_buffer_unref(out);
  }
  // Stops the element (flushes, disconnects); counters stay readable.
  void stop() { gst_element_set_state(h->element, GST_STATE_NULL); }
  guint64 u64(const char* name) {
    guint64 v = 0;
    g_object_get(pub, name, &v, nullptr);
    return v;
  }
  bool connected() {
    gboolean v = FALSE;
    g_object_get(pub, "connected", &v, nullptr);
    return v;
  }
  // Waits (bounded) until `connected` reads `want`.
  bool wait_connected(bool want = true) {
    for (int i = 0; i < 400; ++i) {
      if (connected() == want) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  void eos() { ASSERT_TRUE(gst_harness_push_event(h, gst_event_new_eos())); }
  // torchpublish-stats messages posted so far (posted on the streaming thread).
  std::vector<GstStructure*> stats() {
    std::vector<GstStructure*> out;
    while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT)) {
      const GstStructure* s = gst_message_get_structure(m);
      if (gst_structure_has_name(s, "torchpublish-stats")) out.push_back(gst_structure_copy(s));
      gst_message_unref(m);
    }
    return out;
  }
  // Warning texts until one contains `what` (up to 60 s), that one included.
  std::vector<std::string> warnings_until(const std::string& what) {
    std::vector<std::string> out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      for (const auto& w : warnings(false)) out.push_back(w);
      for (const auto& w : out)
        if (w.find(what) != std::string::npos) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return out;
  }
  // Warning texts posted so far (waits up to 20 s for at least one).
  std::vector<std::string> warnings(bool wait = true) {
    std::vector<std::string> out;
    while (GstMessage* m = gst_bus_timed_pop_filtered(
               bus, wait && out.empty() ? 20 * GST_SECOND : 0, GST_MESSAGE_WARNING)) {
      GError* err = nullptr;
      gst_message_parse_warning(m, &err, nullptr);
      out.push_back(err->message);
      g_error_free(err);
      gst_message_unref(m);
    }
    return out;
  }
};

std::string pub_props(int port, const std::string& topic, const std::string& extra = "") {
  return "torchpublish name=pub port=" + std::to_string(port) + " topic=" + topic +
         " reconnect-delay-max=1 " + extra;
}

GstBuffer* timed(GstBuffer* b, int i) {
  GST_BUFFER_PTS(b) = i * GST_SECOND / 30;
  GST_BUFFER_DURATION(b) = GST_SECOND / 30;
  return b;
}

GstBuffer* solid_rgb(guint8 v, int i) {
  const GstVideoInfo info = info_of(kRgbCaps);
  GstBuffer* b = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(b, 0, v, GST_VIDEO_INFO_SIZE(&info));
  return timed(b, i);
}

bool contains(const std::vector<std::string>& texts, const std::string& what) {
  for (const auto& t : texts)
    if (t.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

class TorchPublishQos : public testing::TestWithParam<int> {};

// Each message is byte for byte the line torchmetaconvert writes for the
// same buffer, in frame order.
TEST_P(TorchPublishQos, OneMessagePerFrameEqualToTheJsonLine) {
  Broker broker;
  ASSERT_TRUE(broker.start());
  Subscriber sub(broker.port(), "line1/cam0");
  ASSERT_TRUE(sub.wait_subscribed());
  const std::string path = testing::TempDir() + "pub_lines.jsonl";
  Chain c("torchinfer model=" + model("tiny_classifier.pt") +
              " ! torchmetaconvert location=" + path + " ! " +
              pub_props(broker.port(), "line1/cam0", "qos=" + std::to_string(GetParam())),
          kCaps);
  const GstVideoInfo info = info_of(kCaps);
  for (int i = 0; i < 12; ++i) c.push(timed(make_video_buffer(info, i), i));
  ASSERT_TRUE(sub.wait_for(12));
  c.stop();
  EXPECT_EQ(c.u64("published"), 12u);
  EXPECT_EQ(c.u64("failed"), 0u);
  EXPECT_EQ(c.u64("reconnects"), 0u);
  const auto lines = read_lines(path);
  const auto msgs = sub.messages();
  ASSERT_EQ(lines.size(), 12u);
  ASSERT_EQ(msgs.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(msgs[i], lines[i]);
    const json j = json::parse(msgs[i]);
    EXPECT_EQ(j["frame"], i);
    EXPECT_EQ(j["pts"].get<std::int64_t>(), static_cast<std::int64_t>(i * GST_SECOND / 30));
    EXPECT_EQ(j["classification"].size(), 3u);
  }
  EXPECT_TRUE(c.warnings(false).empty());
}

INSTANTIATE_TEST_SUITE_P(Qos, TorchPublishQos, testing::Values(0, 1));

// mm-per-pixel as torchmetaconvert's: the masks of a segmentation model
// (seg_fixed.pt, torchnms decoder yolov8-seg from its sidecar) get
// "area_mm2" = area x 0.25^2 over MQTT, the message byte for byte the line;
// uncalibrated (the default, 0) they get none.
TEST(TorchPublish, MmPerPixelGivesMasksTheirAreaInMm2LikeTheJsonLine) {
  Broker broker;
  ASSERT_TRUE(broker.start());
  Subscriber sub(broker.port(), "seg");
  ASSERT_TRUE(sub.wait_subscribed());
  const std::string path = testing::TempDir() + "pub_seg.jsonl";
  const char* caps = "video/x-raw,format=RGB,width=128,height=128,framerate=30/1";
  Chain c("torchinfer precision=fp32 model=" + model("seg_fixed.pt") +
              " ! torchnms ! torchmetaconvert mm-per-pixel=0.25 location=" + path + " ! " +
              pub_props(broker.port(), "seg", "mm-per-pixel=0.25"),
          caps);
  const GstVideoInfo info = info_of(caps);
  GstBuffer* b = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(b, 0, 128, GST_VIDEO_INFO_SIZE(&info));
  c.push(timed(b, 0));
  ASSERT_TRUE(sub.wait_for(1));
  g_object_set(c.pub, "mm-per-pixel", 0.0, nullptr);
  GstBuffer* plain = gst_buffer_new_allocate(nullptr, GST_VIDEO_INFO_SIZE(&info), nullptr);
  gst_buffer_memset(plain, 0, 128, GST_VIDEO_INFO_SIZE(&info));
  c.push(timed(plain, 1));
  ASSERT_TRUE(sub.wait_for(2));
  c.stop();
  const auto lines = read_lines(path);
  const auto msgs = sub.messages();
  ASSERT_EQ(msgs.size(), 2u);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(msgs[0], lines[0]);
  const json calibrated = json::parse(msgs[0])["detections"];
  const json uncalibrated = json::parse(msgs[1])["detections"];
  ASSERT_EQ(calibrated.size(), 4u) << msgs[0];  // seg_fixed.expected.json
  ASSERT_EQ(uncalibrated.size(), 4u) << msgs[1];
  for (std::size_t i = 0; i < calibrated.size(); ++i) {
    const json& m = calibrated[i]["mask"];
    EXPECT_DOUBLE_EQ(m["area_mm2"].get<double>(), m["area"].get<double>() * 0.0625) << i;
    EXPECT_EQ(uncalibrated[i]["mask"]["area"], m["area"]) << i;
    EXPECT_FALSE(uncalibrated[i]["mask"].contains("area_mm2")) << msgs[1];
  }
  EXPECT_TRUE(json::parse(lines[1])["detections"][0]["mask"].contains("area_mm2"));
}

// Candidate 4 of yolo_candidates scores the frame's red at the centre: over
// 0.96 only it survives, on white frames only.
TEST(TorchPublish, DetectionsModeSendsOnlyFramesWithDetections) {
  Broker broker;
  ASSERT_TRUE(broker.start());
  Subscriber sub(broker.port(), "det");
  ASSERT_TRUE(sub.wait_subscribed());
  const std::string path = testing::TempDir() + "pub_det.jsonl";
  Chain c("torchinfer model=" + model("yolo_candidates.pt") +
              " ! torchnms confidence-threshold=0.96 ! torchmetaconvert location=" + path + " ! " +
              pub_props(broker.port(), "det", "mode=detections"),
          kRgbCaps);
  const bool white[] = {true, false, false, true, true, false};
  for (int i = 0; i < 6; ++i) c.push(solid_rgb(white[i] ? 255 : 0, i));
  ASSERT_TRUE(sub.wait_for(3));
  c.stop();
  EXPECT_EQ(c.u64("published"), 3u);
  EXPECT_EQ(c.u64("failed"), 0u);
  const auto lines = read_lines(path);
  const auto msgs = sub.messages();
  ASSERT_EQ(lines.size(), 6u);
  ASSERT_EQ(msgs.size(), 3u);
  const int sent[] = {0, 3, 4};
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(msgs[k], lines[sent[k]]);
    const json j = json::parse(msgs[k]);
    EXPECT_EQ(j["frame"], sent[k]);
    ASSERT_EQ(j["detections"].size(), 1u);
    EXPECT_EQ(j["detections"][0]["label"], "bolt");
  }
}

// Classification: a frame is sent when its own inference changed the top-1
// class; frames that reuse a result (inference-interval) never are.
TEST(TorchPublish, DetectionsModeSendsClassificationChanges) {
  Broker broker;
  ASSERT_TRUE(broker.start());
  Subscriber sub(broker.port(), "cls");
  ASSERT_TRUE(sub.wait_subscribed());
  const std::string path = testing::TempDir() + "pub_cls.jsonl";
  Chain c("torchinfer inference-interval=2 model=" + model("tiny_classifier.pt") +
              " ! torchmetaconvert location=" + path + " ! " +
              pub_props(broker.port(), "cls", "mode=detections"),
          kCaps);
  const GstVideoInfo info = info_of(kCaps);
  for (int i = 0; i < 24; ++i) c.push(timed(make_video_buffer(info, i * 5), i));
  c.stop();  // flushes everything to the broker
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 24u);
  std::vector<std::string> expected;
  int last = -1, reused = 0;
  for (const auto& l : lines) {
    const json j = json::parse(l);
    if (!j["inferred"].get<bool>()) {
      reused++;
      continue;
    }
    const int top1 = j["classification"][0]["label_id"];
    if (top1 != last) expected.push_back(l);
    last = top1;
  }
  EXPECT_EQ(reused, 12);
  ASSERT_FALSE(expected.empty());
  ASSERT_TRUE(sub.wait_for(expected.size()));
  EXPECT_EQ(sub.messages(), expected);
  EXPECT_EQ(c.u64("published"), expected.size());
}

// The video must not notice a missing broker: every frame passes, a warning
// says why nothing is published, and what could not be sent is counted.
TEST(TorchPublish, BrokerDownAtStartPipelineRunsEveryFrame) {
  const int port = free_port();
  const std::string line =
      "videotestsrc num-buffers=20 ! video/x-raw,format=RGB,width=64,height=48 ! torchinfer "
      "model=" +
      model("tiny_classifier.pt") + " ! " + pub_props(port, "down", "max-queued=5") +
      " ! fakesink name=sink";
  GError* err = nullptr;
  GstElement* pipeline = gst_parse_launch(line.c_str(), &err);
  ASSERT_NE(pipeline, nullptr) << (err ? err->message : "");
  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad* pad = gst_element_get_static_pad(sink, "sink");
  int buffers = 0;
  gst_pad_add_probe(
      pad, GST_PAD_PROBE_TYPE_BUFFER,
      [](GstPad*, GstPadProbeInfo*, gpointer n) {
        ++*static_cast<int*>(n);
        return GST_PAD_PROBE_OK;
      },
      &buffers, nullptr);
  GstBus* bus = gst_element_get_bus(pipeline);
  ASSERT_NE(gst_element_set_state(pipeline, GST_STATE_PLAYING), GST_STATE_CHANGE_FAILURE);
  bool eos = false;
  std::vector<std::string> warnings;
  std::vector<GstStructure*> stats;
  const std::string refused =
      "Cannot connect to MQTT broker 127.0.0.1:" + std::to_string(port) + ": Connection refused";
  // Until EOS and the connection warning (from the network thread, in any order).
  while (GstMessage* m = gst_bus_timed_pop_filtered(
             bus, 60 * GST_SECOND,
             static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_WARNING |
                                         GST_MESSAGE_ELEMENT))) {
    const GstMessageType t = GST_MESSAGE_TYPE(m);
    if (t == GST_MESSAGE_WARNING) {
      GError* e = nullptr;
      gst_message_parse_warning(m, &e, nullptr);
      warnings.push_back(e->message);
      g_error_free(e);
    }
    if (t == GST_MESSAGE_ELEMENT &&
        gst_structure_has_name(gst_message_get_structure(m), "torchpublish-stats"))
      stats.push_back(gst_structure_copy(gst_message_get_structure(m)));
    gst_message_unref(m);
    if (t == GST_MESSAGE_ERROR) break;
    if (t == GST_MESSAGE_EOS) eos = true;
    if (eos && contains(warnings, refused)) break;
  }
  EXPECT_TRUE(eos);
  EXPECT_EQ(buffers, 20);
  GstElement* pub = gst_bin_get_by_name(GST_BIN(pipeline), "pub");
  gst_element_set_state(pipeline, GST_STATE_NULL);  // prompt: nothing to wait for
  guint64 published = 1, failed = 1, dropped = 0;
  gboolean connected = TRUE;
  g_object_get(pub, "published", &published, "failed", &failed, "dropped", &dropped, "connected",
               &connected, nullptr);
  EXPECT_EQ(published, 0u);
  EXPECT_EQ(failed, 0u);
  EXPECT_EQ(dropped, 20u);  // 15 pushed out of the full queue, 5 still queued at stop
  EXPECT_FALSE(connected);
  // One connection warning (not one per retry), one for the drops (the
  // first; the next would wait 5 s), one summary at EOS with exact counts.
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_TRUE(contains(warnings, refused));
  EXPECT_TRUE(contains(warnings,
                       "MQTT topic 'down': 1 message(s) dropped so far: the queue "
                       "(max-queued=5) is full"));
  EXPECT_TRUE(contains(warnings,
                       "MQTT topic 'down': 20 of 20 messages not delivered at EOS: 0 "
                       "published, 0 failed, 15 dropped, 5 still queued."));
  // The stats at EOS, whatever stats-interval.
  ASSERT_EQ(stats.size(), 1u);
  guint64 v = 99;
  guint q = 99;
  gboolean conn = TRUE;
  EXPECT_TRUE(gst_structure_get_uint64(stats[0], "published", &v) && v == 0);
  EXPECT_TRUE(gst_structure_get_uint64(stats[0], "failed", &v) && v == 0);
  EXPECT_TRUE(gst_structure_get_uint64(stats[0], "dropped", &v) && v == 15);
  EXPECT_TRUE(gst_structure_get_uint(stats[0], "queued", &q) && q == 5);
  EXPECT_TRUE(gst_structure_get_boolean(stats[0], "connected", &conn) && !conn);
  for (GstStructure* s : stats) gst_structure_free(s);
  gst_object_unref(pub);
  gst_object_unref(pad);
  gst_object_unref(sink);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
}

// Broker stopped mid-stream and started again on the same port: frames sent
// meanwhile wait in the element's queue, go out after the reconnection
// (QoS 1), and the persistent subscriber session receives them all.
TEST(TorchPublish, ReconnectsAfterBrokerRestart) {
  Broker broker({"", "", /*persistence=*/true});
  ASSERT_TRUE(broker.start());
  SubscriberOptions so;
  so.client_id = "restart-test-sub";
  so.persistent = true;
  Subscriber sub(broker.port(), "restart", so);
  ASSERT_TRUE(sub.wait_subscribed());
  Chain c("torchinfer model=" + model("tiny_classifier.pt") + " ! " +
              pub_props(broker.port(), "restart", "qos=1"),
          kCaps);
  const GstVideoInfo info = info_of(kCaps);
  ASSERT_TRUE(c.wait_connected());
  for (int i = 0; i < 5; ++i) c.push(timed(make_video_buffer(info, i), i));
  ASSERT_TRUE(sub.wait_for(5));
  broker.stop();
  ASSERT_TRUE(c.wait_connected(false));
  for (int i = 5; i < 10; ++i) c.push(timed(make_video_buffer(info, i), i));
  ASSERT_TRUE(broker.start());
  ASSERT_TRUE(c.wait_connected());
  EXPECT_EQ(c.u64("reconnects"), 1u);
  for (int i = 10; i < 15; ++i) c.push(timed(make_video_buffer(info, i), i));
  ASSERT_TRUE(sub.wait_for(15));
  c.stop();
  EXPECT_EQ(c.u64("published"), 15u);
  EXPECT_EQ(c.u64("failed"), 0u);
  EXPECT_EQ(c.u64("dropped"), 0u);
  // QoS 1 is at least once: a message resent after the reconnection may
  // arrive again later, not only next to itself. Keep first arrivals: every
  // frame, in order.
  std::vector<int> frames;
  std::set<int> seen;
  for (const auto& m : sub.messages()) {
    const int f = json::parse(m)["frame"];
    if (seen.insert(f).second) frames.push_back(f);
  }
  ASSERT_EQ(frames.size(), 15u);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(frames[i], i);
  EXPECT_TRUE(contains(c.warnings(), "Lost the connection to MQTT broker"));
}

TEST(TorchPublish, RightCredentialsDeliverWrongOnesAreRefused) {
  Broker broker({"cam", "s3cret", false});
  ASSERT_TRUE(broker.start());
  SubscriberOptions so;
  so.username = "cam";
  so.password = "s3cret";
  Subscriber sub(broker.port(), "auth", so);
  ASSERT_TRUE(sub.wait_subscribed());
  const GstVideoInfo info = info_of(kCaps);
  {
    Chain c("torchinfer model=" + model("tiny_classifier.pt") + " ! " +
                pub_props(broker.port(), "auth", "username=cam password=s3cret"),
            kCaps);
    ASSERT_TRUE(c.wait_connected());
    for (int i = 0; i < 3; ++i) c.push(timed(make_video_buffer(info, i), i));
    ASSERT_TRUE(sub.wait_for(3));
    c.stop();
    EXPECT_EQ(c.u64("published"), 3u);
  }
  for (const char* creds : {"username=cam password=wrong", "username=intruder", ""}) {
    Chain c("torchinfer model=" + model("tiny_classifier.pt") + " ! " +
                pub_props(broker.port(), "auth", creds),
            kCaps);
    const auto w = c.warnings();
    ASSERT_FALSE(w.empty()) << creds;
    EXPECT_TRUE(contains(w, "Connection Refused: Not authorized")) << creds << ": " << w[0];
    for (int i = 0; i < 2; ++i) c.push(timed(make_video_buffer(info, i), i));
    EXPECT_FALSE(c.connected());
    c.stop();
    EXPECT_EQ(c.u64("published"), 0u);
    EXPECT_EQ(c.u64("failed"), 0u);
    EXPECT_EQ(c.u64("dropped"), 2u);  // still queued at stop: never sent
  }
  EXPECT_EQ(sub.messages().size(), 3u);
}

namespace {

// A frame with many detections makes a message of a few kB.
GstBuffer* with_detections(GstBuffer* b, int n) {
  for (int k = 0; k < n; ++k)
    EXPECT_NE(gst_buffer_add_torch_detection(b, "a_rather_long_label_for_size", k, 0.5, 1, 2, 30,
                                             40, 160, 120),
              nullptr);
  return b;
}

guint64 stat_u64(const GstStructure* s, const char* field) {
  guint64 v = 0;
  EXPECT_TRUE(gst_structure_get_uint64(s, field, &v)) << field;
  return v;
}

}  // namespace

// MQTT v5 (the default): the broker announces max_packet_size 1024, so the
// one larger message is refused by number and size, the connection stays
// up and the 19 others arrive.
TEST(TorchPublish, MessageOverTheBrokersPacketSizeIsNamedAndOnlyItFails) {
  Broker broker({"", "", false, 1024});
  ASSERT_TRUE(broker.start());
  Subscriber sub(broker.port(), "big");
  ASSERT_TRUE(sub.wait_subscribed());
  const std::string path = testing::TempDir() + "pub_big.jsonl";
  Chain c("torchmetaconvert location=" + path + " ! " + pub_props(broker.port(), "big", "qos=1"),
          kCaps);
  ASSERT_TRUE(c.wait_connected());
  const GstVideoInfo info = info_of(kCaps);
  for (int i = 0; i < 20; ++i) {
    GstBuffer* b = timed(make_video_buffer(info, i), i);
    c.push(i == 9 ? with_detections(b, 20) : b);
  }
  ASSERT_TRUE(sub.wait_for(19));
  c.stop();
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 20u);
  ASSERT_GT(lines[9].size(), 1024u);
  std::vector<std::string> expected = lines;
  expected.erase(expected.begin() + 9);
  EXPECT_EQ(sub.messages(), expected);
  EXPECT_EQ(c.u64("published"), 19u);
  EXPECT_EQ(c.u64("failed"), 1u);
  EXPECT_EQ(c.u64("dropped"), 0u);
  EXPECT_EQ(c.u64("reconnects"), 0u);
  const auto w = c.warnings(false);
  ASSERT_EQ(w.size(), 2u) << (w.empty() ? "" : w[0]);
  EXPECT_EQ(w[0], "MQTT broker 127.0.0.1:" + std::to_string(broker.port()) + ": message 10 of " +
                      std::to_string(lines[9].size()) +
                      " bytes exceeds the broker's maximum packet size of 1024 bytes (topic and "
                      "headers included); it was not sent (1 message(s) refused so far).");
  EXPECT_EQ(w[1],
            "MQTT topic 'big': 1 of 20 messages not delivered at stop: 19 published, 1 failed, 0 "
            "dropped, 0 still queued.");
}

// MQTT 3.1.1 brokers announce no limit: max-message-size is checked here.
TEST(TorchPublish, MaxMessageSizeRefusesLargerMessagesWithMqtt311) {
  Broker broker;
  ASSERT_TRUE(broker.start());
  Subscriber sub(broker.port(), "limit");
  ASSERT_TRUE(sub.wait_subscribed());
  Chain c(pub_props(broker.port(), "limit", "protocol-version=3.1.1 max-message-size=1000"), kCaps);
  ASSERT_TRUE(c.wait_connected());
  const GstVideoInfo info = info_of(kCaps);
  for (int i = 0; i < 4; ++i) {
    GstBuffer* b = timed(make_video_buffer(info, i), i);
    c.push(i == 1 || i == 2 ? with_detections(b, 20) : b);
  }
  ASSERT_TRUE(sub.wait_for(2));
  c.stop();
  EXPECT_EQ(sub.messages().size(), 2u);
  EXPECT_EQ(c.u64("published"), 2u);
  EXPECT_EQ(c.u64("failed"), 2u);
  const auto w = c.warnings(false);
  // The second refusal within 5 s of the first goes to the debug log; the
  // summary counts both.
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("message 2 of "), std::string::npos) << w[0];
  EXPECT_NE(w[0].find(" bytes exceeds max-message-size (1000 bytes); it was not sent (1 "
                      "message(s) refused so far)."),
            std::string::npos)
      << w[0];
  EXPECT_EQ(w[1],
            "MQTT topic 'limit': 2 of 4 messages not delivered at stop: 2 published, 2 failed, 0 "
            "dropped, 0 still queued.");
}

// Two elements with one client id: the broker closes the older connection
// whenever the other connects. Each element must say so, naming the id.
TEST(TorchPublish, SameClientIdOnTwoElementsIsReportedNotLoopedSilently) {
  Broker broker;
  ASSERT_TRUE(broker.start());
  Chain a(pub_props(broker.port(), "twin", "client-id=dup-cam"), kCaps);
  ASSERT_TRUE(a.wait_connected());
  Chain b(pub_props(broker.port(), "twin", "client-id=dup-cam"), kCaps);
  const std::string conflict =
      "Client id conflict on MQTT broker 127.0.0.1:" + std::to_string(broker.port()) +
      ": the broker closed the connection";
  const auto wa = a.warnings_until(conflict);
  const auto wb = b.warnings_until(conflict);
  for (const auto* w : {&wa, &wb}) {
    // Two ordinary losses, then the third in a row names the conflict.
    ASSERT_EQ(w->size(), 3u);
    EXPECT_NE((*w)[0].find("Lost the connection to MQTT broker"), std::string::npos) << (*w)[0];
    EXPECT_NE((*w)[1].find("Lost the connection to MQTT broker"), std::string::npos) << (*w)[1];
    EXPECT_NE((*w)[2].find(conflict), std::string::npos) << (*w)[2];
    EXPECT_NE((*w)[2].find("another client is probably using the same client id 'dup-cam'"),
              std::string::npos)
        << (*w)[2];
    EXPECT_NE((*w)[2].find("give each element its own client-id"), std::string::npos) << (*w)[2];
  }
}

// A torchpublish-stats message every stats-interval (on the next frame) and
// one at EOS with the final counts; nothing lost, so no warning.
TEST(TorchPublish, StatsMessagesPeriodicAndAtEos) {
  Broker broker;
  ASSERT_TRUE(broker.start());
  Subscriber sub(broker.port(), "stats");
  ASSERT_TRUE(sub.wait_subscribed());
  Chain c(pub_props(broker.port(), "stats", "qos=1 stats-interval=1"), kCaps);
  ASSERT_TRUE(c.wait_connected());
  const GstVideoInfo info = info_of(kCaps);
  for (int i = 0; i < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // > stats-interval
    c.push(timed(make_video_buffer(info, i), i));
  }
  c.eos();
  auto stats = c.stats();
  ASSERT_EQ(stats.size(), 6u);  // 5 periodic + 1 at EOS
  const GstStructure* last = stats.back();
  EXPECT_EQ(stat_u64(last, "published"), 5u);
  EXPECT_EQ(stat_u64(last, "failed"), 0u);
  EXPECT_EQ(stat_u64(last, "dropped"), 0u);
  EXPECT_EQ(stat_u64(last, "reconnects"), 0u);
  guint queued = 9, in_flight = 9;
  gboolean connected = FALSE;
  EXPECT_TRUE(gst_structure_get_uint(last, "queued", &queued));
  EXPECT_TRUE(gst_structure_get_uint(last, "in-flight", &in_flight));
  EXPECT_TRUE(gst_structure_get_boolean(last, "connected", &connected));
  EXPECT_EQ(queued, 0u);
  EXPECT_EQ(in_flight, 0u);
  EXPECT_TRUE(connected);
  for (GstStructure* s : stats) gst_structure_free(s);
  EXPECT_TRUE(c.warnings(false).empty());
  // stats-interval=0: only the one at EOS.
  Chain quiet(pub_props(broker.port(), "stats"), kCaps);
  ASSERT_TRUE(quiet.wait_connected());
  for (int i = 0; i < 3; ++i) quiet.push(timed(make_video_buffer(info, i), i));
  quiet.eos();
  stats = quiet.stats();
  ASSERT_EQ(stats.size(), 1u);
  for (GstStructure* s : stats) gst_structure_free(s);
}

namespace {

StartResult start_with(const std::function<void(GstElement*)>& configure) {
  GstElement* e = gst_element_factory_make("torchpublish", nullptr);
  configure(e);
  StartResult r = try_start(e);
  gst_object_unref(e);
  return r;
}

}  // namespace

TEST(TorchPublishErrors, NoTopicFailsToStart) {
  const StartResult r = start_with([](GstElement*) {});
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(r.error.set);
  EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR);
  EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_SETTINGS);
  EXPECT_NE(r.error.message.find("'topic'"), std::string::npos) << r.error.message;
}

TEST(TorchPublishErrors, MissingTlsCaFileIsNotFound) {
  const StartResult r = start_with([](GstElement* e) {
    g_object_set(e, "topic", "t", "tls-ca-file", "/nonexistent/ca.pem", nullptr);
  });
  EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE);
  ASSERT_TRUE(r.error.set);
  EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR);
  EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_NOT_FOUND);
  EXPECT_NE(r.error.message.find("/nonexistent/ca.pem"), std::string::npos) << r.error.message;
}

TEST(TorchPublishErrors, InconsistentSettingsFailToStart) {
  const std::string ca = testing::TempDir() + "pub_ca.pem";
  std::ofstream(ca) << "not a certificate\n";
  const std::vector<std::pair<std::function<void(GstElement*)>, std::string>> cases = {
      {[](GstElement* e) { g_object_set(e, "password", "pw", nullptr); }, "username"},
      {[](GstElement* e) {
         g_object_set(e, "reconnect-delay-min", 10, "reconnect-delay-max", 5, nullptr);
       },
       "reconnect-delay-max"},
      {[&](GstElement* e) {
         g_object_set(e, "tls-ca-file", ca.c_str(), "tls-cert-file", ca.c_str(), nullptr);
       },
       "tls-key-file"},
      {[&](GstElement* e) {
         g_object_set(e, "tls-cert-file", ca.c_str(), "tls-key-file", ca.c_str(), nullptr);
       },
       "tls-ca-file"},
  };
  for (const auto& [configure, word] : cases) {
    const StartResult r = start_with([&](GstElement* e) {
      g_object_set(e, "topic", "t", nullptr);
      configure(e);
    });
    EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE) << word;
    ASSERT_TRUE(r.error.set) << word;
    EXPECT_EQ(r.error.domain, GST_RESOURCE_ERROR) << word;
    EXPECT_EQ(r.error.code, GST_RESOURCE_ERROR_SETTINGS) << word;
    EXPECT_NE(r.error.message.find(word), std::string::npos) << r.error.message;
  }
}

TEST(TorchPublishErrors, BadTopicsAndHostAreRejectedWithAWarning) {
  GstElement* e = gst_element_factory_make("torchpublish", nullptr);
  g_object_set(e, "topic", "line1/cam0", nullptr);
  for (const char* bad : {"line1/+", "#", "a/#", ""}) {
    WarningCatcher w;
    g_object_set(e, "topic", bad, nullptr);
    EXPECT_EQ(w.messages().size(), 1u) << bad;
  }
  {
    WarningCatcher w;
    g_object_set(e, "host", "", nullptr);
    EXPECT_EQ(w.messages().size(), 1u);
  }
  gchar *topic = nullptr, *host = nullptr;
  g_object_get(e, "topic", &topic, "host", &host, nullptr);
  EXPECT_STREQ(topic, "line1/cam0");
  EXPECT_STREQ(host, "127.0.0.1");
  g_free(topic);
  g_free(host);
  gst_object_unref(e);
}

TEST(TorchPublishErrors, OutOfRangeNumbersAreRejected) {
  GstElement* e = gst_element_factory_make("torchpublish", nullptr);
  const std::vector<std::pair<const char*, int>> bad = {
      {"port", 0},
      {"port", 65536},
      {"qos", 3},
      {"qos", -1},
      {"keepalive", 4},
      {"reconnect-delay-min", 0},
      {"flush-timeout", -1},
      {"reconnect-delay-max", 3601},
  };
  for (const auto& [name, value] : bad) {
    WarningCatcher w("GLib-GObject");
    g_object_set(e, name, value, nullptr);
    EXPECT_EQ(w.messages().size(), 1u) << name << "=" << value;
  }
  gint port = 0, qos = -1, keepalive = 0, dmin = 0, flush = 0, dmax = 0;
  g_object_get(e, "port", &port, "qos", &qos, "keepalive", &keepalive, "reconnect-delay-min", &dmin,
               "flush-timeout", &flush, "reconnect-delay-max", &dmax, nullptr);
  EXPECT_EQ(port, 1883);
  EXPECT_EQ(qos, 0);
  EXPECT_EQ(keepalive, 60);
  EXPECT_EQ(dmin, 1);
  EXPECT_EQ(flush, 1000);
  EXPECT_EQ(dmax, 30);
  {
    WarningCatcher w("GLib-GObject");
    gst_util_set_object_arg(G_OBJECT(e), "mode", "sometimes");
    EXPECT_EQ(w.messages().size(), 0u);  // gst_util_set_object_arg logs, does not warn
  }
  gint mode = -1;
  g_object_get(e, "mode", &mode, nullptr);
  EXPECT_EQ(mode, 0);
  gst_object_unref(e);
}

TEST(TorchPublishErrors, SettingsLockedWhileRunning) {
  Chain c(pub_props(free_port(), "locked"), kCaps);
  c.push(make_video_buffer(info_of(kCaps), 0));
  {
    WarningCatcher w;
    g_object_set(c.pub, "host", "10.0.0.1", "topic", "other", nullptr);
    EXPECT_EQ(w.messages().size(), 2u);
  }
  gchar *host = nullptr, *topic = nullptr, *id = nullptr;
  g_object_get(c.pub, "host", &host, "topic", &topic, "client-id", &id, nullptr);
  EXPECT_STREQ(host, "127.0.0.1");
  EXPECT_STREQ(topic, "locked");
  ASSERT_NE(id, nullptr);
  EXPECT_TRUE(g_str_has_prefix(id, "torchinfer-")) << id;  // the generated id in use
  g_free(host);
  g_free(topic);
  g_free(id);
}

// torchtrack upstream: a frame where a track ends is sent even with no
// detection left on it, and says which track ended.
TEST(TorchPublish, DetectionsModeSendsTrackEndsWithoutDetections) {
  Broker broker;
  ASSERT_TRUE(broker.start());
  Subscriber sub(broker.port(), "trk");
  ASSERT_TRUE(sub.wait_subscribed());
  const std::string path = testing::TempDir() + "pub_trk.jsonl";
  Chain c("torchtrack min-hits=1 max-age=1 ! torchmetaconvert location=" + path + " ! " +
              pub_props(broker.port(), "trk", "mode=detections"),
          kRgbCaps);
  // A bolt on frames 0 and 1, then nothing: its track ends on frame 3.
  for (int i = 0; i < 6; ++i) {
    GstBuffer* b = solid_rgb(0, i);
    if (i < 2)
      ASSERT_NE(gst_buffer_add_torch_detection(b, "bolt", 0, 0.8, 100, 80, 160, 140, 320, 256),
                nullptr);
    c.push(b);
  }
  ASSERT_TRUE(sub.wait_for(3));
  c.stop();
  EXPECT_EQ(c.u64("published"), 3u);
  const auto lines = read_lines(path);
  const auto msgs = sub.messages();
  ASSERT_EQ(lines.size(), 6u);
  ASSERT_EQ(msgs.size(), 3u);
  const int sent[] = {0, 1, 3};
  for (int k = 0; k < 3; ++k) EXPECT_EQ(msgs[k], lines[sent[k]]) << k;
  const json ended = json::parse(msgs[2]);
  EXPECT_FALSE(ended.contains("detections"));
  ASSERT_EQ(ended["track_events"].size(), 1u);
  EXPECT_EQ(ended["track_events"][0]["event"], "ended");
  EXPECT_EQ(ended["track_events"][0]["id"], 1);
  EXPECT_EQ(ended["track_events"][0]["reason"], "lost");
  EXPECT_EQ(json::parse(msgs[1])["detections"][0]["object_id"], 1);
}
