// torchinfer-server against a hostile client and a hostile host (issue 24):
// a FIFO as a camera's file, a camera whose JSON reader hangs, fast
// add/remove cycles against max_streams, a removed id added again while it
// still drains, connections beyond max_connections and beyond the open
// files limit, a token file no header can carry.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <thread>

#include "raw_http.h"
#include "server_process.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

// The value of an unlabelled Prometheus series; -1 if absent.
long long metric(const std::string& text, const std::string& name) {
  const std::string key = "\n" + name + " ";
  const std::size_t p = text.find(key);
  return p == std::string::npos ? -1 : std::stoll(text.substr(p + key.size()));
}

HttpReply post(Http& http, const ServerProcess& s, const json& body) {
  return http.request("POST", s.url("/streams"), body.dump());
}

std::vector<std::string> states(Http& http, const ServerProcess& s) {
  std::vector<std::string> out;
  const json list = http.get(s.url("/streams")).json();
  for (const auto& x : list["streams"])
    out.push_back(x["id"].get<std::string>() + ":" + x["state"].get<std::string>());
  return out;
}

// A JSON consumer that stopped reading: a FIFO open for reading (so
// torchmetaconvert's open succeeds) and already full (so the camera's first
// line blocks in write(), and with it the streaming thread: no frame gets
// through, and the pipeline cannot stop until someone reads). drain() is
// that someone: it reads to the end, once the camera has closed it.
class StalledFifo {
 public:
  explicit StalledFifo(const std::string& path) : path_(path) {
    if (mkfifo(path.c_str(), 0600) != 0) return;
    reader_ = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    const int writer = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (reader_ < 0 || writer < 0) return;
    // Whole pages first, then bytes, until the pipe takes no more.
    const std::string page(4096, '#');
    for (std::size_t chunk : {page.size(), std::size_t{1}})
      for (ssize_t n; (n = write(writer, page.data(), chunk)) > 0;) filled_ += n;
    full_ = errno == EAGAIN;
    close(writer);
  }
  ~StalledFifo() {
    if (reader_ >= 0) close(reader_);
  }
  bool full() const { return full_ && filled_ > 0; }
  // What the camera wrote after the filler; blocks until its writer closes.
  std::string drain() {
    fcntl(reader_, F_SETFL, fcntl(reader_, F_GETFL) & ~O_NONBLOCK);
    std::string text;
    char buf[65536];
    for (ssize_t n; (n = read(reader_, buf, sizeof buf)) > 0;) text.append(buf, n);
    return text.size() >= filled_ ? text.substr(filled_) : "";
  }

 private:
  std::string path_;
  int reader_ = -1;
  std::size_t filled_ = 0;
  bool full_ = false;
};

// The lines a stalled camera wrote once let go: whole, numbered 0, 1, 2, ...
::testing::AssertionResult whole_lines_from_frame_0(const std::string& text, std::size_t* n) {
  std::istringstream in(text);
  *n = 0;
  for (std::string line; std::getline(in, line); ++*n) {
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || j.value("frame", -1) != static_cast<long long>(*n))
      return ::testing::AssertionFailure() << "line " << *n << " is " << line;
  }
  if (!text.empty() && text.back() != '\n')
    return ::testing::AssertionFailure() << "the last line is torn: " << text;
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(ServerFifo, AFifoUriIsRefusedAndTheApiStaysUp) {
  ServerProcess server(json{{"max_streams", 2}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  const std::string fifo = server.dir() + "/clip.mkv";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Http http;
  const HttpReply r = post(http, server, {{"id", "pipe"}, {"uri", "file://" + fifo}});
  EXPECT_EQ(r.status, 400) << r.body << r.error;
  EXPECT_EQ(r.json().value("field", ""), "uri") << r.body;
  EXPECT_EQ(r.json().value("error", ""), "uri: file '" + fifo +
                                             "' is not a regular file (it is a FIFO (named "
                                             "pipe)); give the path of a file")
      << r.body;
  const HttpReply h = http.get(server.url("/healthz"));
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.json()["streams"], 0);
  // A directory is no video either.
  EXPECT_EQ(post(http, server, {{"id", "dir"}, {"uri", "file://" + server.dir()}}).status, 400);
  server.child().signal(SIGTERM);
  EXPECT_EQ(server.child().wait_exit(30), 0) << server.child().err();
}

// A configured camera on a FIFO fails (its state says why); the server
// starts and serves the others.
TEST(ServerFifo, AConfiguredFifoCameraFailsWithoutHoldingUpTheServer) {
  char tmpl[] = "/tmp/torchinfer-fifo-XXXXXX";
  const std::string dir = g_mkdtemp(tmpl);
  const std::string fifo = dir + "/clip.mkv";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  {
    ServerProcess server(json{
        {"streams",
         {{{"id", "pipe"}, {"uri", "file://" + fifo}}, {{"id", "line"}, {"uri", clip_uri()}}}}});
    ASSERT_TRUE(server.ready()) << server.child().err();
    Http http;
    const json pipe = server.stream(http, "pipe");
    EXPECT_EQ(pipe["state"], "failed") << pipe;
    EXPECT_NE(pipe["last_error"].get<std::string>().find("is not a regular file (it is a FIFO"),
              std::string::npos)
        << pipe;
    ASSERT_TRUE(eventually([&] { return server.stream(http, "line")["state"] == "running"; }, 120))
        << server.child().err();
    server.child().signal(SIGTERM);
    EXPECT_EQ(server.child().wait_exit(30), 0) << server.child().err();
  }
  unlink(fifo.c_str());
  g_rmdir(dir.c_str());
}

// A camera whose JSON file is a FIFO nobody reads fails at once, naming the
// file (torchmetaconvert's open waited for a reader forever: "starting"
// until someone read); the server serves on.
TEST(ServerFifo, ACameraWhoseJsonFileIsAFifoNobodyReadsFailsNamingIt) {
  ServerProcess server(json{{"max_streams", 2}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  const std::string fifo = server.out_dir() + "/pipe.jsonl";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Http http;
  ASSERT_EQ(post(http, server, {{"id", "pipe"}, {"uri", clip_uri()}}).status, 201);
  ASSERT_TRUE(eventually([&] { return server.stream(http, "pipe")["state"] == "failed"; }, 60))
      << server.stream(http, "pipe");
  EXPECT_EQ(server.stream(http, "pipe")["last_error"],
            "json: torchmetaconvert location '" + fifo +
                "' is a FIFO (named pipe) that no process reads; start its reader first or give "
                "the path of a file (torchmetaconvert location=" +
                fifo + ")");
  EXPECT_EQ(http.get(server.url("/healthz")).status, 200);
  server.child().signal(SIGTERM);
  EXPECT_EQ(server.child().wait_exit(30), 0) << server.child().err();
}

// A camera whose JSON consumer stopped reading (its file a FIFO that is
// open but full, as a hung reader leaves it): its first line blocks, no
// frame gets through (starting), and its pipeline cannot stop while the
// write waits. The API answers on; removed, it holds its id and its place
// under max_streams until its pipeline is gone; then the id comes back.
TEST(ServerStopping, ARemovedCameraHoldsItsIdAndItsPlaceUntilItsPipelineIsGone) {
  ServerProcess server(
      json{{"max_streams", 2}, {"streams", {{{"id", "cam0"}, {"uri", clip_uri()}}}}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  ASSERT_TRUE(eventually([&] { return server.stream(http, "cam0")["state"] == "running"; }, 120));
  const std::string fifo = server.out_dir() + "/held.jsonl";
  StalledFifo stalled(fifo);
  ASSERT_TRUE(stalled.full());

  HttpReply r = post(http, server, {{"id", "held"}, {"uri", clip_uri()}});
  ASSERT_EQ(r.status, 201) << r.body << r.error;
  EXPECT_EQ(r.json()["state"], "starting");
  // Its frames flow into torchinfer, none out of the pipeline: it is stuck
  // on the write (removed before that, it would never have started).
  ASSERT_TRUE(eventually([&] { return server.stream(http, "held")["frames"]["in"] >= 1; }, 60))
      << server.child().err();
  EXPECT_EQ(server.stream(http, "held")["state"], "starting");
  EXPECT_EQ(http.get(server.url("/healthz")).status, 200);
  r = http.request("DELETE", server.url("/streams/held"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["state"], "stopping");
  EXPECT_EQ(states(http, server), std::vector<std::string>({"cam0:running", "held:stopping"}));
  EXPECT_EQ(
      http.get(server.url("/healthz")).json(),
      json({{"status", "ok"}, {"streams", 1}, {"failed_streams", 0}, {"stopping_streams", 1}}));
  EXPECT_EQ(http.request("DELETE", server.url("/streams/held")).json()["state"], "stopping");

  r = post(http, server, {{"id", "held"}, {"uri", clip_uri()}});
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(r.json().value("field", ""), "id");
  EXPECT_NE(r.json().value("error", "").find("'held' was removed and is still stopping"),
            std::string::npos)
      << r.body;
  r = post(http, server, {{"id", "other"}, {"uri", clip_uri()}});
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(r.json().value("error", ""),
            "the server runs max_streams (2) streams already (1 of them removed and still "
            "stopping); remove one first");

  // Reading lets the write return: the camera drains and goes, its lines whole.
  std::string written;
  std::thread reader([&] { written = stalled.drain(); });
  ASSERT_TRUE(eventually([&] { return http.get(server.url("/streams/held")).status == 404; }, 60))
      << server.child().err();
  reader.join();
  std::size_t lines = 0;
  EXPECT_TRUE(whole_lines_from_frame_0(written, &lines));
  EXPECT_GE(lines, 1u);
  EXPECT_EQ(states(http, server), std::vector<std::string>({"cam0:running"}));
  ASSERT_EQ(unlink(fifo.c_str()), 0);
  ASSERT_EQ(post(http, server, {{"id", "held"}, {"uri", clip_uri()}}).status, 201);
  ASSERT_TRUE(eventually([&] { return server.stream(http, "held")["frames"]["out"] >= 3; }, 60));
  server.child().signal(SIGTERM);
  ASSERT_EQ(server.child().wait_exit(60), 0) << server.child().err();
  std::size_t n = 0;
  EXPECT_TRUE(no_frame_lost(server.out_dir() + "/held.jsonl", &n));
  EXPECT_GE(n, 3u);
}

// SIGTERM ends the process even when a camera's pipeline never stops (its
// JSON consumer stopped reading, as above, and never comes back).
TEST(ServerStopping, SigtermEndsTheServerWhileACameraPipelineNeverStops) {
  ServerProcess server(json{{"drain_timeout_s", 1}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  StalledFifo stalled(server.out_dir() + "/held.jsonl");
  ASSERT_TRUE(stalled.full());
  Http http;
  ASSERT_EQ(post(http, server, {{"id", "held"}, {"uri", clip_uri()}}).status, 201);
  // Until nothing more enters torchinfer: the streaming thread is held up
  // behind the write, and with it any EOS sent in (that froze the main loop).
  auto held_up = [&] {
    const json before = server.stream(http, "held")["frames"]["in"];
    std::this_thread::sleep_for(std::chrono::seconds(1));
    return before >= 1 && server.stream(http, "held")["frames"]["in"] == before;
  };
  ASSERT_TRUE(eventually(held_up, 60)) << server.child().err();
  EXPECT_EQ(server.stream(http, "held")["state"], "starting");
  server.child().signal(SIGTERM);
  EXPECT_EQ(server.child().wait_exit(60), 1) << server.child().err();
  EXPECT_EQ(server.child().count_err("torchinfer-server: error: a camera's pipeline did not stop "
                                     "(one of its state changes never returned"),
            1)
      << server.child().err();
}

// The churn: cameras added and removed as fast as the API takes
// them. Pipelines alive (running + stopping) never pass max_streams: in
// /streams, and in the process's threads.
TEST(ServerStopping, FastAddRemoveCyclesNeverRunMorePipelinesThanTheLimit) {
  ServerProcess server(json{{"max_streams", 2}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  auto threads = [&] { return metric(http.get(server.url("/metrics")).body, "process_threads"); };
  const long long idle_threads = threads();
  // One camera's threads, measured.
  ASSERT_EQ(post(http, server, {{"id", "probe"}, {"uri", clip_uri()}}).status, 201);
  ASSERT_TRUE(eventually([&] { return server.stream(http, "probe")["frames"]["out"] >= 3; }, 60));
  const long long per_camera = threads() - idle_threads;
  ASSERT_EQ(http.request("DELETE", server.url("/streams/probe")).status, 200);
  ASSERT_TRUE(eventually([&] { return http.get(server.url("/streams/probe")).status == 404; }, 30));

  int added = 0, refused = 0;
  long long most_threads = 0;
  for (int i = 0; i < 40; ++i) {
    const std::string id = "c" + std::to_string(i);
    const HttpReply r = post(http, server, {{"id", id}, {"uri", clip_uri()}});
    ASSERT_TRUE(r.status == 201 || r.status == 409)
        << "status " << r.status << " (" << r.error << "): " << r.body << "\n"
        << server.child().err();
    if (r.status == 201) {
      added++;
      ASSERT_EQ(http.request("DELETE", server.url("/streams/" + id)).status, 200);
    } else {
      refused++;
      EXPECT_NE(r.json().value("error", "").find("max_streams (2)"), std::string::npos) << r.body;
    }
    const json list = http.get(server.url("/streams")).json()["streams"];
    EXPECT_LE(list.size(), 2u) << list;
    most_threads = std::max(most_threads, threads());
  }
  EXPECT_GE(added, 2);
  // Two pipelines, their two stopper threads, and GStreamer's pool threads.
  EXPECT_LE(most_threads, idle_threads + 2 * per_camera + 8)
      << "idle " << idle_threads << ", one camera " << per_camera;
  ASSERT_TRUE(eventually([&] { return states(http, server).empty(); }, 60));
  const std::string m = http.get(server.url("/metrics")).body;
  EXPECT_EQ(metric(m, "torchinfer_streams_stopping"), 0);
  EXPECT_EQ(metric(m, "torchinfer_streams_removed_total"), added + 1);
  server.child().signal(SIGTERM);
  EXPECT_EQ(server.child().wait_exit(60), 0) << server.child().err();
  std::cerr << "added " << added << ", refused " << refused << ", threads idle " << idle_threads
            << ", per camera " << per_camera << ", most " << most_threads << "\n";
}

TEST(ServerConnections, BeyondMaxConnectionsA503AndIdleOnesAreClosed) {
  ServerProcess server(json{{"max_connections", 4}, {"idle_timeout_s", 1}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(connect_local(server.port()));
  // Accepted in order: the four idle ones hold every place (a probe would
  // still be answered: ProbesAreAnsweredPastMaxConnections).
  const std::string busy =
      raw_exchange(server.port(), "GET /streams HTTP/1.1\r\nHost: x\r\n\r\n", 10);
  EXPECT_EQ(busy.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << busy;
  EXPECT_NE(busy.find("{\"error\":\"the server serves max_connections (4) connections already; "
                      "try again shortly\"}"),
            std::string::npos)
      << busy;
  for (int fd : idle) {
    bool closed = false;
    EXPECT_EQ(read_until_close(fd, 20, &closed), "");
    EXPECT_TRUE(closed) << "an idle connection stayed open";
    close(fd);
  }
  Http http;
  ASSERT_EQ(http.get(server.url("/healthz")).status, 200);
  const std::string m = http.get(server.url("/metrics")).body;
  EXPECT_EQ(metric(m, "torchinfer_http_connections_max"), 4);
  EXPECT_EQ(metric(m, "torchinfer_http_connections_refused_total"), 1);
  EXPECT_EQ(metric(m, "torchinfer_http_connections_timed_out_total"), 4);
  EXPECT_EQ(metric(m, "torchinfer_http_connections"), 1);  // this one
}

// Slow clients holding every place must not get the server restarted by its
// own liveness probe: past max_connections the probes are still answered
// (ConnectionBook::kProbeReserve places, for the probes only), anything else
// gets the 503; a reserve place that sends nothing is closed within a second.
TEST(ServerConnections, ProbesAreAnsweredPastMaxConnections) {
  ServerProcess server(json{{"max_connections", 2}, {"idle_timeout_s", 60}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  std::vector<int> idle;
  for (int i = 0; i < 2; ++i) idle.push_back(connect_local(server.port()));
  auto get = [&](const std::string& path) {
    return raw_exchange(server.port(), "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n", 10);
  };
  for (const char* probe : {"/livez", "/readyz", "/startupz", "/healthz"}) {
    const std::string r = get(probe);
    EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << probe << ": " << r;
  }
  const std::string busy = get("/streams");
  EXPECT_EQ(busy.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << busy;
  EXPECT_NE(busy.find("{\"error\":\"the server serves max_connections (2) connections already; "
                      "try again shortly\"}"),
            std::string::npos)
      << busy;
  // Slow clients in the reserve too: each place is closed after a second
  // (the reserve's bound is ConnectionBook's unit test).
  std::vector<int> reserve;
  for (int i = 0; i < 3; ++i) reserve.push_back(connect_local(server.port()));
  for (int fd : reserve) {
    bool closed = false;
    EXPECT_EQ(read_until_close(fd, 20, &closed), "");
    EXPECT_TRUE(closed) << "an idle connection in the probes' reserve stayed open";
    close(fd);
  }
  const std::string again = get("/livez");
  EXPECT_EQ(again.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << again;
  EXPECT_NE(again.find("{\"status\":\"alive\"}"), std::string::npos) << again;
  for (int fd : idle) close(fd);
  // The server notices the closes a moment later: a 503 until then (asked
  // raw: libsoup's client sends a refused request again by itself).
  int refused = 0;
  ASSERT_TRUE(eventually(
      [&] {
        const std::string r = get("/streams");
        refused += r.rfind("HTTP/1.1 503 ", 0) == 0;
        return r.rfind("HTTP/1.1 200 OK\r\n", 0) == 0;
      },
      10));
  Http http;
  const std::string m = http.get(server.url("/metrics")).body;
  EXPECT_EQ(metric(m, "torchinfer_http_connections_refused_total"), 1 + refused);  // /streams
  EXPECT_EQ(metric(m, "torchinfer_http_connections_timed_out_total"), 3);
}

// libsoup's own listener stopped accepting for good at the first EMFILE.
TEST(ServerConnections, TheApiAnswersAgainAfterTheOpenFilesLimitIsReached) {
  ServerProcess server(json{{"max_connections", 1000}}, "", {},
                       {"sh", "-c", "ulimit -n 96 && exec \"$0\" \"$@\""});
  ASSERT_TRUE(server.ready()) << server.child().err();
  std::vector<int> conns;
  for (int i = 0; i < 150; ++i) {
    const int fd = connect_local(server.port());
    ASSERT_GE(fd, 0) << i;
    conns.push_back(fd);
  }
  const std::string line =
      server.child().wait_line(true, "Too many open files (open files limit 96; ", 30);
  EXPECT_EQ(line.rfind("torchinfer-server: warning: cannot accept an API connection: ", 0), 0u)
      << server.child().err();
  EXPECT_NE(line.find("accepting again in 100 ms"), std::string::npos) << line;
  for (int fd : conns) close(fd);
  Http http;
  ASSERT_TRUE(eventually([&] { return http.get(server.url("/healthz")).status == 200; }, 60))
      << server.child().err();
  EXPECT_GE(metric(http.get(server.url("/metrics")).body, "torchinfer_http_accept_errors_total"),
            1);
  server.child().signal(SIGTERM);
  EXPECT_EQ(server.child().wait_exit(30), 0) << server.child().err();
}

TEST(ServerConnections, TheSoftOpenFilesLimitIsRaisedToTheHardOne) {
  struct rlimit lim;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  ASSERT_GT(lim.rlim_max, 200u) << "this test lowers the soft limit to 200";
  ServerProcess server(json::object(), "", {},
                       {"sh", "-c", "ulimit -Sn 200 && exec \"$0\" \"$@\""});
  ASSERT_TRUE(server.ready()) << server.child().err();
  EXPECT_EQ(server.child().count_err("torchinfer-server: open files limit raised from 200 to " +
                                     std::to_string(lim.rlim_max) + " (the hard limit)"),
            1)
      << server.child().err();
  Http http;
  EXPECT_EQ(metric(http.get(server.url("/metrics")).body, "process_max_fds"),
            static_cast<long long>(lim.rlim_max));
}

TEST(ServerToken, ATokenFileWithANulByteIsRefusedAtStart) {
  char tmpl[] = "/tmp/torchinfer-token-XXXXXX";
  const std::string dir = g_mkdtemp(tmpl);
  const std::string path = dir + "/token";
  std::ofstream(path) << std::string("abc\0def\n", 8);
  Child server({env_or("TORCHINFER_SERVER", "torchinfer-server"), "--model", detector(), "--listen",
                "127.0.0.1:0", "--rtsp-port", "0", "--token-file", path});
  EXPECT_EQ(server.wait_exit(60), 2) << server.err();
  EXPECT_EQ(server.count_err("torchinfer-server: error: token file '" + path +
                             "': byte 3 is 0x00 (NUL), not printable ASCII; the file must hold "
                             "one token of printable ASCII, e.g. from `openssl rand -hex 32`"),
            1)
      << server.err();
  unlink(path.c_str());
  g_rmdir(dir.c_str());
}
