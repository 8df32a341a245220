// torchinfer-qa-line end to end: the demo clip's parts judged against its
// ground truth, a clean stop on SIGINT, and the command-line errors.
#include <algorithm>
#include <cmath>
#include <set>

#include "process.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

std::string app() {
  return env_or("TORCHINFER_QA_LINE", "torchinfer-qa-line");
}
std::string root() {
  return env_or("TORCHINFER_SOURCE_ROOT", ".");
}
std::string model() {
  return root() + "/models/demo/parts_detector.pt";
}
std::string clip() {
  return root() + "/models/demo/line.mkv";
}

json truth() {
  std::ifstream in(root() + "/models/demo/line.truth.json");
  return json::parse(in);
}

// Decision lines and the summary (last line) of one run.
struct Output {
  std::vector<json> parts;
  json summary;
};

Output parse_output(const std::string& text) {
  Output o;
  const auto lines = json_lines(text);
  EXPECT_FALSE(lines.empty());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i + 1 == lines.size()) {
      EXPECT_EQ(lines[i]["event"], "summary");
      o.summary = lines[i];
    } else {
      EXPECT_EQ(lines[i]["event"], "part") << i;
      o.parts.push_back(lines[i]);
    }
  }
  return o;
}

int frame_of(const json& pts, int fps) {
  return static_cast<int>(std::lround(pts.get<double>() * fps / 1e9));
}

}  // namespace

// The "must show": every part that is whole in view at some point in
// the clip is decided once, pass for the good ones, reject for the
// defective ones, within the frames the part is visible.
TEST(QaLine, ClipCountsMatchTheKnownPartsAndDefects) {
  const std::string out = testing::TempDir() + "qa_decisions.jsonl";
  const Result r = run({app(), "--clip", clip(), "--model", model(), "--output", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Output o = parse_output(read_file(out));
  const json t = truth();
  const int fps = t["fps"];

  int good = 0, defective = 0, cut = 0;
  std::vector<json> complete;
  for (const json& p : t["parts"]) {
    if (p["first_seen"].is_null()) continue;  // never in the clip
    if (p["first_full"].is_null()) {
      ++cut;
      continue;
    }
    complete.push_back(p);
    (p["defective"].get<bool>() ? defective : good)++;
  }
  ASSERT_EQ(complete.size(), 13u);
  EXPECT_EQ(o.summary["passed"], good);
  EXPECT_EQ(o.summary["rejected"], defective);
  EXPECT_EQ(o.summary["incomplete"], cut);
  EXPECT_EQ(o.summary["frames"], t["num_frames"]);
  EXPECT_EQ(o.summary["frames_inferred"], t["num_frames"]) << "a file is never skipped";
  EXPECT_EQ(o.summary["interrupted"], false);
  ASSERT_EQ(o.parts.size(), complete.size() + cut);

  // Each decision is the truth part of its class whose visible frames its
  // own frames overlap best (IoU of the frame ranges); that must pair them
  // one to one.
  std::set<int> matched;
  std::map<std::string, int> by_defect;
  for (std::size_t i = 0; i < o.parts.size(); ++i) {
    const json& d = o.parts[i];
    EXPECT_EQ(d["part"], i);
    const int first = frame_of(d["first_pts"], fps), last = frame_of(d["last_pts"], fps);
    EXPECT_EQ(d["first_frame"], first);
    EXPECT_EQ(d["last_frame"], last);
    const json* best = nullptr;
    double best_iou = 0;
    for (const json& p : complete) {
      const int seen0 = p["first_seen"], seen1 = p["last_seen"];
      const int inter = std::min(last, seen1) - std::max(first, seen0) + 1;
      const double iou = inter / double(std::max(last, seen1) - std::min(first, seen0) + 1);
      if (p["class"] == d["class"] && inter > 0 && iou > best_iou) {
        best = &p;
        best_iou = iou;
      }
    }
    ASSERT_NE(best, nullptr) << d;
    const json& p = *best;
    EXPECT_TRUE(matched.insert(p["id"].get<int>()).second) << "two decisions for part " << p["id"];
    EXPECT_GE(first, p["first_seen"].get<int>()) << d;
    EXPECT_LE(last, p["last_seen"].get<int>()) << d;
    EXPECT_GT(d["frames_whole"].get<int>(), 0) << d;
    EXPECT_EQ(d["verdict"], p["defective"].get<bool>() ? "reject" : "pass") << d << "\n" << p;
    std::set<std::string> found;
    for (const json& f : d["defects"]) {
      found.insert(f["class"].get<std::string>());
      EXPECT_GE(f["confidence"].get<double>(), 0.5);
      by_defect[f["class"]]++;
    }
    for (const json& want : p["defects"]) EXPECT_TRUE(found.count(want)) << want << " on " << d;
  }
  for (const auto& [label, n] : by_defect) EXPECT_EQ(o.summary["rejected_by_defect"][label], n);
  EXPECT_NE(r.err.find("qa-line: counts: 4 passed, 9 rejected"), std::string::npos) << r.err;
}

// The threshold reaches the rules: at 0.9 a part is rejected exactly when a
// defect class reached 0.9 on it, and the clip's weakest true defect (a chip
// at ~0.74 on the last washer) no longer rejects.
TEST(QaLine, ThresholdDecidesFromTheMaxConfidences) {
  const Result r =
      run({app(), "--clip", clip(), "--model", model(), "--quiet", "--defect-threshold", "0.9"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Output o = parse_output(r.out);
  int rejected = 0;
  for (const json& d : o.parts) {
    std::vector<std::string> above;
    for (const auto& [label, c] : d["max_confidence"].items())
      if (c.get<double>() >= 0.9) above.push_back(label);
    std::vector<std::string> listed;
    for (const json& f : d["defects"]) listed.push_back(f["class"]);
    std::sort(listed.begin(), listed.end());
    EXPECT_EQ(listed, above) << d;
    EXPECT_EQ(d["verdict"], above.empty() ? "pass" : "reject") << d;
    rejected += !above.empty();
  }
  EXPECT_EQ(o.summary["rejected"], rejected);
  EXPECT_LT(rejected, 9);
  EXPECT_EQ(o.summary["passed"].get<int>() + rejected, 13);
}

// SIGINT in the middle of the clip (played at its own pace): EOS drains the
// pipeline, the parts in view are decided, the counts printed, exit 0.
TEST(QaLine, SigintStopsCleanlyWithFinalCounts) {
  Child c({app(), "--model", model(), "--source",
           "filesrc location=" + clip() +
               " ! matroskademux ! jpegdec ! videoconvert ! video/x-raw,format=YUY2 ! "
               "identity sync=true"},
          {});
  // The first part leaves the view after ~2 s of the clip.
  ASSERT_NE(c.wait_line(false, "\"event\":\"part\"", 120), "") << c.err();
  c.signal(SIGINT);
  ASSERT_EQ(c.wait_exit(120), 0) << c.err();
  const std::string err = c.err();
  EXPECT_NE(err.find("qa-line: stopping: draining"), std::string::npos) << err;
  EXPECT_NE(err.find("qa-line: counts: "), std::string::npos) << err;
  EXPECT_NE(err.find("stopped by signal"), std::string::npos) << err;
  std::string text;
  for (const auto& l : c.out_lines()) text += l + "\n";
  const Output o = parse_output(text);
  EXPECT_EQ(o.summary["interrupted"], true);
  EXPECT_LT(o.summary["frames"].get<int>(), 300) << "stopped before the clip's end";
  EXPECT_GE(o.parts.size(), 2u) << "the first part, and the parts in view when stopped";
  int passed = 0, rejected = 0, incomplete = 0;
  for (const json& d : o.parts) {
    passed += d["verdict"] == "pass";
    rejected += d["verdict"] == "reject";
    incomplete += d["verdict"] == "incomplete";
  }
  EXPECT_EQ(o.summary["passed"], passed);
  EXPECT_EQ(o.summary["rejected"], rejected);
  EXPECT_EQ(o.summary["incomplete"], incomplete);
}

// A live camera that never ends stops on SIGINT too.
TEST(QaLine, SigintStopsALiveSource) {
  Child c({app(), "--model", model(), "--source",
           "videotestsrc is-live=true pattern=ball ! "
           "video/x-raw,format=YUY2,width=640,height=480,framerate=30/1"},
          {});
  ASSERT_NE(c.wait_line(true, "qa-line: analysing", 120), "") << c.err();
  c.signal(SIGINT);
  ASSERT_EQ(c.wait_exit(120), 0) << c.err();
  const auto lines = c.out_lines();
  ASSERT_FALSE(lines.empty());
  const json s = json::parse(lines.back());
  EXPECT_EQ(s["event"], "summary");
  EXPECT_EQ(s["interrupted"], true);
  EXPECT_GE(s["frames_inferred"].get<int>(), 1);
  EXPECT_NE(c.err().find("qa-line: counts: "), std::string::npos);
}

TEST(QaLineErrors, MissingModelIsTheElementsMessage) {
  const Result r = run({app(), "--clip", clip(), "--model", "/nonexistent/m.pt"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("qa-line: error from infer: Model file '/nonexistent/m.pt' not found"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "") << "no counts when nothing ran";
}

TEST(QaLineErrors, MissingClipIsNamed) {
  const Result r = run({app(), "--clip", "/nonexistent/clip.mkv", "--model", model()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("qa-line: clip /nonexistent/clip.mkv not found"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

// A source that fails once running: the element's message and its details.
TEST(QaLineErrors, SourceErrorIsTheElementsMessage) {
  const Result r = run({app(), "--model", model(), "--source",
                        "filesrc location=/nonexistent/clip.mkv ! matroskademux ! jpegdec ! "
                        "videoconvert"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("qa-line: error from filesrc0: Resource not found."), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("qa-line: details: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/clip.mkv"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(QaLineErrors, BadCommandLinesExitTwoWithAReason) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--defect-threshold", "1.5"}, "defect threshold must lie in 0..1"},
      {{"--defect-threshold", "-0.1"}, "defect threshold must lie in 0..1"},
      {{"--defect-threshold", "abc"}, "defect-threshold"},
      {{"--part-threshold", "7"}, "part threshold must lie in 0..1"},
      {{"--max-missed", "-1"}, "max missed frames must be >= 0"},
      {{"--defect-classes", "rust"}, "class 'rust' is not a label of"},
      {{"--part-classes", "bracket,washer", "--defect-classes", "washer"},
       "class 'washer' is both a part and a defect class"},
      {{"--part-classes", ","}, "no part classes"},
      {{"--device", "/dev/video0"}, "give exactly one of --clip, --device, --source"},
      {{"stray"}, "unexpected argument 'stray'"},
  };
  for (const auto& [args, reason] : cases) {
    std::vector<std::string> argv = {app(), "--clip", clip(), "--model", model()};
    argv.insert(argv.end(), args.begin(), args.end());
    const Result r = run(argv);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_EQ(r.out, "");
  }
  const Result none = run({app(), "--model", model()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("give exactly one of"), std::string::npos) << none.err;
  const Result bad_launch = run({app(), "--source", "nosuchelement ! fakesink"});
  EXPECT_EQ(bad_launch.exit_code, 2);
  EXPECT_NE(bad_launch.err.find("cannot build the pipeline"), std::string::npos) << bad_launch.err;
}

TEST(QaLineErrors, UnwritableOutputExitsOne) {
  const Result r =
      run({app(), "--clip", clip(), "--model", model(), "--output", "/nonexistent/d.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot write /nonexistent/d.jsonl"), std::string::npos) << r.err;
}

// A full disk loses every pass/reject line: that is an error, not a run
// that prints its counts and exits 0.
TEST(QaLineErrors, FullDiskIsAnErrorNotLostDecisions) {
  const Result r =
      run({app(), "--clip", clip(), "--model", model(), "--quiet", "--output", "/dev/full"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("qa-line: error: cannot write decisions to /dev/full: No space left on "
                       "device; stopping"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("qa-line: error: decisions were lost (output not written); exit status 1"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

// A sidecar beside the model nested 100k levels deep (it used to crash the
// app before the pipeline ran): one line naming the file, exit 2.
TEST(QaLineErrors, HostileSidecarIsNamed) {
  const std::string dir = testing::TempDir() + "qa_hostile";
  g_mkdir_with_parents(dir.c_str(), 0755);
  const std::string m = dir + "/net.pt";
  {
    std::ifstream in(model(), std::ios::binary);
    std::ofstream(m, std::ios::binary) << in.rdbuf();
    std::ofstream(dir + "/net.json")
        << "{\"labels\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  }
  const Result r = run({app(), "--clip", clip(), "--model", m});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(
      r.err.find("qa-line: model config '" + dir + "/net.json': nested deeper than 64 levels"),
      std::string::npos)
      << r.err;
}
