// torchinfer-server's REST API as a client sees it: every endpoint, every
// class of bad request, a failing camera, /metrics through promtool, and the
// drain at SIGTERM. One server (two looped cameras on the demo clip) for the
// whole suite: the model loads once.
#include <gtest/gtest.h>
#include <signal.h>

#include <opencv2/imgcodecs.hpp>

#include <algorithm>

#include "../common/test_paths.h"
#include "common/cpu_set.h"
#include "common/sysinfo.h"
#include "raw_http.h"
#include "server_process.h"

using nlohmann::json;
using namespace torchinfer::test;
using torchinfer::kSkipReasons;
using torchinfer::SkipReason;

namespace {

const std::string kToken = "0123456789abcdef";

// The suite's model runs in two lanes where the machine has two cores: the
// holder and every camera's torchinfer must then agree on it.
int suite_lanes() {
  return std::min(2, torchinfer::physical_cores(torchinfer::allowed_cpus()));
}

class ServerApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess(
        {{"max_streams", 4},
         {"max_body_bytes", 2048},
         {"models",
          {{{"id", "parts"}, {"path", detector()}, {"batch_size", 4}, {"lanes", suite_lanes()}}}},
         {"streams",
          {{{"id", "cam0"}, {"uri", clip_uri()}, {"confidence_threshold", 0.3}, {"restream", true}},
           {{"id", "cam1"}, {"uri", clip_uri()}, {"inference_interval", 2}, {"track", true}}}}},
        kToken);
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(server_->ready()) << server_->child().err();
    // Both cameras deliver frames before any test looks at them.
    ASSERT_TRUE(eventually(
        [&] {
          for (const char* id : {"cam0", "cam1"}) {
            const json s = server_->stream(http_, id);
            if (s.is_null() || s["state"] != "running" || s["frames"]["out"] < 1) return false;
          }
          return true;
        },
        120))
        << server_->child().err();
    // Cameras removed by an earlier test have stopped: they hold places
    // under max_streams until then.
    ASSERT_TRUE(eventually(
        [&] {
          return http_.get(server_->url("/healthz")).json().value("stopping_streams", 0) == 0;
        },
        60));
  }

  HttpReply post(const std::string& body, const std::string& token = kToken) {
    return http_.request("POST", server_->url("/streams"), body, token);
  }
  // A refused request: the status, and the field named in the reply.
  void expect_refused(const HttpReply& r, int status, const std::string& field,
                      const std::string& words) {
    EXPECT_EQ(r.status, status) << r.body;
    const json j = r.json();
    ASSERT_TRUE(j.is_object()) << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    if (field.empty())
      EXPECT_FALSE(j.contains("field")) << r.body;
    else
      EXPECT_EQ(j.value("field", ""), field) << r.body;
    EXPECT_NE(j.value("error", "").find(words), std::string::npos) << r.body;
  }
  // Cameras not removed (removed ones are listed as stopping until gone).
  std::size_t stream_count() {
    std::size_t n = 0;
    const json list = http_.get(server_->url("/streams")).json();
    for (const auto& s : list["streams"]) n += s["state"] != "stopping";
    return n;
  }

  static ServerProcess* server_;
  Http http_;
};
ServerProcess* ServerApi::server_ = nullptr;

}  // namespace

TEST_F(ServerApi, Healthz) {
  const HttpReply r = http_.get(server_->url("/healthz"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(
      r.json(),
      json({{"status", "ok"}, {"streams", 2}, {"failed_streams", 0}, {"stopping_streams", 0}}));
}

TEST_F(ServerApi, ListAndGetStreams) {
  const HttpReply r = http_.get(server_->url("/streams"));
  ASSERT_EQ(r.status, 200);
  const json j = r.json();
  EXPECT_EQ(j["max_streams"], 4);
  ASSERT_EQ(j["streams"].size(), 2u);
  EXPECT_EQ(j["streams"][0]["id"], "cam0");
  EXPECT_EQ(j["streams"][1]["id"], "cam1");
  const json s = server_->stream(http_, "cam1");
  EXPECT_EQ(s["uri"], clip_uri());
  EXPECT_EQ(s["model"], "parts");
  EXPECT_EQ(s["state"], "running");
  EXPECT_TRUE(s["last_error"].is_null());
  EXPECT_GE(s["frames"]["in"], s["frames"]["out"]);
  EXPECT_GE(s["frames"]["inferred"], 1);
  EXPECT_EQ(s["frames"]["dropped"], 0);  // a file is never live: torchinfer blocks, never drops
  EXPECT_TRUE(frames_add_up(counts_of(s)));
  // cam1 infers every 2nd frame: the others are skipped for that reason.
  EXPECT_GE(s["frames"]["skipped_by"]["interval"], 1) << s;
  EXPECT_EQ(s["frames"]["skipped"], s["frames"]["skipped_by"]["interval"]) << s;
  EXPECT_TRUE(frames_add_up(counts_of(server_->stream(http_, "cam0"))));
  EXPECT_GT(s["latency_ms"]["p99"].get<double>(), 0);
  EXPECT_GE(s["latency_ms"]["p99"], s["latency_ms"]["p50"]);
  EXPECT_EQ(s["reconnects"], 0);
  EXPECT_EQ(s["config"]["inference_interval"], 2);
  EXPECT_EQ(s["config"]["track"], true);
  EXPECT_EQ(server_->stream(http_, "cam0")["config"]["confidence_threshold"], 0.3);
  // The detector finds parts on the clip: brackets and washers at least.
  ASSERT_TRUE(eventually(
      [&] {
        const json d = server_->stream(http_, "cam0")["detections"];
        return d.contains("bracket") && d.contains("washer");
      },
      60));
}

TEST_F(ServerApi, UnknownResources) {
  expect_refused(http_.get(server_->url("/streams/nope")), 404, "", "no stream 'nope'");
  expect_refused(http_.get(server_->url("/streams/nope/snapshot.jpg")), 404, "", "no stream");
  expect_refused(http_.request("DELETE", server_->url("/streams/nope"), "", kToken), 404, "",
                 "no stream 'nope'");
  expect_refused(http_.get(server_->url("/nothing")), 404, "", "no such resource");
  expect_refused(http_.get(server_->url("/streams/cam0/other")), 404, "", "no such resource");
  expect_refused(http_.get(server_->url("/streams/a/b/c")), 404, "", "no such resource");
}

TEST_F(ServerApi, MethodsNotAllowed) {
  HttpReply r = http_.request("PUT", server_->url("/streams"), "{}", kToken);
  expect_refused(r, 405, "", "PUT is not allowed");
  EXPECT_EQ(r.headers["Allow"], "GET, POST");
  r = http_.request("POST", server_->url("/streams/cam0"), "{}", kToken);
  expect_refused(r, 405, "", "POST is not allowed");
  EXPECT_EQ(r.headers["Allow"], "GET, DELETE");
  expect_refused(http_.request("DELETE", server_->url("/metrics"), "", kToken), 405, "", "DELETE");
}

TEST_F(ServerApi, Snapshot) {
  HttpReply r = http_.get(server_->url("/streams/cam0/snapshot.jpg"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "image/jpeg");
  EXPECT_EQ(r.headers["Cache-Control"], "no-store");
  const cv::Mat img =
      cv::imdecode(std::vector<unsigned char>(r.body.begin(), r.body.end()), cv::IMREAD_COLOR);
  ASSERT_FALSE(img.empty());
  EXPECT_EQ(img.cols, 640);
  EXPECT_EQ(img.rows, 480);
}

TEST_F(ServerApi, MetricsNeedTheTokenAndPassPromtool) {
  HttpReply r = http_.get(server_->url("/metrics"));
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.headers["WWW-Authenticate"], "Bearer");
  EXPECT_EQ(http_.get(server_->url("/metrics"), "wrong").status, 401);
  r = http_.get(server_->url("/metrics"), kToken);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain");
  for (const char* series :
       {"torchinfer_stream_frames_in_total{stream=\"cam0\",model=\"parts\"} ",
        "torchinfer_stream_frames_inferred_total{stream=\"cam1\",model=\"parts\"} ",
        "torchinfer_stream_state{stream=\"cam0\",model=\"parts\",state=\"running\"} 1",
        "torchinfer_stream_latency_seconds{stream=\"cam0\",model=\"parts\",quantile=\"0.99\"} ",
        "torchinfer_stream_detections_total{stream=\"cam0\",model=\"parts\",class=\"bracket\"} ",
        "torchinfer_model_load_seconds{model=\"parts\"} ",
        "torchinfer_model_loaded{model=\"parts\"} 1", "torchinfer_model_streams{model=\"parts\"} 2",
        "torchinfer_stream_restream_clients{stream=\"cam0\",model=\"parts\"} 0",
        "torchinfer_stream_restream_frames_dropped_total{stream=\"cam0\",model=\"parts\"} 0",
        "process_cpu_seconds_total ", "process_resident_memory_bytes ", "process_open_fds "})
    EXPECT_NE(r.body.find(series), std::string::npos) << series << "\n" << r.body;
  // The counters add up in the metrics as well (one camera's figures are
  // read at one moment).
  auto value = [&](const std::string& series) -> std::uint64_t {
    const std::size_t at = r.body.find("\n" + series + " ");
    EXPECT_NE(at, std::string::npos) << series;
    return at == std::string::npos ? 0 : std::stoull(r.body.substr(at + series.size() + 2));
  };
  const std::string cam0 = "{stream=\"cam0\",model=\"parts\"";
  FrameCounts c;
  c.in = value("torchinfer_stream_frames_in_total" + cam0 + "}");
  c.inferred = value("torchinfer_stream_frames_inferred_total" + cam0 + "}");
  for (std::size_t k = 0; k < kSkipReasons; ++k) {
    c.skipped_by[k] = value("torchinfer_stream_frames_skipped_total" + cam0 + ",reason=\"" +
                            to_string(static_cast<SkipReason>(k)) + "\"}");
    c.skipped += c.skipped_by[k];
  }
  c.dropped = value("torchinfer_stream_frames_dropped_total" + cam0 + "}");
  c.in_flight = value("torchinfer_stream_frames_in_flight" + cam0 + "}");
  // The bound is not a metric: the status gives it (constant for the run).
  c.in_flight_limit = server_->stream(http_, "cam0")["frames"]["in_flight_limit"];
  c.out = value("torchinfer_stream_frames_out_total" + cam0 + "}");
  c.out_trails = true;
  EXPECT_TRUE(frames_add_up(c));
  const std::string path = server_->dir() + "/metrics.txt";
  std::ofstream(path) << r.body;
  const Result check = run({"sh", "-c", "promtool check metrics < '" + path + "'"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  // promtool prints lint problems (e.g. a counter without _total) and still exits 0.
  EXPECT_EQ(check.out + check.err, "");
}

TEST_F(ServerApi, MutatingCallsNeedTheToken) {
  const std::string body = json({{"id", "cam7"}, {"uri", clip_uri()}}).dump();
  HttpReply r = post(body, "");
  expect_refused(r, 401, "", "bearer token");
  EXPECT_EQ(post(body, "wrong").status, 401);
  expect_refused(http_.request("DELETE", server_->url("/streams/cam0"), "", ""), 401, "",
                 "bearer token");
  EXPECT_EQ(stream_count(), 2u);
  // Reading needs none.
  EXPECT_EQ(http_.get(server_->url("/streams")).status, 200);
  EXPECT_EQ(http_.get(server_->url("/")).status, 200);
}

TEST_F(ServerApi, AddThenRemove) {
  HttpReply r = post(json({{"id", "cam2"}, {"uri", clip_uri()}, {"iou_threshold", 0.5}}).dump());
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.headers["Location"], "/streams/cam2");
  EXPECT_EQ(r.json()["id"], "cam2");
  EXPECT_EQ(r.json()["config"]["iou_threshold"], 0.5);
  ASSERT_TRUE(eventually(
      [&] {
        const json s = server_->stream(http_, "cam2");
        return s["state"] == "running" && s["frames"]["out"] > 5;
      },
      60));
  EXPECT_EQ(stream_count(), 3u);
  r = http_.request("DELETE", server_->url("/streams/cam2"), "", kToken);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["id"], "cam2");
  EXPECT_EQ(r.json()["state"], "stopping");
  EXPECT_EQ(stream_count(), 2u);
  // Listed as stopping until its pipeline has drained and stopped, then gone.
  ASSERT_TRUE(
      eventually([&] { return http_.get(server_->url("/streams/cam2")).status == 404; }, 30));
  EXPECT_EQ(http_.request("DELETE", server_->url("/streams/cam2"), "", kToken).status, 404);
  EXPECT_EQ(http_.get(server_->url("/streams")).json()["streams"].size(), 2u);
  // The same id can come back.
  ASSERT_EQ(post(json({{"id", "cam2"}, {"uri", clip_uri()}}).dump()).status, 201);
  EXPECT_EQ(http_.request("DELETE", server_->url("/streams/cam2"), "", kToken).status, 200);
}

// Issue 24, item 2: on a looped file the gap between frames in and frames
// inferred is the frames inside torchinfer (a non-live file runs ahead of
// the synced sink and keeps the queue full), shown as in flight. A clip
// played once ends with each of its 300 frames inferred and out.
TEST_F(ServerApi, AClipPlayedOnceEndsWithEveryFrameAccountedFor) {
  ASSERT_EQ(post(json({{"id", "once"}, {"uri", clip_uri()}, {"loop", false}}).dump()).status, 201);
  ASSERT_TRUE(eventually(
      [&] {
        const json s = server_->stream(http_, "once");
        EXPECT_TRUE(frames_add_up(counts_of(s))) << "while it runs";
        return s["state"] == "ended";
      },
      120))
      << server_->stream(http_, "once");
  const json s = server_->stream(http_, "once");
  EXPECT_TRUE(frames_add_up(counts_of(s), Settled::kYes));
  EXPECT_EQ(s["frames"]["in"], 300) << s;
  EXPECT_EQ(s["frames"]["inferred"], 300) << s;
  EXPECT_EQ(s["frames"]["out"], 300) << s;
  EXPECT_EQ(http_.request("DELETE", server_->url("/streams/once"), "", kToken).status, 200);
}

TEST_F(ServerApi, BadBodiesAre400WithTheField) {
  const std::string uri = clip_uri();
  expect_refused(post("{\"id\": \"x\", "), 400, "", "not valid JSON");
  expect_refused(post(""), 400, "", "not valid JSON");
  expect_refused(post("[1,2]"), 400, "(body)", "must be a JSON object");
  expect_refused(post(json({{"id", "x"}, {"uri", uri}, {"colour", "red"}}).dump()), 400, "colour",
                 "unknown field");
  expect_refused(post(json({{"id", 7}, {"uri", uri}}).dump()), 400, "id", "must be a string");
  expect_refused(post(json({{"id", "x"}, {"uri", uri}, {"inference_interval", "2"}}).dump()), 400,
                 "inference_interval", "must be an integer");
  expect_refused(post(json({{"id", "x"}, {"uri", uri}, {"confidence_threshold", 2}}).dump()), 400,
                 "confidence_threshold", "out of range");
  expect_refused(post(json({{"id", "x"}, {"uri", uri}, {"roi", {{"x", 0}}}}).dump()), 400,
                 "roi.width", "missing");
  expect_refused(post(json({{"uri", uri}}).dump()), 400, "id", "missing");
  expect_refused(post(json({{"id", "../etc"}, {"uri", uri}}).dump()), 400, "id", "not a stream id");
  expect_refused(post(json({{"id", "x"}, {"uri", uri}, {"model", "other"}}).dump()), 400, "model",
                 "no model 'other'");
  expect_refused(post(json({{"id", "x"}, {"uri", uri}, {"mqtt_topic", "a/b"}}).dump()), 400,
                 "mqtt_topic", "no MQTT broker");
  expect_refused(post(json({{"id", "x"}, {"uri", uri}, {"restream", "yes"}}).dump()), 400,
                 "restream", "must be true or false");
  std::string deep = std::string(20, '[') + std::string(20, ']');
  expect_refused(post(deep), 400, "", "nested deeper");
  EXPECT_EQ(stream_count(), 2u);
}

TEST_F(ServerApi, NoPipelineInjection) {
  for (const std::string& uri :
       {std::string("videotestsrc ! fakesink"), std::string("filesrc location=/etc/passwd"),
        clip_uri() + " ! fakesink", std::string("v4l2:///dev/video0 ! x"),
        std::string("rtsp://host/a\" ! fakesink"), std::string("http://example.com/x.mkv")})
    expect_refused(post(json({{"id", "x"}, {"uri", uri}}).dump()), 400, "uri", "");
  EXPECT_EQ(stream_count(), 2u);
}

TEST_F(ServerApi, BodySizeAndStreamLimits) {
  // Declared too large: refused from the headers, before the body is read.
  std::string big = json({{"id", "x"}, {"uri", clip_uri() + std::string(3000, 'a')}}).dump();
  const HttpReply declared = post(big);
  expect_refused(declared, 413, "", ") is larger than max_body_bytes (2048)");
  EXPECT_NE(declared.body.find("(Content-Length " + std::to_string(big.size()) + ")"),
            std::string::npos)
      << declared.body;
  // Without a declared length (chunked), counted as it arrives.
  expect_refused(
      http_.request("POST", server_->url("/streams"), big, kToken, "application/json", true), 413,
      "", "the body is larger than max_body_bytes (2048)");
  expect_refused(post(json({{"id", "cam0"}, {"uri", clip_uri()}}).dump()), 409, "id",
                 "exists already");
  // max_streams is 4: two more fit, the fifth is refused.
  ASSERT_EQ(post(json({{"id", "f2"}, {"uri", "file:///nonexistent/a.mkv"}}).dump()).status, 201);
  ASSERT_EQ(post(json({{"id", "f3"}, {"uri", "file:///nonexistent/b.mkv"}}).dump()).status, 201);
  expect_refused(post(json({{"id", "f4"}, {"uri", clip_uri()}}).dump()), 409, "",
                 "max_streams (4)");
  EXPECT_EQ(http_.request("DELETE", server_->url("/streams/f2"), "", kToken).status, 200);
  EXPECT_EQ(http_.request("DELETE", server_->url("/streams/f3"), "", kToken).status, 200);
  EXPECT_EQ(stream_count(), 2u);
}

TEST_F(ServerApi, AFailingCameraIsReportedAndHarmsNoOther) {
  const json before = server_->stream(http_, "cam0");
  ASSERT_EQ(post(json({{"id", "broken"}, {"uri", "file:///nonexistent/clip.mkv"}}).dump()).status,
            201);
  ASSERT_TRUE(
      eventually([&] { return server_->stream(http_, "broken")["state"] == "failed"; }, 30));
  const json s = server_->stream(http_, "broken");
  EXPECT_NE(s["last_error"].get<std::string>().find("/nonexistent/clip.mkv"), std::string::npos)
      << s;
  EXPECT_EQ(http_.get(server_->url("/healthz")).json()["failed_streams"], 1);
  const std::string m = http_.get(server_->url("/metrics"), kToken).body;
  EXPECT_NE(m.find("torchinfer_stream_state{stream=\"broken\",model=\"parts\",state=\"failed\"} 1"),
            std::string::npos);
  EXPECT_NE(m.find("torchinfer_stream_errors_total{stream=\"broken\",model=\"parts\"} "),
            std::string::npos);
  expect_refused(http_.get(server_->url("/streams/broken/snapshot.jpg")), 503, "", "no frame yet");
  // The others go on.
  ASSERT_TRUE(eventually(
      [&] { return server_->stream(http_, "cam0")["frames"]["out"] > before["frames"]["out"]; },
      30));
  EXPECT_EQ(server_->stream(http_, "cam0")["state"], "running");
  EXPECT_EQ(http_.request("DELETE", server_->url("/streams/broken"), "", kToken).status, 200);
}

TEST_F(ServerApi, ModelsAndDashboardPage) {
  const json models = http_.get(server_->url("/models")).json();
  ASSERT_EQ(models["models"].size(), 1u);
  EXPECT_EQ(models["models"][0]["id"], "parts");
  EXPECT_EQ(models["models"][0]["batch_size"], 4);
  EXPECT_EQ(models["models"][0]["lanes"], suite_lanes());
  EXPECT_EQ(models["models"][0]["lanes_active"], suite_lanes());
  EXPECT_GT(models["models"][0]["load_seconds"].get<double>(), 0);
  const HttpReply page = http_.get(server_->url("/"));
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html");
  EXPECT_NE(page.body.find("<title>torchinfer-server</title>"), std::string::npos);
}

// lanes 0 (automatic) was reported as 0: lanes_active is what the load
// chose. With threads 2 the rule (model/lanes_rule.h) takes lanes of
// floor(sqrt(2)) = 1 thread, as many as the cores allow: suite_lanes().
TEST(ServerModels, AutomaticLanesReportTheCountTheLoadChose) {
  const json model = {
      {"id", "auto"}, {"path", detector()}, {"batch_size", 2}, {"threads", 2}, {"lanes", 0}};
  ServerProcess server(json{{"models", json::array({model})}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  const json models = http.get(server.url("/models")).json();
  ASSERT_EQ(models["models"].size(), 1u) << models;
  EXPECT_EQ(models["models"][0]["lanes"], 0) << models;
  EXPECT_EQ(models["models"][0]["lanes_active"], suite_lanes()) << models;
  server.child().signal(SIGTERM);
  EXPECT_EQ(server.child().wait_exit(30), 0) << server.child().err();
}

// Results that cannot be trusted are counted, not served in silence:
// nan_detector's boxes are NaN where the frame's centre is darker than
// mid-grey (the line clip's belt), and torchinfer counts those frames
// invalid; the status and the metric show the count of the camera's JSON
// lines marked "valid": false, exactly (about 240 of the 300: some frames'
// centre lies within 1 % of mid-grey, so the figure is the app's own
// preprocessing's, counted here line by line).
TEST(ServerResults, FramesWithNanOutputsAreCountedInTheStatusAndTheMetrics) {
  const json model = {{"id", "nan"}, {"path", model_path("nan_detector.pt")}, {"batch_size", 2}};
  const json stream = {{"id", "cam"}, {"uri", clip_uri()}, {"model", "nan"}, {"loop", false}};
  ServerProcess server(json{{"models", json::array({model})}, {"streams", json::array({stream})}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  ASSERT_TRUE(eventually([&] { return server.stream(http, "cam")["state"] == "ended"; }, 120))
      << server.stream(http, "cam") << server.child().err();
  const json frames = server.stream(http, "cam")["frames"];
  EXPECT_TRUE(frames_add_up(counts_of(server.stream(http, "cam")), Settled::kYes));
  EXPECT_EQ(frames["inferred"], 300) << frames;
  // The camera's JSON lines, once all 300 are written: how many are marked.
  std::uint64_t written = 0, marked = 0;
  const auto count = [&] {
    written = marked = 0;
    std::ifstream in(server.out_dir() + "/cam.jsonl");
    for (std::string l; std::getline(in, l); ++written) {
      const json j = json::parse(l, nullptr, false);
      marked += j.is_object() && !j.value("valid", true);
    }
    return written == 300;
  };
  ASSERT_TRUE(eventually(count, 10)) << written << " lines";
  EXPECT_GT(marked, 0u);
  EXPECT_LT(marked, 300u) << "the clip has bright frames too";
  EXPECT_EQ(frames["invalid"].get<std::uint64_t>(), marked) << frames;
  EXPECT_EQ(frames["saturated"], 0) << frames;
  const std::string m = http.get(server.url("/metrics")).body;
  const std::string series =
      "\ntorchinfer_stream_frames_invalid_total{stream=\"cam\",model=\"nan\"} ";
  const std::size_t at = m.find(series);
  ASSERT_NE(at, std::string::npos) << m;
  EXPECT_EQ(std::stoull(m.substr(at + series.size())), frames["invalid"].get<std::uint64_t>());
  EXPECT_NE(m.find("\ntorchinfer_stream_frames_saturated_total{stream=\"cam\",model=\"nan\"} 0\n"),
            std::string::npos);
  server.child().signal(SIGTERM);
  EXPECT_EQ(server.child().wait_exit(30), 0) << server.child().err();
}

// libsoup hands the path percent-decoded: any bytes. Echoed escaped, in
// valid JSON (it was a 500 "json.exception.type_error.316").
TEST_F(ServerApi, InvalidUtf8InThePathIsEscaped) {
  HttpReply r = http_.get(server_->url("/streams/%FF%FE"));
  expect_refused(r, 404, "", "no stream '\\xFF\\xFE'");
  r = http_.get(server_->url("/streams/%FF%FE/snapshot.jpg"));
  expect_refused(r, 404, "", "no stream '\\xFF\\xFE'");
  r = http_.request("DELETE", server_->url("/streams/%C3%28"), "", kToken);
  expect_refused(r, 404, "", "no stream '\\xC3('");
  expect_refused(http_.get(server_->url("/%FF")), 404, "", "no such resource: /\\xFF");
  r = http_.request("PUT", server_->url("/streams/a%FFb"), "", kToken);
  expect_refused(r, 405, "", "PUT is not allowed on /streams/a\\xFFb");
  // Valid UTF-8 is quoted as it is.
  expect_refused(http_.get(server_->url("/streams/caf%C3%A9")), 404, "", "no stream 'café'");
  expect_refused(post("{\"id\": \"\xFF\"}"), 400, "", "not valid JSON");
  EXPECT_EQ(stream_count(), 2u);
}

// Headers only, no body: the answer must come without waiting for it.
TEST_F(ServerApi, ADeclaredTooLargeBodyIsRefusedBeforeItIsSent) {
  const std::string reply =
      raw_exchange(server_->port(),
                   "POST /streams HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kToken +
                       "\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n",
                   30);
  EXPECT_EQ(reply.rfind("HTTP/1.1 413 Request Entity Too Large\r\n", 0), 0u) << reply;
  EXPECT_NE(reply.find("{\"error\":\"the body (Content-Length 100000000) is larger than "
                       "max_body_bytes (2048)\"}"),
            std::string::npos)
      << reply;
}

// Which length would a proxy in front have used? Refused, never guessed.
TEST_F(ServerApi, ConflictingContentLengthsAreRefused) {
  const std::string body = json({{"id", "cl"}, {"uri", clip_uri()}}).dump();
  const std::string head = "POST /streams HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + kToken +
                           "\r\nContent-Type: application/json\r\n";
  std::string reply = raw_exchange(server_->port(),
                                   head + "Content-Length: " + std::to_string(body.size()) +
                                       "\r\nContent-Length: " + std::to_string(body.size() + 9) +
                                       "\r\n\r\n" + body + "{\"x\": 1}",
                                   30);
  EXPECT_EQ(reply.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << reply;
  EXPECT_NE(
      reply.find("\"request: conflicting Content-Length headers (" + std::to_string(body.size()) +
                 " and " + std::to_string(body.size() + 9) + "); send one\""),
      std::string::npos)
      << reply;
  reply = raw_exchange(server_->port(),
                       head + "Content-Length: " + std::to_string(body.size()) +
                           "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                       30);
  EXPECT_EQ(reply.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << reply;
  EXPECT_EQ(stream_count(), 2u);
  EXPECT_EQ(http_.get(server_->url("/streams/cl")).status, 404);
}

// Last (gtest runs tests in order within a file): SIGTERM drains every
// camera into its JSON file and exits 0.
TEST_F(ServerApi, ZzSigtermDrains) {
  server_->child().signal(SIGTERM);
  EXPECT_EQ(server_->child().wait_exit(30), 0) << server_->child().err();
  EXPECT_EQ(server_->child().count_err("drain timeout"), 0) << server_->child().err();
  EXPECT_EQ(server_->child().count_err("torchinfer-server: stopped"), 1);
  for (const char* id : {"cam0", "cam1"}) {
    std::size_t n = 0;
    EXPECT_TRUE(no_frame_lost(server_->out_dir() + "/" + id + ".jsonl", &n));
    EXPECT_GT(n, 10u);
  }
}
