// A machine-vision camera's health beyond its connection (pipelines/server/core/
// camera_health.h): degraded and stalled from its counters and a clock, the
// series /metrics gives them, and an aravis:// URI with a query.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/core/camera_health.h"
#include "server/core/metrics_text.h"
#include "server/core/server_config.h"
#include "server/core/stream_health.h"

using nlohmann::json;
using namespace torchinfer::server;

namespace {

// 8 fps (times exact in binary) for `seconds` from `t`: the first
// `lost_of_10` of every 10 frames lost.
double feed(CameraHealthWindow& w, double t, double seconds, int lost_of_10,
            std::uint64_t* received, std::uint64_t* lost) {
  for (int i = 0; i < static_cast<int>(seconds * 8); ++i) {
    t += 0.125;
    (i % 10 < lost_of_10 ? *lost : *received) += 1;
    w.on_counts(t, *received, *lost);
  }
  return t;
}

}  // namespace

TEST(CameraHealthWindow, AllFramesArrivingIsOk) {
  CameraHealthWindow w;
  w.restart(0);
  std::uint64_t received = 0, lost = 0;
  const double t = feed(w, 0, 20, 0, &received, &lost);
  const CameraVerdict v = w.verdict(t, true);
  EXPECT_EQ(v.condition, CameraCondition::kOk);
  EXPECT_EQ(v.reason, "");
  EXPECT_EQ(v.window_lost, 0u);
  EXPECT_EQ(v.window_received, 80u);  // the last 10 s at 8 fps
  EXPECT_DOUBLE_EQ(v.lost_ratio, 0);
  EXPECT_DOUBLE_EQ(v.since_frame_s, 0);
}

TEST(CameraHealthWindow, ThreeOfTenLostIsDegradedWithTheRatio) {
  CameraHealthWindow w;
  w.restart(0);
  std::uint64_t received = 0, lost = 0;
  double t = feed(w, 0, 20, 3, &received, &lost);
  CameraVerdict v = w.verdict(t, true);
  EXPECT_EQ(v.condition, CameraCondition::kDegraded);
  EXPECT_EQ(v.window_lost, 24u);
  EXPECT_EQ(v.window_received, 56u);
  EXPECT_DOUBLE_EQ(v.lost_ratio, 0.3);
  EXPECT_EQ(v.reason, "30% of the frames lost in the last 10 s (24 of 80)");
  EXPECT_EQ(to_string(v.condition), std::string("degraded"));
  // One lost in ten is under the 20 % line; the window forgets the past.
  t = feed(w, t, 10.5, 1, &received, &lost);
  v = w.verdict(t, true);
  EXPECT_EQ(v.condition, CameraCondition::kOk) << v.reason;
  EXPECT_NEAR(v.lost_ratio, 0.1, 0.01);
}

TEST(CameraHealthWindow, TooFewFramesAreNoVerdict) {
  CameraHealthWindow w;
  w.restart(0);
  std::uint64_t received = 0, lost = 0;
  w.on_counts(0.5, received, lost);
  lost = 5;  // 5 of 9: over the line, but under the 10 frames a verdict needs
  received = 4;
  w.on_counts(1.0, received, lost);
  const CameraVerdict v = w.verdict(1.0, true);
  EXPECT_EQ(v.condition, CameraCondition::kOk);
  EXPECT_EQ(v.window_lost, 5u);
}

// Every frame broken (Aravis hands them on, incomplete): stalled, not
// merely degraded, once no complete frame came for stall_s.
TEST(CameraHealthWindow, OnlyBrokenFramesIsStalledAfterStallSeconds) {
  CameraHealthWindow w;
  w.restart(0);
  std::uint64_t received = 0, lost = 0;
  double t = feed(w, 0, 4, 0, &received, &lost);  // fine until t = 4
  t = feed(w, t, 1.875, 10, &received, &lost);    // then none complete
  CameraVerdict v = w.verdict(t, true);
  EXPECT_EQ(v.condition, CameraCondition::kDegraded) << v.reason;  // 1.875 s < 2 s
  EXPECT_DOUBLE_EQ(v.since_frame_s, 1.875);
  t = feed(w, t, 0.25, 10, &received, &lost);
  v = w.verdict(t, true);
  EXPECT_EQ(v.condition, CameraCondition::kStalled);
  EXPECT_DOUBLE_EQ(v.since_frame_s, 2.125);
  EXPECT_EQ(v.reason, "no complete frame for 2.1 s (17 frames lost in the last 10 s)");
  // A complete frame ends it.
  received++;
  w.on_counts(t + 0.125, received, lost);
  EXPECT_NE(w.verdict(t + 0.125, true).condition, CameraCondition::kStalled);
}

// Silence from a triggered camera is normal; a trigger that waits longer
// than stall_s for its frame is not.
TEST(CameraHealthWindow, ATriggeredCameraStallsOnlyWhileATriggerWaits) {
  CameraHealthWindow w;
  w.restart(0);
  w.on_counts(0, 0, 0);
  EXPECT_EQ(w.verdict(100, false).condition, CameraCondition::kOk);
  EXPECT_DOUBLE_EQ(w.verdict(100, false).since_frame_s, 0);
  w.on_trigger(100);
  w.on_trigger(101);  // the first unanswered one counts
  EXPECT_EQ(w.verdict(101.9, false).condition, CameraCondition::kOk);
  const CameraVerdict v = w.verdict(102.5, false);
  EXPECT_EQ(v.condition, CameraCondition::kStalled);
  EXPECT_DOUBLE_EQ(v.since_frame_s, 2.5);
  w.on_counts(103, 1, 0);  // its frame
  EXPECT_EQ(w.verdict(200, false).condition, CameraCondition::kOk);
}

TEST(CameraHealthWindow, ARestartForgetsTheWindowAndTheClock) {
  CameraHealthWindow w;
  w.restart(0);
  std::uint64_t received = 0, lost = 0;
  double t = feed(w, 0, 10, 5, &received, &lost);
  ASSERT_EQ(w.verdict(t, true).condition, CameraCondition::kDegraded);
  w.restart(t);
  w.on_counts(t, received, lost);
  const CameraVerdict v = w.verdict(t + 1, true);
  EXPECT_EQ(v.condition, CameraCondition::kOk);
  EXPECT_EQ(v.window_lost, 0u);
  EXPECT_DOUBLE_EQ(v.since_frame_s, 1);
}

TEST(CameraHealthMetrics, RatioSinceFrameAndTriggerFailuresPerCamera) {
  MetricsSnapshot m;
  StreamFigures cam, clip;
  cam.id = "gige";
  clip.id = "clip";
  cam.model = clip.model = "parts";
  cam.camera = true;
  cam.state = "stalled";
  cam.camera_lost_ratio = 0.25;
  cam.camera_since_frame_s = 3.5;
  cam.camera_trigger_failures = 4;
  m.streams = {cam, clip};
  const std::string t = render_prometheus(m);
  const std::string l = "{stream=\"gige\",model=\"parts\"";
  for (const std::string& line :
       std::vector<std::string>{"# TYPE torchinfer_camera_lost_ratio gauge",
                                "torchinfer_camera_lost_ratio" + l + "} 0.25",
                                "torchinfer_camera_seconds_since_frame" + l + "} 3.5",
                                "torchinfer_camera_trigger_failures_total" + l + "} 4",
                                "torchinfer_stream_state" + l + ",state=\"stalled\"} 1",
                                "torchinfer_stream_state" + l + ",state=\"degraded\"} 0",
                                "torchinfer_stream_state" + l + ",state=\"running\"} 0"})
    EXPECT_NE(t.find("\n" + line + "\n"), std::string::npos) << line << "\n" << t;
  EXPECT_EQ(t.find("torchinfer_camera_lost_ratio{stream=\"clip\""), std::string::npos);
}

// aravis://NAME?pixel_format=Mono12 once made "NAME?pixel_format=Mono12" the
// camera's name (never found); now it is refused naming the fields to use.
TEST(AravisUri, AQueryIsRefusedNamingTheFields) {
  const std::vector<ModelSpec> models = {{"parts", "m.pt"}};
  for (const char* uri : {"aravis://Basler-21234567?pixel_format=Mono12", "aravis://cam?",
                          "aravis://cam?trigger=software&exposure_us=100"}) {
    try {
      parse_stream_spec(json{{"id", "cam"}, {"uri", uri}}, models, MqttSpec{}, "streams[0]",
                        "server.json");
      ADD_FAILURE() << uri << " accepted";
    } catch (const torchinfer::FieldError& e) {
      EXPECT_EQ(e.field(), "streams[0].uri") << uri;
      const std::string what = e.what();
      for (const char* key :
           {"no query", "pixel_format", "exposure_us", "gain_db", "packet_size", "trigger", "%3F"})
        EXPECT_NE(what.find(key), std::string::npos) << key << " in " << what;
    }
  }
  // Percent-encoded, a '?' is part of a name.
  const StreamSpec s = parse_stream_spec(json{{"id", "cam"}, {"uri", "aravis://odd%3Fname"}},
                                         models, MqttSpec{}, "streams[0]", "server.json");
  EXPECT_EQ(s.camera.name, "odd?name");
}
