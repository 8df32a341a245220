// torchinfer-server as the tests run it: a configuration file in a scratch
// folder, the process on a free port of 127.0.0.1, its output collected.
#pragma once

#include <glib.h>
#include <glib/gstdio.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../common/frame_accounting.h"
#include "../pipelines/process.h"
#include "http_client.h"

namespace torchinfer::test {

inline std::string source_root() {
  return env_or("TORCHINFER_SOURCE_ROOT", ".");
}
inline std::string clip_uri() {
  return "file://" + source_root() + "/models/demo/line.mkv";
}
inline std::string detector() {
  return source_root() + "/models/demo/parts_detector.pt";
}

class ServerProcess {
 public:
  // `config` without "models" and "output_dir" gets the demo detector as
  // model "parts" and a scratch output folder.
  // The re-streams listen on a free port too (never the default 8554, which
  // another test or a real server may hold); `extra` ends the command line.
  // `prefix` runs the server through another command (e.g. a shell that
  // lowers a limit, then execs "$0" "$@").
  explicit ServerProcess(nlohmann::json config, const std::string& token = "",
                         const std::vector<std::string>& extra = {},
                         const std::vector<std::string>& prefix = {}) {
    char tmpl[] = "/tmp/torchinfer-server-test-XXXXXX";
    dir_ = g_mkdtemp(tmpl);
    if (!config.contains("models"))
      config["models"] = {{{"id", "parts"}, {"path", detector()}, {"batch_size", 4}}};
    if (!config.contains("output_dir")) config["output_dir"] = dir_ + "/out";
    std::ofstream(dir_ + "/server.json") << config.dump(2);
    port_ = free_port();
    do rtsp_port_ = free_port();
    while (rtsp_port_ == port_);
    std::vector<std::string> argv{env_or("TORCHINFER_SERVER", "torchinfer-server"),
                                  "--config",
                                  dir_ + "/server.json",
                                  "--listen",
                                  "127.0.0.1:" + std::to_string(port_),
                                  "--rtsp-port",
                                  std::to_string(rtsp_port_)};
    if (!token.empty()) {
      std::ofstream(dir_ + "/token") << token << "\n";
      argv.push_back("--token-file");
      argv.push_back(dir_ + "/token");
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.begin(), prefix.begin(), prefix.end());
    child_ = std::make_unique<Child>(argv);
    ready_ = child_->wait_line_index(true, "torchinfer-server: serving http://", 120) >= 0;
  }
  ~ServerProcess() {
    child_.reset();
    std::string cmd = "rm -rf '" + dir_ + "'";
    if (dir_.rfind("/tmp/torchinfer-server-test-", 0) == 0) (void)std::system(cmd.c_str());
  }

  bool ready() const { return ready_; }
  std::string url(const std::string& path = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::string rtsp_url(const std::string& id) const {
    return "rtsp://127.0.0.1:" + std::to_string(rtsp_port_) + "/streams/" + id;
  }
  int port() const { return port_; }
  std::string out_dir() const { return dir_ + "/out"; }
  std::string dir() const { return dir_; }
  Child& child() { return *child_; }

  // Stream status from GET /streams/{id} (null if not there).
  nlohmann::json stream(Http& http, const std::string& id) const {
    const HttpReply r = http.get(url("/streams/" + id));
    return r.status == 200 ? r.json() : nlohmann::json();
  }

 private:
  std::string dir_;
  int port_ = 0, rtsp_port_ = 0;
  bool ready_ = false;
  std::unique_ptr<Child> child_;
};

// The frame counters of one stream of /streams, for frames_add_up(): read
// at one moment by the server, so they add up exactly; "out" is the end of
// the camera's pipeline, which trails torchinfer.
inline FrameCounts counts_of(const nlohmann::json& stream) {
  FrameCounts c;
  if (!stream.is_object() || !stream.contains("frames")) {
    ADD_FAILURE() << "not a stream's status: " << stream;
    return c;
  }
  const nlohmann::json& f = stream.at("frames");
  c.in = f.at("in").get<std::uint64_t>();
  c.inferred = f.at("inferred").get<std::uint64_t>();
  c.skipped = f.at("skipped").get<std::uint64_t>();
  c.dropped = f.at("dropped").get<std::uint64_t>();
  c.in_flight = f.at("in_flight").get<std::uint64_t>();
  c.in_flight_limit = f.at("in_flight_limit").get<std::uint64_t>();
  for (std::size_t r = 0; r < kSkipReasons; ++r)
    c.skipped_by[r] =
        f.at("skipped_by").at(to_string(static_cast<SkipReason>(r))).get<std::uint64_t>();
  c.out = f.at("out").get<std::uint64_t>();
  c.out_trails = true;
  return c;
}

// A looped clip's JSON lines file lost no frame: numbered 0, 1, 2, ...
// and each PTS one frame (33-34 ms: Matroska keeps milliseconds) after the
// previous, except where the clip starts again (0 after its last frame at
// 9.967 s). A frame lost anywhere between the source and the file breaks it.
inline ::testing::AssertionResult no_frame_lost(const std::string& path, std::size_t* n) {
  std::ifstream in(path);
  std::size_t i = 0;
  long long prev = -1;
  for (std::string line; std::getline(in, line); ++i) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("frame") || j["frame"] != i || !j["pts"].is_number())
      return ::testing::AssertionFailure() << path << ": line " << i << " is " << line;
    const long long pts = j["pts"].get<long long>();
    const long long d = pts - prev;
    const bool next = prev < 0 ? pts == 0 : (d >= 32000000 && d <= 35000000);
    const bool wrap = prev >= 9900000000LL && pts == 0;
    if (!next && !wrap)
      return ::testing::AssertionFailure()
             << path << ": line " << i << " has pts " << pts << " after " << prev;
    prev = pts;
  }
  *n = i;
  return ::testing::AssertionSuccess();
}

}  // namespace torchinfer::test
