// Cameras come and go while others run (the churn, short: 10
// cycles; 200 in tests/bench/server_churn.sh), and an RTSP camera whose
// server dies and comes back recovers while the others continue.
#include <gtest/gtest.h>
#include <signal.h>

#include "server_process.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

const char* kRunning[] = {"cam0", "cam1", "cam2"};

std::uint64_t frames_out(Http& http, const ServerProcess& s, const std::string& id) {
  const json j = s.stream(http, id);
  return j.is_null() ? 0 : j["frames"]["out"].get<std::uint64_t>();
}

}  // namespace

TEST(ServerChurn, AddingAndRemovingACameraCostsTheOthersNoFrame) {
  ServerProcess server(json{{"streams",
                             {{{"id", "cam0"}, {"uri", clip_uri()}},
                              {{"id", "cam1"}, {"uri", clip_uri()}},
                              {{"id", "cam2"}, {"uri", clip_uri()}}}}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  for (const char* id : kRunning)
    ASSERT_TRUE(eventually([&] { return frames_out(http, server, id) > 0; }, 120)) << id;
  std::map<std::string, std::uint64_t> before;
  for (const char* id : kRunning) before[id] = frames_out(http, server, id);

  constexpr int kCycles = 10;
  for (int i = 0; i < kCycles; ++i) {
    const std::string id = "churn" + std::to_string(i);
    const HttpReply add = http.request("POST", server.url("/streams"),
                                       json({{"id", id}, {"uri", clip_uri()}}).dump());
    ASSERT_EQ(add.status, 201) << add.body;
    // Frames of the new camera went through the shared model before it goes.
    ASSERT_TRUE(eventually([&] { return frames_out(http, server, id) >= 3; }, 60)) << id;
    ASSERT_EQ(http.request("DELETE", server.url("/streams/" + id)).status, 200);
  }
  // The last removed camera is listed (stopping) until its pipeline is gone.
  ASSERT_TRUE(eventually(
      [&] { return http.get(server.url("/streams")).json()["streams"].size() == 3u; }, 30));
  const json list = http.get(server.url("/streams")).json();
  for (const auto& s : list["streams"]) {
    EXPECT_EQ(s["state"], "running") << s;
    EXPECT_EQ(s["frames"]["dropped"], 0) << s;
    EXPECT_TRUE(frames_add_up(counts_of(s))) << s["id"];
    EXPECT_GT(s["frames"]["out"].get<std::uint64_t>(), before[s["id"]]) << s;
  }
  const std::string metrics = http.get(server.url("/metrics")).body;
  EXPECT_NE(metrics.find("torchinfer_streams_added_total 13\n"), std::string::npos);
  EXPECT_NE(metrics.find("torchinfer_streams_removed_total 10\n"), std::string::npos);

  // Drained at SIGTERM, each file holds every frame of its camera, in order.
  server.child().signal(SIGTERM);
  ASSERT_EQ(server.child().wait_exit(60), 0) << server.child().err();
  for (const char* id : kRunning) {
    std::size_t n = 0;
    EXPECT_TRUE(no_frame_lost(server.out_dir() + "/" + id + ".jsonl", &n));
    EXPECT_GE(n, before[id]);
  }
  for (int i = 0; i < kCycles; ++i) {
    std::size_t n = 0;
    const std::string path = server.out_dir() + "/churn" + std::to_string(i) + ".jsonl";
    EXPECT_TRUE(no_frame_lost(path, &n));
    EXPECT_GE(n, 3u) << path;
  }
}

TEST(ServerRtsp, ACameraWhoseServerDiesRecoversWhileTheOthersContinue) {
  const int rtsp_port = free_port();
  const std::string rtsp_url = "rtsp://127.0.0.1:" + std::to_string(rtsp_port) + "/stream";
  auto start_rtsp = [&] {
    auto p = std::make_unique<Child>(std::vector<std::string>{
        env_or("TORCHINFER_RTSP_SERVER", "torchinfer-rtsp-server"), "--port",
        std::to_string(rtsp_port), "--model", source_root() + "/models/demo/parts_classifier.pt"});
    EXPECT_GE(p->wait_line_index(false, "serving " + rtsp_url, 60), 0) << p->err();
    return p;
  };
  auto rtsp = start_rtsp();
  ServerProcess server(json{
      {"streams", {{{"id", "door"}, {"uri", rtsp_url}}, {{"id", "line"}, {"uri", clip_uri()}}}}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  ASSERT_TRUE(eventually([&] { return frames_out(http, server, "door") > 10; }, 120))
      << server.stream(http, "door") << server.child().err();
  ASSERT_TRUE(eventually([&] { return frames_out(http, server, "line") > 0; }, 60));

  rtsp->signal(SIGKILL);
  ASSERT_EQ(rtsp->wait_exit(30), -1);
  rtsp.reset();
  ASSERT_TRUE(
      eventually([&] { return server.stream(http, "door")["state"] == "reconnecting"; }, 60))
      << server.stream(http, "door");
  const json down = server.stream(http, "door");
  EXPECT_EQ(down["last_error"].get<std::string>().rfind("rtsp: ", 0), 0u) << down;
  EXPECT_EQ(down["disconnects"], 1);
  // The file camera runs on while the RTSP one is down.
  const std::uint64_t line_at_loss = frames_out(http, server, "line");
  ASSERT_TRUE(eventually([&] { return frames_out(http, server, "line") > line_at_loss + 30; }, 60));
  EXPECT_EQ(server.stream(http, "door")["state"], "reconnecting");

  rtsp = start_rtsp();
  const std::uint64_t door_before = frames_out(http, server, "door");
  ASSERT_TRUE(eventually(
      [&] {
        const json d = server.stream(http, "door");
        return d["state"] == "running" && d["frames"]["out"] > door_before + 10;
      },
      120))
      << server.stream(http, "door") << server.child().err();
  const json door = server.stream(http, "door");
  EXPECT_EQ(door["reconnects"], 1) << door;
  EXPECT_TRUE(frames_add_up(counts_of(door)));
  const json line = server.stream(http, "line");
  EXPECT_EQ(line["state"], "running");
  EXPECT_EQ(line["frames"]["dropped"], 0);
  EXPECT_TRUE(frames_add_up(counts_of(line)));
  const std::string metrics = http.get(server.url("/metrics")).body;
  EXPECT_NE(metrics.find("torchinfer_stream_reconnects_total{stream=\"door\",model=\"parts\"} 1\n"),
            std::string::npos);
  EXPECT_NE(
      metrics.find("torchinfer_stream_disconnects_total{stream=\"door\",model=\"parts\"} 1\n"),
      std::string::npos);

  server.child().signal(SIGTERM);
  ASSERT_EQ(server.child().wait_exit(60), 0) << server.child().err();
  std::size_t n = 0;
  EXPECT_TRUE(no_frame_lost(server.out_dir() + "/line.jsonl", &n));
}
