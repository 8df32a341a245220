// A camera's motion gate through torchinfer-server (docs/server.md, "Motion
// gate and tiles"): on a still clip (videotestsrc, one grey frame 40 times,
// MJPEG) a camera with "inference_gate": "motion", a keyframe every 10th
// frame and no hold infers frames 0, 10, 20 and 30 and reports the other 36
// skipped `still` in GET /streams/{id} and /metrics; the same clip without
// the gate skips none as still. A bad gate value posted is refused naming
// the field.
#include <gtest/gtest.h>

#include "server_process.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

const std::string kToken = "gate-token-0123";
constexpr int kFrames = 40;

// The still clip, made once in the suite's own scratch folder.
std::string make_still_clip(const std::string& dir) {
  const std::string path = dir + "/still.avi";
  const Result r = run({"gst-launch-1.0", "-q", "videotestsrc", "pattern=solid-color",
                        "foreground-color=0xff808080", "num-buffers=" + std::to_string(kFrames),
                        "!", "video/x-raw,width=320,height=240,framerate=30/1", "!", "jpegenc", "!",
                        "avimux", "!", "filesink", "location=" + path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

class ServerGate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/torchinfer-gate-clip-XXXXXX";
    clip_dir_ = g_mkdtemp(tmpl);
    const std::string uri = "file://" + make_still_clip(clip_dir_);
    server_ = new ServerProcess({{"streams",
                                  {{{"id", "gated"},
                                    {"uri", uri},
                                    {"loop", false},
                                    {"inference_gate", "motion"},
                                    {"motion_keyframe_interval", 10},
                                    {"motion_hold", 0}},
                                   {{"id", "plain"}, {"uri", uri}, {"loop", false}}}}},
                                kToken);
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    run({"rm", "-rf", clip_dir_});
  }
  void SetUp() override { ASSERT_TRUE(server_->ready()) << server_->child().err(); }
  json ended(const std::string& id) {
    EXPECT_TRUE(
        eventually([&] { return server_->stream(http_, id).value("state", "") == "ended"; }, 120))
        << server_->stream(http_, id) << server_->child().err();
    return server_->stream(http_, id);
  }

  static ServerProcess* server_;
  static std::string clip_dir_;
  Http http_;
};

ServerProcess* ServerGate::server_ = nullptr;
std::string ServerGate::clip_dir_;

std::uint64_t series(const std::string& text, const std::string& name) {
  const std::size_t at = text.find("\n" + name + " ");
  EXPECT_NE(at, std::string::npos) << name;
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + name.size() + 2));
}

}  // namespace

TEST_F(ServerGate, StillFramesOfAGatedCameraAreSkippedStill) {
  const json s = ended("gated");
  EXPECT_TRUE(frames_add_up(counts_of(s), Settled::kYes));
  EXPECT_EQ(s["frames"]["in"], kFrames) << s["frames"];
  EXPECT_EQ(s["frames"]["inferred"], 4) << s["frames"];
  EXPECT_EQ(s["frames"]["skipped"], 36) << s["frames"];
  EXPECT_EQ(s["frames"]["skipped_by"]["still"], 36) << s["frames"];
  EXPECT_EQ(s["config"]["inference_gate"], "motion");
  EXPECT_EQ(s["config"]["motion_keyframe_interval"], 10);

  const json p = ended("plain");
  EXPECT_EQ(p["frames"]["in"], kFrames) << p["frames"];
  EXPECT_EQ(p["frames"]["skipped_by"]["still"], 0) << p["frames"];
  EXPECT_FALSE(p["config"].contains("inference_gate"));

  const HttpReply m = http_.get(server_->url("/metrics"), kToken);
  ASSERT_EQ(m.status, 200);
  const std::string name = "torchinfer_stream_frames_skipped_total";
  EXPECT_EQ(series(m.body, name + "{stream=\"gated\",model=\"parts\",reason=\"still\"}"), 36u);
  EXPECT_EQ(series(m.body, name + "{stream=\"plain\",model=\"parts\",reason=\"still\"}"), 0u);
}

TEST_F(ServerGate, ABadGateIsRefusedNamingTheField) {
  const json body = {{"id", "bad"}, {"uri", clip_uri()}, {"inference_gate", "movement"}};
  const HttpReply r = http_.request("POST", server_->url("/streams"), body.dump(), kToken);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json().value("field", ""), "inference_gate") << r.body;
  const json tiles = {{"id", "bad"}, {"uri", clip_uri()}, {"tile_width", 320}};
  const HttpReply t = http_.request("POST", server_->url("/streams"), tiles.dump(), kToken);
  EXPECT_EQ(t.status, 400) << t.body;
  EXPECT_EQ(t.json().value("field", ""), "tile_width") << t.body;
}
