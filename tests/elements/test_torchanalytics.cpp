// torchanalytics: counts over scripted trajectories of tracked ROIs (made as
// torchnms + torchtrack make them), its meta, messages, streams, live
// changes and refused values.
#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gst/video/video.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "element_helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "gsttorchtrack.h"
#include "mqtt_broker.h"

using namespace torchinfer::test;

namespace {

const char* kCaps = "video/x-raw,format=GRAY8,width=640,height=480,framerate=30/1";
constexpr guint kW = 640, kH = 480;
constexpr GstClockTime kFrame = GST_SECOND / 30;

struct Obj {
  int id;       // track id; 0 = untracked
  double x, y;  // bottom-centre
  const char* label = "part";
};

GstBuffer* frame(int n, const std::vector<Obj>& objs) {
  GstBuffer* buf = gst_buffer_new_allocate(nullptr, kW * kH, nullptr);
  GST_BUFFER_PTS(buf) = n * kFrame;
  for (const Obj& o : objs) {
    GstVideoRegionOfInterestMeta* roi = gst_buffer_add_torch_detection(
        buf, o.label, 0, 0.9, o.x - 20, o.y - 40, o.x + 20, o.y, kW, kH);
    if (o.id > 0)
      gst_video_region_of_interest_meta_add_param(
          roi,
          gst_structure_new(GST_TORCHTRACK_OBJECT_ID_STRUCTURE_NAME, "id", G_TYPE_INT, o.id,
                            "predicted", G_TYPE_BOOLEAN, FALSE, "age", G_TYPE_INT, n, nullptr));
  }
  return buf;
}

struct LineCount {
  guint64 forward = 0, backward = 0;
  std::map<std::string, std::pair<guint64, guint64>> by_class;
};
struct ZoneCount {
  guint64 inside = 0, entered = 0, exited = 0;
};

struct Frame {
  std::string stream;
  std::map<std::string, LineCount> lines;
  std::map<std::string, ZoneCount> zones;
  std::vector<std::string> events;                  // "crossing gate forward 1"
  std::vector<std::vector<std::string>> roi_zones;  // per ROI
};

guint64 u64(const GstStructure* s, const char* f) {
  guint64 v = 0;
  EXPECT_TRUE(gst_structure_get_uint64(s, f, &v)) << f;
  return v;
}

const GstStructure* nth(const GValue* array, guint i) {
  return gst_value_get_structure(gst_value_array_get_value(array, i));
}

std::string describe(const GstStructure* e) {
  std::string name = gst_structure_get_name(e);
  name = name.substr(std::string("torchanalytics-").size());
  int id = 0;
  gst_structure_get_int(e, "id", &id);
  const gchar* where = gst_structure_get_string(e, name == "crossing" ? "line" : "zone");
  std::string out = name + " " + (where ? where : "?");
  if (const gchar* d = gst_structure_get_string(e, "direction")) out += std::string(" ") + d;
  return out + " " + std::to_string(id);
}

Frame read(GstBuffer* out) {
  Frame f;
  GstCustomMeta* cm = gst_buffer_get_custom_meta(out, GST_TORCH_ANALYTICS_META_NAME);
  EXPECT_NE(cm, nullptr);
  if (!cm) return f;
  const GstStructure* s = gst_custom_meta_get_structure(cm);
  EXPECT_STREQ(gst_structure_get_name(s), "torchanalytics");
  f.stream = gst_structure_get_string(s, "stream-id");
  const GValue* lines = gst_structure_get_value(s, "lines");
  for (guint i = 0; i < gst_value_array_get_size(lines); ++i) {
    const GstStructure* l = nth(lines, i);
    LineCount& c = f.lines[gst_structure_get_string(l, "name")];
    c.forward = u64(l, "forward");
    c.backward = u64(l, "backward");
    const GValue* cls = gst_structure_get_value(l, "by-class");
    for (guint k = 0; k < gst_value_array_get_size(cls); ++k) {
      const GstStructure* x = nth(cls, k);
      c.by_class[gst_structure_get_string(x, "label")] = {u64(x, "forward"), u64(x, "backward")};
    }
  }
  const GValue* zones = gst_structure_get_value(s, "zones");
  for (guint i = 0; i < gst_value_array_get_size(zones); ++i) {
    const GstStructure* z = nth(zones, i);
    f.zones[gst_structure_get_string(z, "name")] = {u64(z, "inside"), u64(z, "entered"),
                                                    u64(z, "exited")};
  }
  const GValue* events = gst_structure_get_value(s, "events");
  for (guint i = 0; i < gst_value_array_get_size(events); ++i)
    f.events.push_back(describe(nth(events, i)));
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             out, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    const GstStructure* p = gst_video_region_of_interest_meta_get_param(
        reinterpret_cast<GstVideoRegionOfInterestMeta*>(m), GST_TORCH_ANALYTICS_ROI_STRUCTURE_NAME);
    EXPECT_NE(p, nullptr);
    std::vector<std::string> names;
    const GValue* z = p ? gst_structure_get_value(p, "zones") : nullptr;
    for (guint i = 0; z && i < gst_value_array_get_size(z); ++i)
      names.push_back(g_value_get_string(gst_value_array_get_value(z, i)));
    f.roi_zones.push_back(names);
  }
  return f;
}

struct Analytics {
  GstHarness* h = nullptr;
  GstBus* bus = nullptr;
  int n = 0;

  explicit Analytics(const std::string& props) {
    GstElement* e = gst_parse_launch(("torchanalytics " + props).c_str(), nullptr);
    EXPECT_NE(e, nullptr);
    h = gst_harness_new_with_element(e, "sink", "src");
    gst_object_unref(e);
    bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    gst_harness_set_src_caps_str(h, kCaps);
  }
  ~Analytics() {
    gst_bus_set_flushing(bus, TRUE);
    gst_harness_teardown(h);
    gst_object_unref(bus);
  }
  Frame push(const std::vector<Obj>& objs) {
    GstBuffer* out = gst_harness_push_and_pull(h, frame(n++, objs));
    EXPECT_NE(out, nullptr);
    if (!out) return {};
    Frame f = read(out);
    gst_buffer_unref(out);
    return f;
  }
  // One object moving along xs at height y; the last frame's view.
  Frame walk(int id, const std::vector<double>& xs, double y = 300, const char* label = "part") {
    Frame f;
    for (double x : xs) f = push({{id, x, y, label}});
    return f;
  }
  std::vector<std::string> messages() {
    std::vector<std::string> out;
    while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT)) {
      out.push_back(describe(gst_message_get_structure(m)));
      gst_message_unref(m);
    }
    return out;
  }
};

using Strings = std::vector<std::string>;

}  // namespace

TEST(TorchAnalytics, CrossingBothWaysCountsByDirectionAndClass) {
  Analytics a("lines=gate:320,480,320,0");
  Frame f = a.walk(1, {280, 300, 340, 360});
  EXPECT_EQ(f.lines["gate"].forward, 1u);
  EXPECT_EQ(f.lines["gate"].backward, 0u);
  EXPECT_EQ(a.messages(), (Strings{"crossing gate forward 1"}));
  f = a.walk(2, {360, 340, 300}, 200, "bolt");
  EXPECT_EQ(f.events, (Strings{"crossing gate backward 2"}));  // the frame's own events
  EXPECT_EQ(f.lines["gate"].forward, 1u);
  EXPECT_EQ(f.lines["gate"].backward, 1u);
  EXPECT_EQ(f.lines["gate"].by_class["part"], (std::pair<guint64, guint64>{1, 0}));
  EXPECT_EQ(f.lines["gate"].by_class["bolt"], (std::pair<guint64, guint64>{0, 1}));
  EXPECT_EQ(a.messages(), (Strings{"crossing gate backward 2"}));
  EXPECT_TRUE(a.push({}).events.empty());  // counts stay on later frames
}

TEST(TorchAnalytics, JitterOnTheLineCountsOnce) {
  Analytics a("lines=gate:320,480,320,0 hysteresis=5");
  Frame f = a.walk(1, {300, 322, 318, 324, 316, 323, 317, 330, 340});
  EXPECT_EQ(f.lines["gate"].forward, 1u);
  EXPECT_EQ(f.lines["gate"].backward, 0u);
  EXPECT_EQ(a.messages(), (Strings{"crossing gate forward 1"}));
}

TEST(TorchAnalytics, TrackLostAndRefoundCountsOnce) {
  Analytics a("lines=gate:320,480,320,0 max-age=10");
  a.walk(4, {300, 340});
  for (int i = 0; i < 8; ++i) a.push({});  // occluded
  a.walk(4, {330, 350, 370});              // re-found (same id from torchtrack)
  Frame f = a.push({});
  EXPECT_EQ(f.lines["gate"].forward, 1u);
  // The same id after max-age frames is a new object.
  for (int i = 0; i < 11; ++i) a.push({});
  f = a.walk(4, {300, 340});
  EXPECT_EQ(f.lines["gate"].forward, 2u);
  EXPECT_EQ(a.messages(), (Strings{"crossing gate forward 4", "crossing gate forward 4"}));
}

TEST(TorchAnalytics, TwoStreamsCountApart) {
  Analytics a("lines=gate:320,480,320,0");
  const std::vector<double> xs = {300, 340};
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_TRUE(gst_harness_push_event(a.h, gst_event_new_stream_start("cam-a")));
    const Frame fa = a.push({{1, xs[i], 300}});
    EXPECT_EQ(fa.stream, "cam-a");
    EXPECT_TRUE(gst_harness_push_event(a.h, gst_event_new_stream_start("cam-b")));
    // Same track id, other stream, moving the other way.
    const Frame fb = a.push({{1, 640 - xs[i], 300}});
    EXPECT_EQ(fb.stream, "cam-b");
    if (i == 1) {
      EXPECT_EQ(fa.lines.at("gate").forward, 1u);
      EXPECT_EQ(fa.lines.at("gate").backward, 0u);
      EXPECT_EQ(fb.lines.at("gate").forward, 0u);
      EXPECT_EQ(fb.lines.at("gate").backward, 1u);
    }
  }
}

TEST(TorchAnalytics, ConcaveZoneBorderAndPerRoiZones) {
  // An L (the notch x 200..400, y 200..400 is outside) and a square sharing its edge.
  Analytics a(
      "zones=\"L:0,0,400,0,400,200,200,200,200,400,0,400;sq:400,0,600,0,600,200,400,200\" "
      "hysteresis=0");
  Frame f = a.push({{1, 100, 300}, {2, 300, 300}, {3, 400, 100}, {0, 100, 100}});
  EXPECT_EQ(f.roi_zones, (std::vector<Strings>{{"L"}, {}, {"L", "sq"}, {"L"}}));
  EXPECT_EQ(f.zones["L"].inside, 2u);  // the untracked object is placed, not counted
  EXPECT_EQ(f.zones["L"].entered, 2u);
  EXPECT_EQ(f.zones["sq"].inside, 1u);
  f = a.push({{1, 100, 300}, {2, 300, 300}, {3, 500, 100}});
  EXPECT_EQ(f.events, (Strings{"zone-exited L 3"}));
  EXPECT_EQ(f.zones["L"].inside, 1u);
  EXPECT_EQ(f.zones["L"].exited, 1u);
  EXPECT_EQ(a.messages(), (Strings{"zone-entered L 1", "zone-entered L 3", "zone-entered sq 3",
                                   "zone-exited L 3"}));
}

TEST(TorchAnalytics, ExitMessageCarriesDwell) {
  Analytics a("zones=sq:0,0,200,0,200,400,0,400 hysteresis=0");
  a.push({{1, 100, 300}});
  a.push({{1, 100, 300}});
  a.push({{1, 300, 300}});
  GstMessage* m = nullptr;
  while (GstMessage* x = gst_bus_pop_filtered(a.bus, GST_MESSAGE_ELEMENT)) {
    if (gst_structure_has_name(gst_message_get_structure(x), "torchanalytics-zone-exited"))
      m = gst_message_ref(x);
    gst_message_unref(x);
  }
  ASSERT_NE(m, nullptr);
  const GstStructure* s = gst_message_get_structure(m);
  EXPECT_EQ(u64(s, "dwell"), 2 * kFrame);
  EXPECT_EQ(u64(s, "pts"), 2 * kFrame);
  EXPECT_STREQ(gst_structure_get_string(s, "reason"), "left");
  EXPECT_STREQ(gst_structure_get_string(s, "label"), "part");
  gst_message_unref(m);
}

TEST(TorchAnalytics, ConfigFileClassFiltersHolesAndNormalized) {
  const std::string path = testing::TempDir() + "analytics.json";
  std::ofstream(path) << R"({"normalized": true,
    "lines": [{"name": "bolts", "points": [[0.5, 1], [0.5, 0]], "classes": ["bolt"]}],
    "zones": [{"name": "ring", "points": [[0,0],[1,0],[1,1],[0,1]],
               "holes": [[[0.25,0.25],[0.75,0.25],[0.75,0.75],[0.25,0.75]]]}]})";
  Analytics a("config=" + path + " lines=all:0.5,1,0.5,0 normalized=true");
  Frame f;
  for (double x : {300.0, 340.0}) f = a.push({{1, x, 300, "bolt"}, {2, x, 460, "nut"}});
  EXPECT_EQ(f.lines["all"].forward, 2u);
  EXPECT_EQ(f.lines["bolts"].forward, 1u);
  EXPECT_EQ(f.lines["bolts"].by_class.count("nut"), 0u);
  EXPECT_EQ(f.roi_zones, (std::vector<Strings>{{}, {"ring"}}));  // the bolt is in the hole
}

TEST(TorchAnalytics, LinesChangeWhilePlaying) {
  Analytics a("lines=\"gate:320,480,320,0;side:100,480,100,0\"");
  a.walk(1, {80, 120, 300, 340});
  Frame f = a.push({});
  EXPECT_EQ(f.lines["gate"].forward, 1u);
  EXPECT_EQ(f.lines["side"].forward, 1u);
  ASSERT_EQ(GST_STATE(a.h->element), GST_STATE_PLAYING);
  // gate unchanged: keeps its count; side moved: from zero; new line: from zero.
  g_object_set(a.h->element, "lines", "gate:320,480,320,0;side:200,480,200,0;far:500,480,500,0",
               nullptr);
  f = a.walk(2, {150, 250, 300, 340, 480, 520});
  EXPECT_EQ(f.lines["gate"].forward, 2u);
  EXPECT_EQ(f.lines["side"].forward, 1u);
  EXPECT_EQ(f.lines["far"].forward, 1u);
  // Removing every line: the frames carry no line counts.
  g_object_set(a.h->element, "lines", "", nullptr);
  EXPECT_TRUE(a.push({}).lines.empty());
}

TEST(TorchAnalytics, ReferencePointChangesWhilePlaying) {
  Analytics a("lines=belt:0,300,640,300");  // pointing right: below is forward
  // Box y 260..300 -> 270..310: the bottom crosses, the top never does.
  g_object_set(a.h->element, "reference-point", 2 /* top-center */, nullptr);
  Frame f;
  for (double y : {290.0, 295.0, 306.0, 310.0}) f = a.push({{1, 50, y}});
  EXPECT_EQ(f.lines["belt"].forward, 0u);
  gst_util_set_object_arg(G_OBJECT(a.h->element), "reference-point", "bottom-center");
  for (double y : {290.0, 295.0, 306.0, 310.0}) f = a.push({{2, 150, y}});
  EXPECT_EQ(f.lines["belt"].forward, 1u);
}

TEST(TorchAnalytics, BadValuesAreRefusedNamingTheError) {
  const std::vector<std::pair<std::string, std::string>> lines = {
      {"gate320,480,320,0", "expected name:x1,y1,x2,y2"},
      {"gate:320,480,320", "got 3 numbers"},
      {"gate:320,480,320,x", "'x' is not a number"},
      {"gate:1,1,1,1", "the two points are the same"},
      {"a b:1,2,3,4", "character other than"},
      {"a:1,2,3,4;a:5,6,7,8", "used twice"},
      {"a:1,2,3,4;;b:1,2,3,4", "entry 2 is empty"},
  };
  const std::vector<std::pair<std::string, std::string>> zones = {
      {"z:0,0,1,0", "needs at least 3 points"},
      {"z:0,0,1,0,1", "odd count"},
      {"z:0,0,1,1,2,2", "enclose no area"},
      {"z:0,0,1,0,nan,1", "'nan' is not a number"},
  };
  GstElement* e = gst_element_factory_make("torchanalytics", nullptr);
  ASSERT_NE(e, nullptr);
  g_object_set(e, "lines", "ok:1,2,3,4", "zones", "ok:0,0,1,0,1,1", nullptr);
  for (const auto& [prop, cases] :
       std::vector<std::pair<const char*, decltype(lines)>>{{"lines", lines}, {"zones", zones}}) {
    for (const auto& [value, part] : cases) {
      WarningCatcher w;
      g_object_set(e, prop, value.c_str(), nullptr);
      ASSERT_EQ(w.messages().size(), 1u) << value;
      EXPECT_NE(w.messages()[0].find(std::string("refused ") + prop), std::string::npos);
      EXPECT_NE(w.messages()[0].find(part), std::string::npos) << w.messages()[0];
      gchar* kept = nullptr;
      g_object_get(e, prop, &kept, nullptr);
      EXPECT_STREQ(kept, std::string(prop) == "lines" ? "ok:1,2,3,4" : "ok:0,0,1,0,1,1");
      g_free(kept);
    }
  }
  gst_object_unref(e);
}

TEST(TorchAnalytics, BadConfigFileFailsStartNamingFileAndField) {
  const std::string bad = testing::TempDir() + "bad-analytics.json";
  std::ofstream(bad) << R"({"zones": [{"name": "z", "points": [[0,0],[1,1]]}]})";
  for (const auto& [path, part] : std::vector<std::pair<std::string, std::string>>{
           {bad, bad + ": zones[0].points: needs at least 3 points"},
           {testing::TempDir() + "missing.json", "missing.json"},
           {testing::TempDir(), "not a regular file"}}) {
    GstElement* e = gst_element_factory_make("torchanalytics", nullptr);
    g_object_set(e, "config", path.c_str(), nullptr);
    const StartResult r = try_start(e);
    EXPECT_EQ(r.ret, GST_STATE_CHANGE_FAILURE) << path;
    EXPECT_TRUE(r.error.set);
    EXPECT_NE(r.error.message.find(part), std::string::npos) << r.error.message;
    gst_object_unref(e);
  }
}

TEST(TorchAnalytics, BadConfigFileWhilePlayingIsRefused) {
  const std::string good = testing::TempDir() + "good-analytics.json";
  std::ofstream(good) << R"({"lines": [{"name": "gate", "points": [[320,480],[320,0]]}]})";
  Analytics a("config=" + good);
  a.walk(1, {300, 340});
  WarningCatcher w;
  g_object_set(a.h->element, "config", (testing::TempDir() + "nope.json").c_str(), nullptr);
  ASSERT_EQ(w.messages().size(), 1u);
  EXPECT_NE(w.messages()[0].find("nope.json"), std::string::npos) << w.messages()[0];
  EXPECT_EQ(a.push({}).lines["gate"].forward, 1u);  // the file in use stays
}

TEST(TorchAnalytics, NameInPropertyAndFileWarnsAndKeepsThePrevious) {
  const std::string file = testing::TempDir() + "dup-analytics.json";
  std::ofstream(file) << R"({"lines": [{"name": "gate", "points": [[100,480],[100,0]]}]})";
  Analytics a("lines=gate:320,480,320,0");
  a.walk(1, {300, 340});
  g_object_set(a.h->element, "config", file.c_str(), nullptr);
  const Frame f = a.push({});
  EXPECT_EQ(f.lines.size(), 1u);
  EXPECT_EQ(f.lines.at("gate").forward, 1u);
  GstMessage* w = wait_element_message(a.bus, "warning");
  ASSERT_NE(w, nullptr);
  GError* err = nullptr;
  gst_message_parse_warning(w, &err, nullptr);
  EXPECT_NE(std::string(err->message).find("'gate' is in both"), std::string::npos) << err->message;
  g_error_free(err);
  gst_message_unref(w);
}

namespace {

std::vector<nlohmann::json> json_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// A launch line around torchanalytics, fed scripted frames.
struct Chain {
  GstHarness* h;
  int n = 0;
  explicit Chain(const std::string& line) : h(gst_harness_new_parse(line.c_str())) {
    gst_harness_set_src_caps_str(h, kCaps);
  }
  ~Chain() { gst_harness_teardown(h); }
  void push(const std::vector<Obj>& objs) {
    GstBuffer* out = gst_harness_push_and_pull(h, frame(n++, objs));
    EXPECT_NE(out, nullptr);
    if (out) gst_buffer_unref(out);
  }
  void stop() { gst_element_set_state(h->element, GST_STATE_NULL); }
};

}  // namespace

TEST(TorchAnalytics, JsonLinesCarryCountsEventsAndZones) {
  const std::string path = testing::TempDir() + "analytics.jsonl";
  {
    Chain c(
        "torchanalytics lines=gate:320,480,320,0 zones=right:320,0,640,0,640,480,320,480 "
        "hysteresis=0 ! torchmetaconvert location=" +
        path);
    for (double x : {300.0, 340.0, 360.0}) c.push({{1, x, 300}});
    c.stop();
  }
  const auto lines = json_lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["analytics"], nlohmann::json::parse(R"({"lines": {"gate": {"forward": 0,
      "backward": 0, "by_class": {}}}, "zones": {"right": {"inside": 0, "entered": 0,
      "exited": 0}}})"));
  EXPECT_EQ(lines[0]["detections"][0]["zones"], nlohmann::json::array());
  const auto& a = lines[1]["analytics"];
  EXPECT_EQ(a["lines"]["gate"]["forward"], 1);
  EXPECT_EQ(a["lines"]["gate"]["by_class"]["part"]["forward"], 1);
  EXPECT_EQ(a["zones"]["right"], nlohmann::json::parse(R"({"inside": 1, "entered": 1,
      "exited": 0})"));
  ASSERT_EQ(a["events"].size(), 2u);
  EXPECT_EQ(a["events"][0]["event"], "crossing");
  EXPECT_EQ(a["events"][0]["direction"], "forward");
  EXPECT_EQ(a["events"][0]["pts"], kFrame);
  EXPECT_EQ(a["events"][1]["event"], "zone-entered");
  EXPECT_EQ(lines[1]["detections"][0]["zones"], nlohmann::json({"right"}));
  EXPECT_FALSE(lines[2]["analytics"].contains("events"));
  EXPECT_EQ(lines[2]["analytics"]["lines"]["gate"]["forward"], 1);
}

// torchpublish mode=events sends only the frames with a crossing, entry or exit.
TEST(TorchAnalytics, PublishEventsModeSendsCrossingsOnly) {
  Broker broker;
  ASSERT_TRUE(broker.start());
  Subscriber sub(broker.port(), "gate");
  ASSERT_TRUE(sub.wait_subscribed());
  Chain c("torchanalytics lines=gate:320,480,320,0 ! torchpublish name=pub port=" +
          std::to_string(broker.port()) + " topic=gate reconnect-delay-max=1 mode=events");
  for (double x : {280.0, 300.0, 340.0, 360.0, 340.0, 300.0, 280.0}) c.push({{1, x, 300}});
  // Before stopping: the client connects in the background.
  ASSERT_TRUE(sub.wait_for(2));
  c.stop();
  const auto msgs = sub.messages();
  ASSERT_EQ(msgs.size(), 2u);
  const auto first = nlohmann::json::parse(msgs[0]), second = nlohmann::json::parse(msgs[1]);
  EXPECT_EQ(first["frame"], 2);
  EXPECT_EQ(first["analytics"]["events"][0]["direction"], "forward");
  EXPECT_EQ(second["frame"], 5);
  EXPECT_EQ(second["analytics"]["events"][0]["direction"], "backward");
}

// torchoverlay draws the lines and zones (white on a black outline) and
// their counts as text rows at the top left.
TEST(TorchAnalytics, OverlayDrawsLinesZonesAndCounts) {
  GstHarness* h = gst_harness_new_parse(
      "torchanalytics lines=gate:320,480,320,0 zones=bay:100,300,200,300,200,400,100,400 ! "
      "torchoverlay");
  gst_harness_set_src_caps_str(h, kCaps);
  GstBuffer* in = frame(0, {});
  gst_buffer_memset(in, 0, 0, kW * kH);
  GstBuffer* out = gst_harness_push_and_pull(h, in);
  ASSERT_NE(out, nullptr);
  GstMapInfo m;
  ASSERT_TRUE(gst_buffer_map(out, &m, GST_MAP_READ));
  auto at = [&](int x, int y) { return int(m.data[y * kW + x]); };
  EXPECT_GT(at(320, 240), 200);  // the gate
  EXPECT_GT(at(100, 350), 200);  // the zone's left edge
  EXPECT_GT(at(150, 400), 200);  // its bottom edge
  EXPECT_EQ(at(400, 240), 0);    // elsewhere untouched
  EXPECT_EQ(at(150, 350), 0);    // inside the zone too
  int bright = 0;                // the counts' text rows, top left
  for (int y = 0; y < 30; ++y)
    for (int x = 0; x < 200; ++x) bright += at(x, y) > 200;
  EXPECT_GT(bright, 50);
  gst_buffer_unmap(out, &m);
  gst_buffer_unref(out);
  gst_harness_teardown(h);
}

// The read-only `counts` property: each stream's latest counts, for an
// application that does not probe the frames (the server).
TEST(TorchAnalytics, CountsPropertyHoldsEachStreamsLatest) {
  Analytics a("lines=gate:320,480,320,0");
  auto streams = [&] {
    GstStructure* s = nullptr;
    g_object_get(a.h->element, "counts", &s, nullptr);
    EXPECT_NE(s, nullptr);
    std::map<std::string, guint64> forward;  // stream -> gate forward
    const GValue* arr = s ? gst_structure_get_value(s, "streams") : nullptr;
    for (guint i = 0; arr && i < gst_value_array_get_size(arr); ++i) {
      const GstStructure* st = nth(arr, i);
      EXPECT_FALSE(gst_structure_has_field(st, "events"));
      forward[gst_structure_get_string(st, "stream-id")] =
          u64(nth(gst_structure_get_value(st, "lines"), 0), "forward");
    }
    if (s) gst_structure_free(s);
    return forward;
  };
  EXPECT_TRUE(streams().empty());
  EXPECT_TRUE(gst_harness_push_event(a.h, gst_event_new_stream_start("cam-a")));
  a.walk(1, {300, 340});
  EXPECT_TRUE(gst_harness_push_event(a.h, gst_event_new_stream_start("cam-b")));
  a.walk(1, {300});
  EXPECT_EQ(streams(), (std::map<std::string, guint64>{{"cam-a", 1}, {"cam-b", 0}}));
}
