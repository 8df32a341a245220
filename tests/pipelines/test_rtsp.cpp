// RTSP server and reconnecting client, as processes on 127.0.0.1: a stream
// analysed end to end, a server killed and restarted, a frozen server, and
// what each wrong input does.
#include <glib.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "process.h"
#include "test_paths.h"

using nlohmann::json;
using torchinfer::test::Child;
using torchinfer::test::free_port;
using Clock = std::chrono::steady_clock;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string server_bin() {
  return env("TORCHINFER_RTSP_SERVER");
}
std::string client_bin() {
  return env("TORCHINFER_RTSP_CLIENT");
}
std::string demo_model() {
  return env("TORCHINFER_SOURCE_ROOT") + "/models/demo/parts_classifier.pt";
}

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string url(int port, const std::string& mount = "/stream") {
  return "rtsp://127.0.0.1:" + std::to_string(port) + mount;
}

// The default server: live test pattern, classified and labelled, H.264.
std::unique_ptr<Child> start_server(int port, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{server_bin(), "--port", std::to_string(port), "--model",
                                demo_model()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto s = std::make_unique<Child>(argv);
  EXPECT_GE(s->wait_line_index(false, "serving " + url(port), 30), 0) << s->err();
  return s;
}

std::unique_ptr<Child> start_client(int port, std::vector<std::string> extra) {
  std::vector<std::string> argv{client_bin(), "--url", url(port), "--model",
                                torchinfer::test::model_path("tiny_classifier.pt")};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<Child>(argv);
}

// Every line is a torchinfer result, numbered without a gap: one analysis
// pipeline (and one loaded model) saw every frame, across reconnects. The
// stream is live, so torchinfer may skip inference on a frame when the model
// is busy (drop-policy auto); such a frame carries an earlier frame's result,
// or none if no result existed yet.
void expect_results(const std::vector<std::string>& lines) {
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(json::parse(lines[0])["inferred"].get<bool>()) << lines[0];
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const json j = json::parse(lines[i]);
    EXPECT_EQ(j["frame"], i);
    EXPECT_EQ(j["width"], 320);
    EXPECT_EQ(j["height"], 240);
    if (!j.contains("inferred")) continue;  // skipped before the first result
    EXPECT_EQ(j["model"], torchinfer::test::model_path("tiny_classifier.pt"));
    ASSERT_EQ(j["classification"].size(), 3u) << lines[i];
    EXPECT_TRUE(j["classification"][0]["label"].is_string());
    if (!j["inferred"].get<bool>()) {
      EXPECT_LT(j["result_pts"], j["pts"]) << lines[i];
    }
  }
}

}  // namespace

TEST(Rtsp, StreamAnalysedEndToEnd) {
  const int port = free_port();
  auto server = start_server(port);
  auto client = start_client(port, {"--max-frames", "30"});
  EXPECT_EQ(client->wait_exit(60), 0) << client->err();
  const auto lines = client->out_lines();
  EXPECT_EQ(lines.size(), 30u);
  expect_results(lines);
  EXPECT_EQ(client->count_err("rtsp: streaming from " + url(port) + ", first frame after"), 1)
      << client->err();
  EXPECT_EQ(client->count_err("rtsp: 30 frames, 1 connection attempts, 0 losses, 0 stalls"), 1)
      << client->err();
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait_exit(20), 0) << server->err();
  EXPECT_EQ(server->count_err("server: stopped"), 1);
}

// The default analysis is built element by element: a model path with a
// quote and a space is a value, not launch syntax (it used to end the run
// with "bad analysis description").
TEST(Rtsp, AModelPathWithQuotesAndSpacesIsOnlyAValue) {
  const std::string dir =
      testing::TempDir() + "rtsp-" + std::to_string(getpid()) + "/it's \"a\" dir/";
  ASSERT_EQ(g_mkdir_with_parents(dir.c_str(), 0755), 0);
  for (const char* f : {"tiny_classifier.pt", "tiny_classifier.json", "tiny_classifier.labels"}) {
    gchar* bytes = nullptr;
    gsize size = 0;
    ASSERT_TRUE(
        g_file_get_contents(torchinfer::test::model_path(f).c_str(), &bytes, &size, nullptr));
    ASSERT_TRUE(g_file_set_contents((dir + f).c_str(), bytes, static_cast<gssize>(size), nullptr));
    g_free(bytes);
  }
  const int port = free_port();
  auto server = start_server(port);
  Child client({client_bin(), "--url", url(port), "--model", dir + "tiny_classifier.pt",
                "--max-frames", "5"});
  ASSERT_EQ(client.wait_exit(60), 0) << client.err();
  const auto lines = client.out_lines();
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(json::parse(lines[0])["model"], dir + "tiny_classifier.pt");
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait_exit(20), 0) << server->err();
}

TEST(Rtsp, ServerKilledAndRestartedAnalysisResumes) {
  const int port = free_port();
  auto server = start_server(port);
  auto client = start_client(port, {"--stall-timeout", "3"});
  ASSERT_TRUE(client->wait_lines(10, 60)) << client->err();
  server->signal(SIGKILL);
  const auto killed = Clock::now();
  EXPECT_EQ(server->wait_exit(10), -1);
  const std::size_t before = client->out_lines().size();
  // Generous waits (a hang, not a slow machine, fails): the order is what
  // is checked; how long is a figure (tests/bench/stop_latency.sh).
  EXPECT_GE(client->wait_line_index(true, "rtsp: lost " + url(port), 60), 0) << client->err();
  server = start_server(port);
  EXPECT_GE(
      client->wait_line_index(true, "watchdog: frames from " + url(port) + " resumed after", 60), 0)
      << client->err();
  ASSERT_TRUE(client->wait_lines(before + 10, 60)) << client->err();
  const double resumed_s = since(killed);
  std::cout << "[ measured ] kill -9 to 10 new results: " << resumed_s << " s\n";
  RecordProperty("resume_seconds", std::to_string(resumed_s));
  client->signal(SIGTERM);
  EXPECT_EQ(client->wait_exit(20), 0) << client->err();  // streaming when stopped
  expect_results(client->out_lines());
  EXPECT_GE(client->count_err("rtsp: reconnecting in 0.5 s"), 1) << client->err();
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait_exit(20), 0);
}

TEST(Rtsp, FrozenServerTriggersTheWatchdogThenResumes) {
  const int port = free_port();
  auto server = start_server(port);
  auto client = start_client(port, {"--stall-timeout", "2"});
  ASSERT_TRUE(client->wait_lines(5, 60)) << client->err();
  server->signal(SIGSTOP);
  const auto stopped = Clock::now();
  const std::string stall = "watchdog: no frames from " + url(port) + " for ";
  ASSERT_GE(client->wait_line_index(true, stall, 60), 0) << client->err();
  const double stall_s = since(stopped);
  std::cout << "[ measured ] SIGSTOP to watchdog message: " << stall_s << " s\n";
  RecordProperty("stall_seconds", std::to_string(stall_s));
  const std::string err = client->err();
  const double reported = std::stod(err.substr(err.find(stall) + stall.size()));
  // Never before the stall timeout; how late after it (the watchdog looks
  // every 0.1 s, a busy machine later) is a figure, not a check.
  EXPECT_GE(reported, 2.0);
  std::cout << "[ measured ] watchdog's reported stall: " << reported << " s\n";
  server->signal(SIGCONT);
  EXPECT_GE(client->wait_line_index(true, "resumed after", 60), 0) << client->err();
  const std::size_t n = client->out_lines().size();
  EXPECT_TRUE(client->wait_lines(n + 5, 60)) << client->err();
  client->signal(SIGINT);
  EXPECT_EQ(client->wait_exit(20), 0) << client->err();
  EXPECT_EQ(client->count_err("watchdog: no frames"), 1) << client->err();
  expect_results(client->out_lines());
}

// A served clip that ends: the client sees end of stream, reconnects, and
// the server starts the clip again for the new session.
TEST(Rtsp, EndOfStreamReconnectsAndAnyServedPipelineWorks) {
  const int port = free_port();
  Child server({server_bin(), "--port", std::to_string(port), "--pipeline",
                "videotestsrc is-live=true num-buffers=20 ! "
                "video/x-raw,format=I420,width=320,height=240,framerate=15/1 ! "
                "openh264enc gop-size=15 ! rtph264pay name=pay0 pt=96 config-interval=-1"});
  ASSERT_GE(server.wait_line_index(false, "serving " + url(port), 30), 0) << server.err();
  auto client = start_client(port, {"--max-frames", "45"});
  EXPECT_EQ(client->wait_exit(60), 0) << client->err();
  const auto lines = client->out_lines();
  EXPECT_EQ(lines.size(), 45u);
  expect_results(lines);
  EXPECT_GE(client->count_err("rtsp: lost " + url(port) + ": end of stream"), 2) << client->err();
  EXPECT_GE(client->count_err("rtsp: connecting to " + url(port) + " (attempt 3)"), 1);
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(20), 0) << server.err();
}

TEST(RtspErrors, NobodyListeningKeepsRetryingAndExitsThree) {
  const int port = free_port();
  auto client = start_client(port, {"--stall-timeout", "1", "--duration", "3"});
  EXPECT_EQ(client->wait_exit(30), 3) << client->err();
  EXPECT_TRUE(client->out_lines().empty());
  EXPECT_GE(client->count_err("rtsp: lost " + url(port) + ": error: "), 2) << client->err();
  EXPECT_GE(client->count_err("rtsp: connecting to " + url(port) + " (attempt 2)"), 1);
  EXPECT_EQ(client->count_err("watchdog: no frames from " + url(port) + " for 1."), 1)
      << client->err();
  EXPECT_EQ(client->count_err("rtsp: 0 frames"), 1);
}

TEST(RtspErrors, UnknownMountKeepsRetryingAndExitsThree) {
  const int port = free_port();
  auto server = start_server(port);
  Child client({client_bin(), "--url", url(port, "/nosuch"), "--model",
                torchinfer::test::model_path("tiny_classifier.pt"), "--duration", "2"});
  EXPECT_EQ(client.wait_exit(30), 3) << client.err();
  EXPECT_GE(client.count_err("rtsp: lost " + url(port, "/nosuch") + ": error: Not found"), 1)
      << client.err();
  EXPECT_TRUE(client.out_lines().empty());
}

// The server's default analysis is built element by element too: its
// model path with a quote and a space is a value (it used to end the start
// with "bad --pipeline").
TEST(Rtsp, AServedModelPathWithQuotesAndSpacesIsOnlyAValue) {
  const std::string dir =
      testing::TempDir() + "rtsp-server-" + std::to_string(getpid()) + "/it's \"a\" dir/";
  ASSERT_EQ(g_mkdir_with_parents(dir.c_str(), 0755), 0);
  const std::string demo = env("TORCHINFER_SOURCE_ROOT") + "/models/demo/";
  for (const char* f :
       {"parts_classifier.pt", "parts_classifier.json", "parts_classifier.labels"}) {
    gchar* bytes = nullptr;
    gsize size = 0;
    ASSERT_TRUE(g_file_get_contents((demo + f).c_str(), &bytes, &size, nullptr));
    ASSERT_TRUE(g_file_set_contents((dir + f).c_str(), bytes, static_cast<gssize>(size), nullptr));
    g_free(bytes);
  }
  const int port = free_port();
  Child server(
      {server_bin(), "--port", std::to_string(port), "--model", dir + "parts_classifier.pt"});
  ASSERT_GE(server.wait_line_index(false, "serving " + url(port), 30), 0) << server.err();
  auto client = start_client(port, {"--max-frames", "5"});
  ASSERT_EQ(client->wait_exit(60), 0) << client->err();
  EXPECT_EQ(client->out_lines().size(), 5u);
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(20), 0) << server.err();
  EXPECT_EQ(server.count_err("server: stream error"), 0) << server.err();
}

// A served model that does not load: the server says why, each client gets
// 503 and keeps retrying.
TEST(RtspErrors, ServedModelThatFailsIsReportedAndClientRetries) {
  const int port = free_port();
  const std::string bad = env("TORCHINFER_SOURCE_ROOT") + "/meson.build";
  Child server({server_bin(), "--port", std::to_string(port), "--model", bad});
  ASSERT_GE(server.wait_line_index(false, "serving " + url(port), 30), 0) << server.err();
  auto client = start_client(port, {"--duration", "2"});
  EXPECT_EQ(client->wait_exit(30), 3) << client->err();
  EXPECT_GE(client->count_err("rtsp: lost " + url(port) +
                              ": error: Unhandled error (Service Unavailable (503))"),
            2)
      << client->err();
  EXPECT_TRUE(client->out_lines().empty());
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(20), 0);
  EXPECT_GE(server.count_err("server: stream error from torchinfer"), 2) << server.err();
  EXPECT_GE(server.count_err("Model file '" + bad + "' is corrupt or not a TorchScript archive"), 2)
      << server.err();
}

TEST(RtspErrors, ClientRejectsBadInputBeforeConnecting) {
  const std::string model = torchinfer::test::model_path("tiny_classifier.pt");
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--url", "http://127.0.0.1/x"}, 2, "not an RTSP URL: 'http://127.0.0.1/x'"},
      {{}, 2, "usage: torchinfer-rtsp-client"},
      {{"--url", url(1), "--decode", "rtph264depay ! nosuchdecoder"},
       2,
       "bad decode description 'rtph264depay ! nosuchdecoder': no element \"nosuchdecoder\""},
      {{"--url", url(1), "--analysis", "torchinfer ! ! fakesink"}, 2, "bad analysis description"},
      {{"--url", url(1), "--stall-timeout", "0"}, 2, "--stall-timeout 0 is out of range"},
      // GLib's double options take nan/inf; none of them is a duration.
      {{"--url", url(1), "--stall-timeout", "nan"}, 2, "--stall-timeout nan is out of range"},
      {{"--url", url(1), "--max-backoff", "inf"}, 2, "--max-backoff inf is out of range"},
      {{"--url", url(1), "--max-backoff", "0.1"}, 2, "--max-backoff 0.1 is out of range"},
      {{"--url", url(1), "--latency", "-5"}, 2, "--latency -5 is out of range"},
      {{"--url", url(1), "--max-frames", "-1"}, 2, "--max-frames -1 is out of range"},
      {{"--url", url(1), "--duration", "-2"}, 2, "--duration -2 is out of range"},
      {{"--url", url(1), "--model", "/nonexistent/m.pt"},
       1,
       "error: analysis pipeline: Model file '/nonexistent/m.pt' not found"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv{client_bin()};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    if (std::find(argv.begin(), argv.end(), "--model") == argv.end()) {
      argv.push_back("--model");
      argv.push_back(model);
    }
    Child client(argv);
    EXPECT_EQ(client.wait_exit(30), c.code) << c.message << "\n" << client.err();
    EXPECT_EQ(client.count_err(c.message), 1) << client.err();
    EXPECT_EQ(client.count_err("rtsp: connecting"), 0) << client.err();
  }
}

TEST(RtspErrors, ServerRejectsBadInput) {
  const std::string port = std::to_string(free_port());
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--pipeline", "videotestsrc ! nosuchencoder ! rtph264pay name=pay0"},
       "bad --pipeline 'videotestsrc ! nosuchencoder ! rtph264pay name=pay0': no element "
       "\"nosuchencoder\""},
      {{"--pipeline", "videotestsrc ! openh264enc ! rtph264pay"},
       "--pipeline needs an RTP payloader named pay0"},
      {{"--model", "/nonexistent/m.pt"}, "error: model '/nonexistent/m.pt' not found"},
      {{"--mount", "stream"}, "--mount 'stream' must start with '/'"},
      {{"--port", "70000"}, "--port 70000 is out of range: give an integer from 0 to 65535"},
      {{"--port", "-1"}, "--port -1 is out of range"},
      {{"--width", "8"}, "--width 8 is out of range: give an integer from 16 to 8192"},
      {{"--height", "100000"}, "--height 100000 is out of range"},
      {{"--fps", "0"}, "--fps 0 is out of range"},
      {{"--fps", "-30"}, "--fps -30 is out of range"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv{server_bin(), "--port", port};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Child server(argv);
    EXPECT_EQ(server.wait_exit(30), 2) << server.err();
    EXPECT_EQ(server.count_err(c.message), 1) << server.err();
    EXPECT_TRUE(server.out_lines().empty());
  }
}

TEST(RtspErrors, ServerOnABusyPortExitsOne) {
  const int port = free_port();
  auto first = start_server(port);
  Child second({server_bin(), "--port", std::to_string(port), "--model", demo_model()});
  EXPECT_EQ(second.wait_exit(30), 1) << second.err();
  EXPECT_EQ(second.count_err("error: cannot listen on 127.0.0.1:" + std::to_string(port)), 1)
      << second.err();
}
