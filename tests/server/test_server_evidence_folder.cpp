// A camera's evidence folder replaced by a symbolic link while the camera
// runs (docs/server.md, "Evidence"): no snapshot, crop or clip is written
// through the link and retention deletes nothing there; every refused file
// is counted (status, /metrics) with a WARNING naming why, and the camera
// keeps running.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "server_process.h"

using nlohmann::json;
using namespace torchinfer::test;
namespace fs = std::filesystem;

TEST(ServerEvidenceFolder, AFolderSwappedForALinkGetsNothingAndTheLossIsCounted) {
  const json cam = {
      {"id", "swap"},
      {"uri", clip_uri()},
      {"track", true},
      {"loop", true},
      {"evidence", {{"classes", {"bracket", "washer"}}, {"dir", "swap-ev"}, {"max_events", 2}}}};
  ServerProcess server(json{{"streams", json::array({cam})}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  const std::string dir = server.out_dir() + "/swap-ev", other = server.dir() + "/other";
  fs::create_directories(other);
  // Named as the camera's first event's snapshot: retention following the
  // link would delete it.
  std::ofstream(other + "/swap-1-snapshot.jpg") << "not ours";
  json s;
  ASSERT_TRUE(eventually(
      [&] {
        s = server.stream(http, "swap");
        return !s.is_null() && s["evidence"]["files"]["snapshot"].get<int>() >= 1;
      },
      120))
      << s.dump() << server.child().err();
  fs::rename(dir, server.dir() + "/moved");
  fs::create_directory_symlink(other, dir);
  // Events go on (the clip loops: new tracks), their files are refused.
  ASSERT_TRUE(eventually(
      [&] {
        s = server.stream(http, "swap");
        return s["evidence"]["write_failures"].get<int>() >= 3 &&
               s["evidence"]["pruned"].get<int>() >= 1;
      },
      120))
      << s.dump() << server.child().err();
  EXPECT_EQ(s["state"], "running");
  EXPECT_NE(s["evidence"]["last_error"].get<std::string>().find(dir + "/swap-" /* n-kind */),
            std::string::npos)
      << s["evidence"];
  EXPECT_NE(s["evidence"]["last_error"].get<std::string>().find(
                ": the evidence folder was replaced by a symbolic link since the start"),
            std::string::npos)
      << s["evidence"];
  EXPECT_TRUE(eventually(
      [&] {
        return server.child().err().find("torchinfer-server: stream swap: WARNING: evidence: ") !=
               std::string::npos;
      },
      10))
      << server.child().err();
  std::vector<std::string> there;
  for (const auto& e : fs::directory_iterator(other)) there.push_back(e.path().filename());
  EXPECT_EQ(there, std::vector<std::string>{"swap-1-snapshot.jpg"});
  const std::string m = http.get(server.url("/metrics")).body;
  std::smatch hit;
  ASSERT_TRUE(std::regex_search(
      m, hit,
      std::regex(
          "torchinfer_stream_evidence_write_failures_total\\{stream=\"swap\",model=\"parts\"\\} "
          "([0-9]+)\n")))
      << m;
  EXPECT_GE(std::stoi(hit[1]), 3);
}
