// torchinfer-server's lines and zones (docs/server.md): a camera on the demo
// clip with a gate at x = 320 counts the clip's 12 parts that cross it once
// each, all one direction, through GET /streams/{id} and /metrics (promtool
// clean); PUT /streams/{id}/analytics changes the lines and zones of a
// running camera without restarting it (frames keep flowing, numbered on);
// every class of bad request. One server for the suite.
#include <gtest/gtest.h>

#include "server_process.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

const std::string kToken = "analytics-token-0123";

// The demo clip's part classes: the detector's defect boxes are tracked
// too, and the gate counts parts.
const json kGate = {
    {{"name", "gate"}, {"points", {{320, 480}, {320, 0}}}, {"classes", {"bracket", "washer"}}}};

const json kZoneAll = {{{"name", "all"}, {"points", {{0, 0}, {640, 0}, {640, 480}, {0, 480}}}}};

class ServerAnalytics : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({{"max_body_bytes", 4096},
                                 {"streams",
                                  {{{"id", "gated"},
                                    {"uri", clip_uri()},
                                    {"loop", false},
                                    {"track", true},
                                    {"lines", kGate}},
                                   {{"id", "live"}, {"uri", clip_uri()}, {"track", true}},
                                   {{"id", "plain"}, {"uri", clip_uri()}}}}},
                                kToken);
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(server_->ready()) << server_->child().err(); }

  HttpReply put(const std::string& id, const std::string& body, const std::string& token = kToken) {
    return http_.request("PUT", server_->url("/streams/" + id + "/analytics"), body, token);
  }
  json stream(const std::string& id) { return server_->stream(http_, id); }
  void expect_refused(const HttpReply& r, int status, const std::string& field,
                      const std::string& words) {
    EXPECT_EQ(r.status, status) << r.body;
    const json j = r.json();
    ASSERT_TRUE(j.is_object()) << r.body;
    if (!field.empty()) EXPECT_EQ(j.value("field", ""), field) << r.body;
    EXPECT_NE(j.value("error", "").find(words), std::string::npos) << r.body;
  }

  static ServerProcess* server_;
  Http http_;
};

ServerProcess* ServerAnalytics::server_ = nullptr;

std::uint64_t series(const std::string& text, const std::string& name) {
  const std::size_t at = text.find("\n" + name + " ");
  EXPECT_NE(at, std::string::npos) << name;
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + name.size() + 2));
}

}  // namespace

// Parts travel left to right: from the left-hand side of P1 (320,480) ->
// P2 (320,0) to its right, forward (the documented gate, drawn bottom-up).
// Truth: 12 of the 13 parts cross x = 320 (7 brackets, 5 washers); the
// 13th never reaches it.
TEST_F(ServerAnalytics, GateOnTheClipCountsTwelvePartsOnceThroughRestAndMetrics) {
  ASSERT_TRUE(eventually([&] { return stream("gated").value("state", "") == "ended"; }, 120))
      << stream("gated") << server_->child().err();
  const json s = stream("gated");
  EXPECT_TRUE(frames_add_up(counts_of(s), Settled::kYes));
  EXPECT_EQ(s["analytics"]["lines"]["gate"],
            json::parse(R"({"forward": 12, "backward": 0, "by_class": {
                              "bracket": {"forward": 7, "backward": 0},
                              "washer": {"forward": 5, "backward": 0}}})"))
      << s["analytics"];
  EXPECT_EQ(s["config"]["lines"], kGate);
  const HttpReply a = http_.get(server_->url("/streams/gated/analytics"));
  ASSERT_EQ(a.status, 200);
  EXPECT_EQ(a.json()["analytics"], s["analytics"]);
  EXPECT_EQ(a.json()["lines"], kGate);

  const HttpReply m = http_.get(server_->url("/metrics"), kToken);
  ASSERT_EQ(m.status, 200);
  const std::string l =
      "torchinfer_line_crossings_total{stream=\"gated\",model=\"parts\",line=\"gate\"";
  EXPECT_EQ(series(m.body, l + ",direction=\"forward\",class=\"bracket\"}"), 7u);
  EXPECT_EQ(series(m.body, l + ",direction=\"forward\",class=\"washer\"}"), 5u);
  EXPECT_EQ(series(m.body, l + ",direction=\"backward\",class=\"bracket\"}"), 0u);
  EXPECT_EQ(series(m.body, l + ",direction=\"backward\",class=\"washer\"}"), 0u);
  const std::string path = server_->dir() + "/metrics.txt";
  std::ofstream(path) << m.body;
  const Result check = run({"sh", "-c", "promtool check metrics < '" + path + "'"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(check.out + check.err, "");
}

// A line kept (same name, points, classes) keeps its counts; a removed one
// is gone; a new one starts at 0 (c lies where no part passes); zones too;
// the pipeline is never restarted: frames flow on, numbered without a gap
// in the camera's JSON lines, the state stays running.
TEST_F(ServerAnalytics, PutChangesLinesAndZonesOnTheRunningCamera) {
  ASSERT_TRUE(eventually([&] { return stream("live")["frames"]["out"] > 0; }, 120));
  HttpReply r = put("live", R"({"lines": "a:320,0,320,480;b:100,0,100,480"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["lines"].size(), 2u);
  EXPECT_EQ(r.json()["zones"], json::array());
  // A part crosses a within a few seconds of the looped clip.
  ASSERT_TRUE(eventually(
      [&] {
        const json l = stream("live")["analytics"]["lines"];
        return l.contains("a") && l.contains("b") && l["a"]["backward"] > 0;
      },
      60))
      << stream("live")["analytics"];
  const std::uint64_t a_before = stream("live")["analytics"]["lines"]["a"]["backward"];
  const std::uint64_t out_before = stream("live")["frames"]["out"];

  r = put("live", json({{"lines", "a:320,0,320,480;c:630,0,630,10"}, {"zones", kZoneAll}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(eventually(
      [&] {
        const json a = stream("live")["analytics"];
        return a["lines"].contains("c") && !a["lines"].contains("b") && a["zones"].contains("all");
      },
      30))
      << stream("live")["analytics"];
  // Some more frames with the new layout.
  ASSERT_TRUE(eventually([&] { return stream("live")["frames"]["out"] > out_before + 60; }, 60));
  const json s = stream("live");
  EXPECT_EQ(s["state"], "running");
  EXPECT_GE(s["analytics"]["lines"]["a"]["backward"].get<std::uint64_t>(), a_before);
  EXPECT_EQ(s["analytics"]["lines"]["c"],
            json::parse(R"({"forward": 0, "backward": 0, "by_class": {}})"));
  EXPECT_EQ(s["config"]["lines"].size(), 2u);
  EXPECT_EQ(s["config"]["zones"][0]["name"], "all");
  // Every part on the belt is inside a zone covering the frame.
  ASSERT_TRUE(
      eventually([&] { return stream("live")["analytics"]["zones"]["all"]["entered"] > 0; }, 30));

  // Clearing: no lines, no zones.
  r = put("live", "{}");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(eventually(
      [&] {
        const json a = stream("live")["analytics"];
        return a["lines"].empty() && a["zones"].empty();
      },
      30))
      << stream("live")["analytics"];
  EXPECT_FALSE(stream("live")["config"].contains("lines"));
  std::size_t n = 0;
  EXPECT_TRUE(no_frame_lost(server_->out_dir() + "/live.jsonl", &n));
  EXPECT_GT(n, out_before);
}

TEST_F(ServerAnalytics, BadRequestsAreRefusedNamingTheField) {
  expect_refused(put("nosuch", R"({"lines": "a:0,0,1,1"})"), 404, "", "no stream 'nosuch'");
  expect_refused(put("plain", R"({"lines": "a:0,0,1,1"})"), 409, "track",
                 "lines and zones count tracked objects");
  expect_refused(put("live", R"({"lines": 5})"), 400, "lines", "must be a string");
  expect_refused(put("live", R"({"lines": "a:1,2,3"})"), 400, "lines", "got 3 numbers");
  expect_refused(put("live", R"({"gates": "a:0,0,1,1"})"), 400, "gates", "unknown field");
  expect_refused(put("live", R"({"zones": [{"name": "z", "points": [[0,0],[5,5]]}]})"), 400,
                 "zones", "zones[0].points: needs at least 3 points, got 2");
  expect_refused(put("live", R"({"zones": "z:0,0,5,5,10,10"})"), 400, "zones",
                 "the points enclose no area");
  expect_refused(put("live", R"({"lines": [{"name": "g", "points": [[0,0],[1,1]], "x": 1}]})"), 400,
                 "lines", "unknown field 'x'");
  expect_refused(put("live", "[1, 2]"), 400, "(body)", "must be a JSON object");
  expect_refused(put("live", "{\"lines\": "), 400, "", "request body");
  expect_refused(put("live", std::string(20, '[') + std::string(20, ']')), 400, "",
                 "nested deeper than");
  std::string big = R"({"lines": ")";
  for (int i = 0; big.size() < 5000; ++i) big += "l" + std::to_string(i) + ":0,0,1,1;";
  expect_refused(put("live", big + "\"}"), 413, "", "larger than max_body_bytes");
  expect_refused(put("live", R"({"lines": "a:0,0,1,1"})", ""), 401, "", "bearer token");
  const HttpReply post =
      http_.request("POST", server_->url("/streams/live/analytics"), "{}", kToken);
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.headers.count("Allow") ? post.headers.at("Allow") : "", "GET, PUT");
  // A new camera with lines and no tracking.
  expect_refused(
      http_.request("POST", server_->url("/streams"),
                    json({{"id", "x"}, {"uri", clip_uri()}, {"lines", "g:0,0,1,1"}}).dump(),
                    kToken),
      400, "lines", "set \"track\": true");
  // None of that changed the camera's layout.
  EXPECT_FALSE(stream("live")["config"].contains("lines"));
  EXPECT_EQ(stream("plain")["analytics"], json(nullptr));
}

// A camera added over REST takes its lines like one of the config file.
TEST_F(ServerAnalytics, PostedCameraTakesItsLines) {
  const json body = {{"id", "posted"},
                     {"uri", clip_uri()},
                     {"track", true},
                     {"lines", "gate:320,0,320,480"},
                     {"zones", kZoneAll}};
  const HttpReply r = http_.request("POST", server_->url("/streams"), body.dump(), kToken);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json()["config"]["lines"],
            json::parse(R"([{"name": "gate", "points": [[320, 0], [320, 480]]}])"));
  EXPECT_EQ(r.json()["config"]["zones"][0]["name"], "all");
  ASSERT_TRUE(eventually(
      [&] {
        const json a = stream("posted")["analytics"];
        return a.is_object() && a["lines"].contains("gate") && a["zones"].contains("all");
      },
      120))
      << stream("posted");
  EXPECT_EQ(http_.request("DELETE", server_->url("/streams/posted"), "", kToken).status, 200);
}

// The layout file cannot be written (a folder stands in its place): 500
// naming it, and the camera keeps its lines.
TEST_F(ServerAnalytics, UnwritableLayoutIsAnErrorAndTheOldLayoutStays) {
  ASSERT_EQ(put("live", R"({"lines": "keep:320,0,320,480"})").status, 200);
  const std::string file = server_->out_dir() + "/live.analytics.json";
  ASSERT_EQ(g_remove(file.c_str()), 0);
  ASSERT_EQ(g_mkdir((file + "/").c_str(), 0755), 0);
  const HttpReply r = put("live", R"({"lines": "other:100,0,100,480"})");
  g_rmdir(file.c_str());
  expect_refused(r, 500, "", "cannot write the lines and zones to " + file);
  EXPECT_EQ(stream("live")["config"]["lines"][0]["name"], "keep");
  ASSERT_TRUE(eventually(
      [&] {
        const json l = stream("live")["analytics"]["lines"];
        return l.contains("keep") && !l.contains("other");
      },
      30));
  ASSERT_EQ(put("live", "{}").status, 200);
}
