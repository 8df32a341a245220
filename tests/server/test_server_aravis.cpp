// Machine-vision cameras (aravis://) in torchinfer-server, against the real
// GigE Vision protocol: Aravis' fake camera on 127.0.0.1 (fake_camera.h).
// Bayer and Mono8 straight into torchinfer, a busy camera, lost packets
// counted as lost frames, a camera that vanishes and comes back, software
// triggers (one trigger, one result), and the REST checks of the camera
// fields.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include "fake_camera.h"
#include "server_process.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

std::uint64_t u64(const json& j) {
  return j.is_number_unsigned() ? j.get<std::uint64_t>() : 0;
}

std::size_t lines_in(const std::string& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n++;
  return n;
}

std::string error_field(const HttpReply& r) {
  const json j = r.json();
  return j.is_object() && j.contains("field") && j["field"].is_string()
             ? j["field"].get<std::string>()
             : "";
}

json stream_of(Http& http, const ServerProcess& s, const std::string& id) {
  return s.stream(http, id);
}

bool inferred_at_least(Http& http, const ServerProcess& s, const std::string& id, std::uint64_t n) {
  const json j = stream_of(http, s, id);
  return !j.is_null() && u64(j["frames"]["inferred"]) >= n;
}

}  // namespace

// A Bayer camera's frames go into torchinfer as they come; a second stream
// on the same camera finds it busy and waits, and gets it (in Mono8) when
// the first stream goes.
TEST(ServerAravis, BayerAndMono8GoStraightInAndABusyCameraWaits) {
  FakeCamera fake("TIBAYER");
  ASSERT_TRUE(fake.listening()) << kNoFakeCamera;
  ServerProcess server(
      json{{"streams", {{{"id", "bayer"}, {"uri", fake.uri()}, {"pixel_format", "BayerRG8"}}}}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  ASSERT_TRUE(eventually([&] { return inferred_at_least(http, server, "bayer", 10); }, 60))
      << stream_of(http, server, "bayer") << server.child().err();
  json s = stream_of(http, server, "bayer");
  EXPECT_EQ(s["state"], "running");
  EXPECT_EQ(s["camera"]["pixel_format"], "BayerRG8");
  EXPECT_EQ(s["camera"]["width"], 512);
  EXPECT_EQ(s["camera"]["height"], 512);
  EXPECT_EQ(s["config"]["pixel_format"], "BayerRG8");
  EXPECT_TRUE(frames_add_up(counts_of(s)));
  // The snapshot is demosaicked when asked for: a colour frame of the camera's size.
  const HttpReply snap = http.get(server.url("/streams/bayer/snapshot.jpg"));
  ASSERT_EQ(snap.status, 200) << snap.body;
  const cv::Mat img = cv::imdecode(std::vector<std::uint8_t>(snap.body.begin(), snap.body.end()),
                                   cv::IMREAD_UNCHANGED);
  EXPECT_EQ(img.cols, 512);
  EXPECT_EQ(img.rows, 512);
  EXPECT_EQ(img.channels(), 3);

  const HttpReply add =
      http.request("POST", server.url("/streams"),
                   json{{"id", "mono"}, {"uri", fake.uri()}, {"pixel_format", "Mono8"}}.dump());
  ASSERT_EQ(add.status, 201) << add.body;
  ASSERT_TRUE(eventually(
      [&] {
        const json m = stream_of(http, server, "mono");
        return m["state"] == "reconnecting" && m["last_error"].is_string();
      },
      30))
      << stream_of(http, server, "mono");
  const std::string busy = stream_of(http, server, "mono")["last_error"];
  EXPECT_NE(busy.find("camera '" + fake.name() + "' is busy"), std::string::npos) << busy;
  EXPECT_EQ(u64(stream_of(http, server, "mono")["frames"]["in"]), 0u);

  ASSERT_EQ(http.request("DELETE", server.url("/streams/bayer")).status, 200);
  ASSERT_TRUE(eventually([&] { return inferred_at_least(http, server, "mono", 10); }, 60))
      << stream_of(http, server, "mono");
  s = stream_of(http, server, "mono");
  EXPECT_EQ(s["state"], "running");
  EXPECT_EQ(s["camera"]["pixel_format"], "Mono8");
  EXPECT_EQ(s["reconnects"], 1);  // the wait for the busy camera was one outage
  EXPECT_TRUE(frames_add_up(counts_of(s)));
}

// Packets left out by the camera make incomplete frames: counted, per
// reason, equal to Aravis' own statistics, and never in torchinfer. The
// camera then vanishes (reconnecting, naming it) and comes back (running).
TEST(ServerAravis, LostFramesAreCountedAndAVanishedCameraComesBack) {
  FakeCamera fake("TILOSS", /*lost_per_thousand=*/5);
  ASSERT_TRUE(fake.listening()) << kNoFakeCamera;
  ServerProcess server(
      json{{"streams", {{{"id", "line"}, {"uri", fake.uri()}, {"pixel_format", "Mono8"}}}}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  ASSERT_TRUE(eventually(
      [&] {
        const json c = stream_of(http, server, "line")["camera"];
        return c.is_object() && u64(c["frames"]["received"]) >= 25 &&
               u64(c["frames"]["incomplete"]) >= 3;
      },
      60))
      << stream_of(http, server, "line");

  fake.kill();
  ASSERT_TRUE(
      eventually([&] { return stream_of(http, server, "line")["state"] == "reconnecting"; }, 20))
      << stream_of(http, server, "line");
  json s = stream_of(http, server, "line");
  const std::string why = s["last_error"];
  EXPECT_NE(why.find("camera '" + fake.name() + "'"), std::string::npos) << why;
  EXPECT_EQ(s["disconnects"], 1);
  // Nothing arrives any more: every frame received is in torchinfer's counts.
  ASSERT_TRUE(eventually(
      [&] {
        s = stream_of(http, server, "line");
        return u64(s["frames"]["in_flight"]) == 0 &&
               u64(s["frames"]["out"]) ==
                   u64(s["frames"]["inferred"]) + u64(s["frames"]["skipped"]);
      },
      20))
      << s;
  const json c = s["camera"];
  const std::uint64_t received = u64(c["frames"]["received"]);
  const std::uint64_t overflow = u64(c["frames"]["overflow"]);
  EXPECT_EQ(received, u64(c["aravis"]["completed"])) << c;
  EXPECT_EQ(u64(c["frames"]["incomplete"]), u64(c["aravis"]["failures"])) << c;
  // Aravis counts each gap in the ids once, however many frames it spans.
  EXPECT_GE(u64(c["frames"]["missing"]), u64(c["aravis"]["missing_frames"])) << c;
  EXPECT_EQ(u64(c["frames"]["missing"]) == 0, u64(c["aravis"]["missing_frames"]) == 0) << c;
  EXPECT_EQ(u64(c["frames"]["lost"]),
            u64(c["frames"]["incomplete"]) + u64(c["frames"]["missing"]) + overflow);
  EXPECT_GT(u64(c["packets"]["missing"]), 0u) << c;
  EXPECT_EQ(u64(s["frames"]["in"]), received - overflow) << s;
  EXPECT_TRUE(frames_add_up(counts_of(s), Settled::kYes));
  EXPECT_TRUE(eventually(
      [&] { return lines_in(server.out_dir() + "/line.jsonl") == u64(s["frames"]["out"]); }, 10));
  const std::string metrics = http.get(server.url("/metrics")).body;
  std::ofstream(server.dir() + "/metrics.txt") << metrics;
  const Result check =
      run({"sh", "-c", "promtool check metrics < '" + server.dir() + "/metrics.txt'"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(check.out + check.err, "");  // lint problems too
  EXPECT_NE(metrics.find("torchinfer_camera_frames_lost_total{stream=\"line\",model=\"parts\","
                         "reason=\"incomplete\"} " +
                         std::to_string(u64(c["frames"]["incomplete"])) + "\n"),
            std::string::npos)
      << metrics;

  fake.set_lost(0);
  fake.start();
  ASSERT_TRUE(fake.listening());
  ASSERT_TRUE(eventually(
      [&] {
        const json now = stream_of(http, server, "line");
        return now["state"] == "running" && now["reconnects"] == 1 &&
               u64(now["camera"]["frames"]["received"]) >= received + 10;
      },
      30))
      << stream_of(http, server, "line");
}

// A camera waiting for its trigger is idle, not failed; each trigger gives
// one frame and one result.
TEST(ServerAravis, EachSoftwareTriggerGivesOneResult) {
  FakeCamera fake("TITRIG");
  ASSERT_TRUE(fake.listening()) << kNoFakeCamera;
  ServerProcess server(json{{"streams",
                             {{{"id", "trig"},
                               {"uri", fake.uri()},
                               {"pixel_format", "Mono8"},
                               {"trigger", "software"}}}}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  ASSERT_TRUE(eventually(
      [&] {
        const json s = stream_of(http, server, "trig");
        return s["state"] == "running" && s["camera"]["acquiring"] == true;
      },
      60))
      << stream_of(http, server, "trig");
  // Longer than aravissrc's 2 s frame timeout: still running, no frame.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  json s = stream_of(http, server, "trig");
  EXPECT_EQ(s["state"], "running") << s;
  EXPECT_EQ(u64(s["camera"]["frames"]["received"]), 0u) << s;

  constexpr std::uint64_t kTriggers = 5;
  for (std::uint64_t i = 1; i <= kTriggers; ++i) {
    const HttpReply r = http.request("POST", server.url("/streams/trig/trigger"));
    ASSERT_EQ(r.status, 202) << r.body;
    ASSERT_TRUE(
        eventually([&] { return u64(stream_of(http, server, "trig")["frames"]["out"]) >= i; }, 20))
        << "trigger " << i << ": " << stream_of(http, server, "trig");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // nothing more may come
  s = stream_of(http, server, "trig");
  EXPECT_EQ(u64(s["camera"]["triggers"]), kTriggers) << s;
  EXPECT_EQ(u64(s["camera"]["frames"]["received"]), kTriggers) << s;
  EXPECT_EQ(u64(s["frames"]["inferred"]), kTriggers) << s;
  EXPECT_EQ(u64(s["frames"]["out"]), kTriggers) << s;
  EXPECT_EQ(u64(s["camera"]["last_result"]["frame"]), kTriggers) << s;
  EXPECT_TRUE(s["camera"]["last_result"]["detections"].is_array()) << s;
  EXPECT_TRUE(frames_add_up(counts_of(s), Settled::kYes));
  EXPECT_TRUE(
      eventually([&] { return lines_in(server.out_dir() + "/trig.jsonl") == kTriggers; }, 10));
}

// One server for the request checks (no camera at start): each start loads
// the model, and these tests add what they need by POST.
class ServerAravisRequests : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess(json{{"streams", json::array()}}); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static ServerProcess* server_;
};
ServerProcess* ServerAravisRequests::server_ = nullptr;

// What the camera itself refuses (a format it does not offer, an exposure
// outside its range, a trigger line it lacks) fails the stream, naming it;
// a hardware-triggered camera waiting for its line is running, not failed.
TEST_F(ServerAravisRequests, SettingsTheCameraRefusesFailTheStreamNamingThem) {
  FakeCamera fake("TIREFUSE");
  ASSERT_TRUE(fake.listening()) << kNoFakeCamera;
  ServerProcess& server = *server_;
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  const std::pair<json, std::string> refused[] = {
      {{{"pixel_format", "Mono12"}},
       "pixel_format: the camera does not offer Mono12; it offers BayerBG8, BayerGB8, BayerGR8, "
       "BayerRG8, Mono8, RGB8, Mono16"},
      {{{"exposure_us", 5}}, "exposure_us: 5 is outside the camera's 10 to 10000000"},
      {{{"gain_db", 20}}, "gain_db: 20 is outside the camera's 0 to 10"},
      {{{"trigger", {{"mode", "hardware"}, {"line", "Line1"}}}},
       "trigger: the camera has no trigger source Line1; it has Line0, Software"},
  };
  int n = 0;
  for (const auto& [fields, why] : refused) {
    const std::string id = "r" + std::to_string(n++);
    json body = {{"id", id}, {"uri", fake.uri()}};
    body.update(fields);
    ASSERT_EQ(http.request("POST", server.url("/streams"), body.dump()).status, 201);
    ASSERT_TRUE(eventually([&] { return stream_of(http, server, id)["state"] == "failed"; }, 30))
        << stream_of(http, server, id);
    const std::string error = stream_of(http, server, id)["last_error"];
    EXPECT_NE(error.find("aravis: camera '" + fake.name() + "': " + why), std::string::npos)
        << error;
    // A failed stream lets go of the camera for the next one.
    ASSERT_EQ(http.request("DELETE", server.url("/streams/" + id)).status, 200);
  }
  const json line0 = {{"id", "hw"},
                      {"uri", fake.uri()},
                      {"pixel_format", "Mono8"},
                      {"trigger", {{"mode", "hardware"}, {"line", "Line0"}}}};
  ASSERT_EQ(http.request("POST", server.url("/streams"), line0.dump()).status, 201);
  ASSERT_TRUE(
      eventually([&] { return stream_of(http, server, "hw")["camera"]["acquiring"] == true; }, 30))
      << stream_of(http, server, "hw");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const json s = stream_of(http, server, "hw");
  EXPECT_EQ(s["state"], "running") << s;
  EXPECT_EQ(u64(s["camera"]["frames"]["received"]), 0u) << s;
  EXPECT_EQ(s["config"]["trigger"], json({{"mode", "hardware"}, {"line", "Line0"}}));
  const HttpReply r = http.request("POST", server.url("/streams/hw/trigger"));
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("hardware mode"), std::string::npos) << r.body;
  EXPECT_EQ(http.request("DELETE", server.url("/streams/hw")).status, 200);
}

// The camera fields are checked like every other: a 400 naming the field;
// a trigger where none applies is a 409; a camera nobody answers for is
// named with the cause.
TEST_F(ServerAravisRequests, BadCameraRequestsAreRefusedNamingTheField) {
  ServerProcess& server = *server_;
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  auto post = [&](const json& body) {
    return http.request("POST", server.url("/streams"), body.dump());
  };
  const std::string cam = "aravis://Aravis-Fake-TIGHOST";
  const std::pair<json, std::string> bad[] = {
      {{{"id", "a"}, {"uri", cam}, {"pixel_format", "YUV422_8"}}, "pixel_format"},
      {{{"id", "a"}, {"uri", cam}, {"exposure_us", -5}}, "exposure_us"},
      {{{"id", "a"}, {"uri", cam}, {"gain_db", "high"}}, "gain_db"},
      {{{"id", "a"}, {"uri", cam}, {"packet_size", 100}}, "packet_size"},
      {{{"id", "a"}, {"uri", cam}, {"trigger", "sometimes"}}, "trigger"},
      {{{"id", "a"}, {"uri", cam}, {"trigger", "hardware"}}, "trigger"},
      {{{"id", "a"}, {"uri", cam}, {"trigger", {{"mode", "hardware"}}}}, "trigger.line"},
      {{{"id", "a"}, {"uri", cam}, {"trigger", {{"mode", "software"}, {"line", "Line1"}}}},
       "trigger.line"},
      {{{"id", "a"}, {"uri", cam}, {"restream", true}}, "restream"},
      {{{"id", "a"}, {"uri", "aravis://"}}, "uri"},
      {{{"id", "a"}, {"uri", clip_uri()}, {"pixel_format", "Mono8"}}, "pixel_format"},
  };
  for (const auto& [body, field] : bad) {
    const HttpReply r = post(body);
    EXPECT_EQ(r.status, 400) << body << " -> " << r.body;
    EXPECT_EQ(error_field(r), field) << body << " -> " << r.body;
  }
  EXPECT_NE(post(bad[0].first).body.find("BayerRG8"), std::string::npos);  // says what works

  ASSERT_EQ(post({{"id", "ghost"}, {"uri", cam}}).status, 201);
  ASSERT_EQ(post({{"id", "waits"}, {"uri", cam}, {"trigger", "software"}}).status, 201);
  ASSERT_TRUE(
      eventually([&] { return stream_of(http, server, "ghost")["state"] == "reconnecting"; }, 30))
      << stream_of(http, server, "ghost");
  const std::string why = stream_of(http, server, "ghost")["last_error"];
  EXPECT_NE(why.find("camera 'Aravis-Fake-TIGHOST' not found"), std::string::npos) << why;

  HttpReply r = http.request("POST", server.url("/streams/ghost/trigger"));
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("free-run"), std::string::npos) << r.body;
  r = http.request("POST", server.url("/streams/waits/trigger"));
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_NE(r.body.find("not acquiring"), std::string::npos) << r.body;
  EXPECT_EQ(http.request("POST", server.url("/streams/nobody/trigger")).status, 404);
  EXPECT_EQ(http.get(server.url("/streams/ghost/trigger")).status, 405);
  ASSERT_EQ(post({{"id", "clip"}, {"uri", clip_uri()}}).status, 201);
  r = http.request("POST", server.url("/streams/clip/trigger"));
  EXPECT_EQ(r.status, 409) << r.body;
}
