// No API answer waits on a camera (docs/server.md, "Cameras that stall"): a
// machine-vision camera frozen for 6 s (SIGSTOP: its sockets open and
// silent) then resumed, killed then restarted, removed while frozen, and a
// SIGTERM while it is frozen. Every endpoint is asked over and over
// meanwhile and each answer must come within 1 s: a bound on blocking, not
// a speed (they answer in milliseconds; the main loop waited 4.9 s on the
// camera's mutex after each reconnection, 7.4 s on its teardown, and
// SIGTERM took 9 s with a 2 s drain).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "fake_camera.h"
#include "server_process.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

// Asks every endpoint in turn on its own thread until stop(); the longest
// answer of each.
class Prober {
 public:
  Prober(const ServerProcess& server, std::string id) : server_(server), id_(std::move(id)) {
    thread_ = std::thread([this] { run(); });
  }
  ~Prober() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::map<std::string, double> longest() const { return longest_; }
  std::map<std::string, int> asked() const { return asked_; }
  std::vector<std::string> failures() const { return failures_; }

 private:
  void run() {
    Http http;
    const std::vector<std::string> paths = {
        "/livez",  "/readyz",  "/startupz",       "/healthz", "/shard",
        "/models", "/streams", "/streams/" + id_, "/metrics", "/streams/" + id_ + "/analytics"};
    while (!stop_) {
      for (const auto& p : paths) {
        const auto t0 = std::chrono::steady_clock::now();
        const HttpReply r = http.get(server_.url(p));
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        longest_[p] = std::max(longest_[p], s);
        asked_[p]++;
        // 404 once the camera is removed; 503 from /readyz while it reconnects.
        if (r.status != 200 && r.status != 404 && r.status != 503)
          failures_.push_back(p + ": " + std::to_string(r.status) + " " + r.error);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  const ServerProcess& server_;
  const std::string id_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::map<std::string, double> longest_;
  std::map<std::string, int> asked_;
  std::vector<std::string> failures_;
};

json camera(Http& http, const ServerProcess& s) {
  return s.stream(http, "mv");
}

std::uint64_t received(const json& j) {
  return j.is_object() ? j["camera"]["frames"]["received"].get<std::uint64_t>() : 0;
}

bool in_state(Http& http, const ServerProcess& s, const std::string& state) {
  return camera(http, s).value("state", "") == state;
}

// Frames again after a reconnection: `more` than were received before it.
bool receiving_again(Http& http, const ServerProcess& s, std::uint64_t before, int more = 10) {
  const json j = camera(http, s);
  return j.value("state", "") == "running" && received(j) >= before + more;
}

::testing::AssertionResult all_within(const Prober& p, double limit_s, int at_least) {
  for (const auto& [path, n] : p.asked())
    if (n < at_least)
      return ::testing::AssertionFailure() << path << " asked " << n << " times only";
  for (const auto& [path, s] : p.longest())
    if (s >= limit_s)
      return ::testing::AssertionFailure()
             << path << " took " << s << " s (limit " << limit_s << " s)";
  if (!p.failures().empty()) return ::testing::AssertionFailure() << p.failures().front();
  return ::testing::AssertionSuccess();
}

json one_camera(const FakeCamera& fake) {
  return json{{"drain_timeout_s", 2},
              {"streams", {{{"id", "mv"}, {"uri", fake.uri()}, {"json", false}}}}};
}

}  // namespace

TEST(ServerStalls, NoEndpointWaitsOnAFrozenKilledOrRemovedCamera) {
  FakeCamera fake("TISTALL");
  ASSERT_TRUE(fake.listening()) << kNoFakeCamera;
  ServerProcess server(one_camera(fake));
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  ASSERT_TRUE(eventually([&] { return receiving_again(http, server, 0); }, 60))
      << camera(http, server) << server.child().err();
  Prober probe(server, "mv");

  // Frozen 6 s: the camera is lost (2 s without a frame), then comes back.
  fake.freeze();
  ASSERT_TRUE(eventually([&] { return in_state(http, server, "reconnecting"); }, 30))
      << camera(http, server);
  std::this_thread::sleep_for(std::chrono::seconds(4));
  std::uint64_t before = received(camera(http, server));
  fake.thaw();
  ASSERT_TRUE(eventually([&] { return receiving_again(http, server, before); }, 60))
      << camera(http, server) << server.child().err();
  // The end of the lost connection's stream comes with its last frame's
  // release, seconds after the reconnection: probed through it.
  std::this_thread::sleep_for(std::chrono::seconds(6));

  // Killed, then started again.
  fake.kill();
  ASSERT_TRUE(eventually([&] { return in_state(http, server, "reconnecting"); }, 30))
      << camera(http, server);
  before = received(camera(http, server));
  fake.start();
  ASSERT_TRUE(fake.listening()) << kNoFakeCamera;
  ASSERT_TRUE(eventually([&] { return receiving_again(http, server, before); }, 60))
      << camera(http, server) << server.child().err();
  std::this_thread::sleep_for(std::chrono::seconds(6));

  // Removed while frozen: the DELETE answers at once, the camera's
  // teardown (its Aravis stream and device wait on the silent camera) runs
  // off the main loop.
  fake.freeze();
  ASSERT_TRUE(eventually([&] { return in_state(http, server, "reconnecting"); }, 30))
      << camera(http, server);
  const auto t0 = std::chrono::steady_clock::now();
  const HttpReply del = http.request("DELETE", server.url("/streams/mv"));
  const double del_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(del.status, 200) << del.body;
  EXPECT_LT(del_s, 1.0);
  ASSERT_TRUE(eventually([&] { return http.get(server.url("/streams/mv")).status == 404; }, 30))
      << server.child().err();
  std::this_thread::sleep_for(std::chrono::seconds(8));
  probe.stop();
  fake.thaw();
  EXPECT_TRUE(all_within(probe, 1.0, 20)) << server.child().err();
  for (const auto& [path, s] : probe.longest())
    std::cerr << path << ": longest " << s << " s of " << probe.asked().at(path) << "\n";
  server.child().signal(SIGTERM);
  EXPECT_EQ(server.child().wait_exit(30), 0) << server.child().err();
}

// SIGTERM with a frozen camera: the drain (2 s) runs out and the server
// exits 0 without waiting on the camera's Aravis connection (it waited 9 s
// and exited 1, "a camera's pipeline did not stop").
TEST(ServerStalls, SigtermWithAFrozenCameraExitsAfterTheDrain) {
  FakeCamera fake("TISTALLTERM");
  ASSERT_TRUE(fake.listening()) << kNoFakeCamera;
  ServerProcess server(one_camera(fake));
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  ASSERT_TRUE(eventually([&] { return receiving_again(http, server, 0); }, 60))
      << camera(http, server) << server.child().err();
  fake.freeze();
  ASSERT_TRUE(eventually([&] { return in_state(http, server, "reconnecting"); }, 30))
      << camera(http, server);
  server.child().signal(SIGTERM);
  // drain_timeout_s 2, plus 2 s at most for the pipelines to stop and
  // 2 s for the cameras' connections: 6 s is the bound; 8 leaves margin.
  const int code = server.child().wait_exit(8);
  fake.thaw();
  EXPECT_EQ(code, 0) << server.child().err();
  EXPECT_EQ(server.child().count_err("torchinfer-server: stopped"), 1) << server.child().err();
}
