// Every launch line of pipelines/README.md, run through pipelines/launch_lines.sh
// as documented, with a simulated live YUY2 camera (SIMULATE=1) and 30
// frames per camera so that each one ends.

#include <set>

#include "process.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

std::string root() {
  return env_or("TORCHINFER_SOURCE_ROOT", ".");
}

std::map<std::string, std::string> settings(const std::string& out,
                                            std::map<std::string, std::string> more = {}) {
  more.emplace("SIMULATE", "1");
  more.emplace("FRAMES", "30");
  more.emplace("SINK", "fakesink");
  more.emplace("OUT", out);
  more.emplace("BUILD", env_or("TORCHINFER_BUILD_ROOT", "build"));
  return more;
}

std::string out_dir(const std::string& name) {
  const std::string d = testing::TempDir() + "launch_lines_" + name;
  g_mkdir_with_parents(d.c_str(), 0755);
  return d;
}

Result line(const std::string& name, const std::map<std::string, std::string>& env) {
  return run({"bash", root() + "/pipelines/launch_lines.sh", name}, env);
}

std::vector<json> results(const std::string& path) {
  return json_lines(read_file(path));
}

// Frames numbered 0..n-1, each with a detections list from torchnms when it
// has a result; returns how many were inferred.
int check_frames(const std::vector<json>& lines, std::size_t n, const std::string& what) {
  EXPECT_EQ(lines.size(), n) << what;
  int inferred = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["frame"], i) << what;
    if (!lines[i].contains("inferred")) continue;
    EXPECT_TRUE(lines[i]["detections"].is_array()) << what << " frame " << i;
    inferred += lines[i]["inferred"].get<bool>();
  }
  return inferred;
}

}  // namespace

TEST(LaunchLines, FactoryCameraSimulated) {
  const std::string out = out_dir("camera");
  const Result r = line("factory_camera", settings(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(check_frames(results(out + "/camera.jsonl"), 30, "camera"), 1);
}

TEST(LaunchLines, FileInAnnotatedFileOut) {
  const std::string out = out_dir("file");
  const Result r = line("from_file", settings(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(check_frames(results(out + "/file.jsonl"), 300, "file"), 300);
  // The annotated video decodes back to every frame.
  const Result dec =
      run({"gst-launch-1.0", "-q", "filesrc", "location=" + out + "/file_annotated.mkv", "!",
           "matroskademux", "!", "jpegdec", "!", "torchmetaconvert", "!", "fakesink"});
  EXPECT_EQ(dec.exit_code, 0) << dec.err;
  EXPECT_EQ(json_lines(dec.out).size(), 300u);
}

// torchtrack on the clip: the 13 parts and one scratch each get one id,
// every id on a box belongs to a track started by then and not yet ended,
// and predicted boxes only stand in on frames torchinfer did not infer.
TEST(LaunchLines, TrackedFileGivesEachObjectOneId) {
  const std::string out = out_dir("tracked");
  const Result r = line("tracked", settings(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = results(out + "/tracked.jsonl");
  EXPECT_EQ(check_frames(lines, 300, "tracked"), 100);  // inference-interval=3
  std::map<int, std::string> started;                   // id -> label
  std::map<std::string, int> per_label;
  std::set<int> ended;
  int predicted = 0;
  for (const json& l : lines) {
    for (const json& e : l.value("track_events", json::array())) {
      const int id = e["id"];
      EXPECT_EQ(e["pts"], l["pts"]) << "frame " << l["frame"];
      if (e["event"] == "started") {
        EXPECT_EQ(id, static_cast<int>(started.size()) + 1) << "ids in order, no gaps";
        started[id] = e["label"];
        per_label[e["label"]]++;
      } else {
        EXPECT_EQ(e["event"], "ended");
        EXPECT_EQ(e["reason"], "lost");  // EOS ends the others: messages only
        EXPECT_EQ(started.count(id), 1u) << id;
        EXPECT_TRUE(ended.insert(id).second) << id;
      }
    }
    for (const json& d : l.value("detections", json::array())) {
      if (!d.contains("object_id")) continue;
      const int id = d["object_id"];
      EXPECT_EQ(started.count(id), 1u) << "frame " << l["frame"] << " id " << id;
      EXPECT_EQ(ended.count(id), 0u) << "frame " << l["frame"] << " id " << id;
      if (started.count(id)) {
        EXPECT_EQ(d["label"], started[id]);
      }
      if (d["predicted"].get<bool>()) {
        EXPECT_FALSE(l["inferred"].get<bool>()) << "frame " << l["frame"];
        predicted++;
      }
    }
  }
  EXPECT_EQ(started.size(), 14u);
  EXPECT_EQ(per_label["bracket"], 7);
  EXPECT_EQ(per_label["washer"], 6);
  EXPECT_EQ(per_label["scratch"], 1);
  EXPECT_GE(ended.size(), 1u);
  EXPECT_GT(predicted, 0);
}

// torchanalytics on the clip: the gate counts the 12 parts that cross it,
// each once, forward (docs/elements.md: 7 brackets, 5 washers), and only
// parts (classes=bracket,washer: without it the detector's defect boxes
// were counted as objects too).
TEST(LaunchLines, CountedFileCountsEachPartOnceAtTheGate) {
  const std::string out = out_dir("counted");
  const Result r = line("counted", settings(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = results(out + "/counted.jsonl");
  EXPECT_EQ(check_frames(lines, 300, "counted"), 100);
  ASSERT_FALSE(lines.empty());
  const json& gate = lines.back()["analytics"]["lines"]["gate"];
  EXPECT_EQ(gate["backward"], 0);
  EXPECT_EQ(gate["by_class"]["bracket"]["forward"], 7);
  EXPECT_EQ(gate["by_class"]["washer"]["forward"], 5);
  EXPECT_EQ(gate["forward"], 12) << gate;
  EXPECT_EQ(gate["by_class"].size(), 2u) << gate;
}

TEST(LaunchLines, FourCamerasShareOneModel) {
  const std::string out = out_dir("four");
  const Result r = line("four_cameras", settings(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int shared = 0;
  for (int c = 0; c < 4; ++c) {
    const auto lines = results(out + "/cam" + std::to_string(c) + ".jsonl");
    EXPECT_GE(check_frames(lines, 30, "camera " + std::to_string(c)), 1);
    for (const json& l : lines)
      if (l.contains("batch")) shared += l["batch"]["size"].get<int>() > 1;
  }
  // Four live cameras deliver together: some batches hold several of them.
  EXPECT_GT(shared, 0);
}

TEST(LaunchLines, PythonAppReadsTheClipsDetections) {
  const Result r = line("python_app", settings(out_dir("python")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto at = r.out.find("summary: 300 frames, ");
  ASSERT_NE(at, std::string::npos) << r.out.substr(r.out.size() > 2000 ? r.out.size() - 2000 : 0);
  for (const char* c : {"bracket ", "washer ", "scratch ", "spot ", "missing_hole ", "chip "})
    EXPECT_NE(r.out.find(c, at), std::string::npos) << c;
  EXPECT_NE(r.out.find("frame 0: bracket (0) "), std::string::npos);
}

// Two stages: every part box with a track id carries the classifier's
// result, one of its labels; the defects inside the parts do not.
TEST(LaunchLines, TwoStageClassifiesEachTrackedPart) {
  const std::string out = out_dir("two_stage");
  const Result r = line("two_stage", settings(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = results(out + "/two_stage.jsonl");
  EXPECT_EQ(check_frames(lines, 300, "two_stage"), 300);
  const std::set<std::string> labels = {"ok", "scratch", "spot", "missing_hole", "chip"};
  int parts = 0;
  std::set<std::string> seen;
  for (const json& l : lines)
    for (const json& d : l["detections"]) {
      const bool part = d["label"] == "bracket" || d["label"] == "washer";
      if (!part || !d.contains("object_id")) {
        if (!part) {
          EXPECT_FALSE(d.contains("classification")) << d;
        }
        continue;
      }
      ++parts;
      ASSERT_TRUE(d.contains("classification")) << "frame " << l["frame"] << ": " << d;
      const json& c = d["classification"].is_array() ? d["classification"][0] : d["classification"];
      EXPECT_TRUE(labels.count(c["label"].get<std::string>())) << c;
      seen.insert(c["label"].get<std::string>());
    }
  EXPECT_GT(parts, 300);
  EXPECT_TRUE(seen.count("ok")) << "the good parts";
  EXPECT_GE(seen.size(), 3u) << "and several defects";
}

TEST(LaunchLines, QaLineOnTheClip) {
  const std::string out = out_dir("qa");
  const Result r = line("qa_line", settings(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = results(out + "/decisions.jsonl");
  ASSERT_EQ(lines.size(), 14u);
  EXPECT_EQ(lines.back()["passed"], 4);
  EXPECT_EQ(lines.back()["rejected"], 9);
}

// RTSP out (the server app with the camera line), then RTSP in twice: plain
// gst-launch rtspsrc and the reconnecting client.
TEST(LaunchLines, RtspOutAndIn) {
  const std::string out = out_dir("rtsp");
  const std::string port = std::to_string(free_port());
  Child server({"bash", root() + "/pipelines/launch_lines.sh", "rtsp_out"},
               settings(out, {{"PORT", port}, {"FRAMES", "0"}}));
  ASSERT_NE(server.wait_line(false, "serving rtsp://127.0.0.1:" + port + "/stream", 60), "")
      << server.err();
  const Result in = line("rtsp_in", settings(out, {{"PORT", port}}));
  EXPECT_EQ(in.exit_code, 0) << in.err;
  EXPECT_GE(check_frames(results(out + "/rtsp.jsonl"), 30, "rtsp_in"), 1);
  const Result client = line("rtsp_in_client", settings(out, {{"PORT", port}}));
  EXPECT_EQ(client.exit_code, 0) << client.err;
  // Exactly 30 frames taken from the server. Under load torchinfer drops
  // frames of the live stream (25 of 30 reached the JSON at load 17), and
  // the client does not report how many, so the count of lines is not
  // knowable here: at most 30, numbered in order, some inferred.
  EXPECT_NE(client.err.find("rtsp: 30 frames,"), std::string::npos) << client.err;
  const auto taken = results(out + "/rtsp_client.jsonl");
  EXPECT_LE(taken.size(), 30u);
  int inferred = 0;
  for (std::size_t i = 0; i < taken.size(); ++i) {
    EXPECT_EQ(taken[i]["frame"], i) << "client";
    inferred += taken[i].value("inferred", false);
  }
  EXPECT_GE(inferred, 1);
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(60), 0) << server.err();
}

TEST(LaunchLinesErrors, UnknownLineListsTheLines) {
  const Result r = line("nosuchline", settings(out_dir("bad")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("LINE: factory_camera from_file"), std::string::npos) << r.err;
}
