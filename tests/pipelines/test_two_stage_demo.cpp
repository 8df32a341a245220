// The two-stage QA line (detector -> torchtrack -> classifier on each part
// crop -> one verdict per part id) on the demo clip, scored by the app
// against the clip's truth (--truth), with the figures as bounds:
// MOTA >= 0.90, IDF1 >= 0.90, id switches <= 1 per 100 tracks, count error
// 0, verdict accuracy >= 98 % with the fp32 and the int8 classifier, and
// with the detector on every 3rd frame (short-term tracking) MOTA within
// 0.03 of every frame. The runs are shared between the tests of this file.
#include <algorithm>
#include <map>
#include <set>

#include "qa_run.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

struct QaRun {
  Result result;
  QaOutput out;
  std::string dir;
};

// One run per variant, kept for the other tests.
const QaRun& run_variant(const std::string& name, const std::vector<std::string>& extra) {
  static std::map<std::string, QaRun> runs;
  auto it = runs.find(name);
  if (it != runs.end()) return it->second;
  QaRun r;
  r.dir = testing::TempDir() + "two_stage_" + name;
  std::vector<std::string> argv = {qa_app(),        "--clip",   qa_clip(),
                                   "--model",       qa_model(), "--truth",
                                   qa_truth_path(), "--output", r.dir + ".jsonl"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  r.result = run(argv);
  if (r.result.exit_code == 0) r.out = parse_qa_output(read_file(r.dir + ".jsonl"));
  return runs[name] = std::move(r);
}

const QaRun& every_frame_fp32() {
  static const std::string dir = testing::TempDir() + "two_stage_demo_out";
  return run_variant("fp32", {"--classifier", qa_classifier(), "--out", dir});
}

// The figures every full run must meet, and the exact counts of the clip.
void expect_figures(const QaRun& r) {
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const json& s = r.out.summary["scores"];
  const json& t = s["tracking"];
  EXPECT_GE(t["mota"].get<double>(), 0.90) << t;
  EXPECT_GE(t["idf1"].get<double>(), 0.90) << t;
  // At most 1 per 100 tracks: with the clip's 13, none.
  EXPECT_LE(t["id_switches"].get<int>() * 100, t["tracks"].get<int>()) << t;
  EXPECT_EQ(t["count_error"], 0) << t;
  EXPECT_EQ(t["truth_parts"], 13) << t;
  EXPECT_GE(s["verdicts"]["accuracy"].get<double>(), 0.98) << s["verdicts"] << r.result.err;
  EXPECT_EQ(s["verdicts"]["judged"], 13);
  EXPECT_EQ(s["verdicts"]["extra"], 0);
  EXPECT_EQ(r.out.summary["passed"], 4) << r.out.summary;
  EXPECT_EQ(r.out.summary["rejected"], 9) << r.out.summary;
  EXPECT_EQ(r.out.summary["incomplete"], 0) << r.out.summary;
  EXPECT_EQ(r.out.summary["frames"], 300);
  EXPECT_EQ(r.out.parts.size(), 13u) << "one decision per part id, duplicates dropped";
}

int frame_of(const json& pts, int fps) {
  return static_cast<int>(std::lround(pts.get<double>() * fps / 1e9));
}

// Each decision is the truth part of its class whose visible frames its own
// overlap best; that must pair them one to one, with the truth's verdict,
// and a rejected part's top defect is one the part has.
void expect_paired_with_truth(const QaOutput& o) {
  const json t = qa_truth();
  const int fps = t["fps"];
  std::set<int> matched, ids;
  for (const json& d : o.parts) {
    EXPECT_TRUE(ids.insert(d["part"].get<int>()).second) << "part id decided twice: " << d;
    const int first = frame_of(d["first_pts"], fps), last = frame_of(d["last_pts"], fps);
    EXPECT_EQ(d["first_frame"], first);
    EXPECT_EQ(d["last_frame"], last);
    const json* best = nullptr;
    double best_iou = 0;
    for (const json& p : t["parts"]) {
      if (p["first_full"].is_null()) continue;
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
    EXPECT_GT(d["evidence"]["frames_judged"].get<int>(), 0) << d;
    EXPECT_EQ(d["verdict"], p["defective"].get<bool>() ? "reject" : "pass") << d << "\n" << p;
    if (d["verdict"] == "reject") {
      ASSERT_EQ(d["defects"].size(), 1u) << d;
      EXPECT_EQ(d["defects"][0]["class"], d["evidence"]["top"]) << d;
      EXPECT_NE(std::find(p["defects"].begin(), p["defects"].end(), d["evidence"]["top"]),
                p["defects"].end())
          << d << "\n"
          << p;
    } else {
      EXPECT_EQ(d["evidence"]["top"], "ok") << d;
    }
  }
}

}  // namespace

TEST(TwoStageDemo, Fp32ClassifierMeetsTheFigures) {
  const QaRun& r = every_frame_fp32();
  expect_figures(r);
  expect_paired_with_truth(r.out);
  EXPECT_EQ(r.out.summary["frames_inferred"], 300) << "a file is never skipped";
  EXPECT_EQ(r.out.summary["detector"]["inference_interval"], 1);
  for (const json& d : r.out.parts) EXPECT_EQ(d["evidence"]["rule"], "vote") << d;
  EXPECT_NE(r.result.err.find("qa-line: counts: 4 passed, 9 rejected"), std::string::npos)
      << r.result.err;
  EXPECT_NE(r.result.err.find("qa-line: verdicts: 13 of 13 parts right"), std::string::npos)
      << r.result.err;
}

// --out: the per-frame JSON with ids (and the classifier's reading on the
// part boxes), the annotated video and a snapshot.
TEST(TwoStageDemo, WritesTheDemoOutputs) {
  const QaRun& r = every_frame_fp32();
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const std::string dir = testing::TempDir() + "two_stage_demo_out";
  const auto frames = json_lines(read_file(dir + "/results.jsonl"));
  ASSERT_EQ(frames.size(), 300u);
  std::set<int> ids;
  int classified = 0;
  for (const json& f : frames)
    for (const json& d : f["detections"]) {
      if (d.contains("object_id")) ids.insert(d["object_id"].get<int>());
      classified += d.contains("classification");
    }
  EXPECT_GE(ids.size(), 13u);
  EXPECT_GT(classified, 300) << "parts carry the classifier's result";
  const std::string png = read_file(dir + "/snapshot.png");
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  EXPECT_GT(read_file(dir + "/annotated.mkv").size(), 100000u);
}

TEST(TwoStageDemo, Int8ClassifierMeetsTheFigures) {
  const QaRun& r = run_variant("int8", {"--classifier", qa_classifier(true)});
  expect_figures(r);
  expect_paired_with_truth(r.out);
}

// The detector on every 3rd frame, torchtrack's short-term tracking showing
// predicted boxes in between: a third of the frames inferred, tracking
// within 0.03 MOTA of every frame, each part still counted once.
TEST(TwoStageDemo, IntervalThreeTracksWithinThreePointsOfEveryFrame) {
  const QaRun& every = every_frame_fp32();
  ASSERT_EQ(every.result.exit_code, 0) << every.result.err;
  const QaRun& r =
      run_variant("interval3", {"--classifier", qa_classifier(), "--inference-interval", "3",
                                "--tracking-type", "short-term"});
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  EXPECT_EQ(r.out.summary["frames"], 300);
  EXPECT_EQ(r.out.summary["frames_inferred"], 100);
  EXPECT_EQ(r.out.summary["detector"]["inference_interval"], 3);
  const json& t = r.out.summary["scores"]["tracking"];
  const double base = every.out.summary["scores"]["tracking"]["mota"];
  EXPECT_GE(t["mota"].get<double>(), base - 0.03) << t << "\nevery frame: " << base;
  EXPECT_EQ(t["count_error"], 0) << t;
  EXPECT_EQ(t["id_switches"], 0) << t;
}
