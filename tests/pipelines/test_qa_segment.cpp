// torchinfer-qa-line --segmenter on the demo clip (./scripts/demo.sh
// --segment): the parts detector and torchtrack give the parts, the demo
// segmentation model (models/demo/defect_seg.pt) on the whole frame gives
// the defect masks, and a part is rejected for a defect of 100 px or more
// (0.995 mm² at 0.1 mm per pixel), median over its whole views: the rule of
// models/demo/eval_defect_seg.py, which gets 13/13 on the clip.
#include <algorithm>
#include <vector>

#include "qa_run.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

std::string seg_model() {
  return qa_root() + "/models/demo/defect_seg.pt";
}

// The demo's --segment arguments, `views` for --defect-area-views.
Result segment_run(const std::string& views) {
  return run({qa_app(),
              "--clip",
              qa_clip(),
              "--model",
              qa_model(),
              "--truth",
              qa_truth_path(),
              "--quiet",
              "--classifier",
              "none",
              "--segmenter",
              seg_model(),
              "--defect-threshold",
              "0.25",
              "--mm-per-pixel",
              "0.1",
              "--max-defect-area-mm2",
              "0.995",
              "--defect-area-views",
              views});
}

std::vector<std::string> verdicts(const QaOutput& o) {
  std::vector<std::string> v;
  for (const json& p : o.parts) v.push_back(p["verdict"]);
  return v;
}

}  // namespace

// 13 of 13 parts right, as the Python evaluation: 9 rejects, each for a
// defect mask over the limit, 4 passes (two of them with a false mask on
// two views, see below).
TEST(QaLineSegment, DemoClipJudgedByMedianDefectArea) {
  const Result r = segment_run("median");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const QaOutput o = parse_qa_output(r.out);
  const json& v = o.summary["scores"]["verdicts"];
  EXPECT_EQ(v["judged"], 13) << v;
  EXPECT_EQ(v["correct"], 13) << v << r.err;
  EXPECT_EQ(v["missing"], 0) << v;
  EXPECT_EQ(v["extra"], 0) << v;
  EXPECT_EQ(o.summary["passed"], 4) << o.summary;
  EXPECT_EQ(o.summary["rejected"], 9) << o.summary;
  EXPECT_EQ(o.summary["rejected_by_defect"], json::parse(R"({"defect_area": 9})"));
  EXPECT_EQ(verdicts(o), (std::vector<std::string>{"pass", "reject", "reject", "pass", "reject",
                                                   "reject", "pass", "reject", "reject", "reject",
                                                   "pass", "reject", "reject"}));
  for (const json& p : o.parts) {
    if (p["verdict"] != "reject") continue;
    ASSERT_EQ(p["defects"].size(), 1u) << p;
    EXPECT_EQ(p["defects"][0]["class"], "defect_area") << p;
    // Truth masks are 400-700 px; the model's come out a little small.
    EXPECT_GT(p["defects"][0]["area_mm2"].get<double>(), 3.5) << p;
    EXPECT_LT(p["defects"][0]["area_mm2"].get<double>(), 7.0) << p;
  }
  // Without the segmenter's boxes in it, the detection score is the
  // detector's (the segmenter's defects are scored by mask IoU instead).
  EXPECT_GT(o.summary["scores"]["detection"]["precision"].get<double>(), 0.9)
      << o.summary["scores"]["detection"];
}

// The largest mask over the views (the default rule) also rejects a good
// part on which the model finds a false defect on a single view: the model
// before the fine-tune on marked parts did on one or two (a chip of 468 px
// on track 19, a missing_hole of 805 px on track 12; precision=auto picks
// fp32 or bf16 by timing, so which was not fixed); the shipped one found
// none on this machine (13/13). Every true reject rejects; a wrong verdict
// can only be a good part rejected.
TEST(QaLineSegment, LargestViewRejectsEveryDefectivePart) {
  const Result r = segment_run("max");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const QaOutput o = parse_qa_output(r.out);
  const json& v = o.summary["scores"]["verdicts"];
  EXPECT_EQ(v["judged"], 13) << v;
  EXPECT_GE(v["correct"].get<int>(), 11) << v;
  EXPECT_EQ(v["correct"].get<int>() + o.summary["rejected"].get<int>(), 9 + 13)
      << "every wrong verdict is a good part rejected: " << o.summary;
  const std::vector<std::string> median = {"pass",   "reject", "reject", "pass",   "reject",
                                           "reject", "pass",   "reject", "reject", "reject",
                                           "pass",   "reject", "reject"};
  const std::vector<std::string> got = verdicts(o);
  ASSERT_EQ(got.size(), median.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (median[i] == "reject") EXPECT_EQ(got[i], "reject") << i;
}

// Command lines that would quietly judge otherwise than asked: exit 2,
// nothing on stdout, the fix named.
TEST(QaLineSegment, CommandLineErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--segmenter", seg_model()}, "--segmenter judges parts by defect area: add"},
      {{"--segmenter", seg_model(), "--mm-per-pixel", "0.1", "--max-defect-area-mm2", "1",
        "--classifier", qa_classifier()},
       "add --classifier none"},
      {{"--segmenter", qa_model(), "--mm-per-pixel", "0.1", "--max-defect-area-mm2", "1"},
       "the segmenter " + qa_model() + " gives no masks"},
      {{"--segmenter", ""}, "--segmenter '': give the segmentation model's file"},
      {{"--defect-area-views", "mean"}, "--defect-area-views 'mean': give max or median"},
      {{"--defect-area-views", "median"}, "--defect-area-views judges the --max-defect-area-mm2"},
  };
  for (const auto& [args, reason] : cases) {
    std::vector<std::string> argv = {qa_app(), "--clip", qa_clip(), "--model", qa_model()};
    if (std::find(args.begin(), args.end(), "--classifier") == args.end())
      argv.insert(argv.end(), {"--classifier", "none"});
    argv.insert(argv.end(), args.begin(), args.end());
    const Result r = run(argv);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_EQ(r.out, "");
  }
}

// On test models (build/tests/seg_part.pt: one bracket with a 256-pixel
// scratch mask, as detector and as segmenter): the area comes from the
// segmenter's mask only, once per view, and a segmenter whose outputs are
// NaN (seg_nan.pt) judges nothing, counted in the summary, exit status 4.
TEST(QaLineSegment, SegmenterMasksOnTestModelsAndInvalidResultsCounted) {
  const std::string models = env_or("TORCHINFER_TEST_MODELS", "build/tests");
  auto judge = [&](const std::string& segmenter) {
    return run({qa_app(), "--model", models + "/seg_part.pt", "--segmenter",
                models + "/" + segmenter, "--classifier", "none", "--part-classes", "bracket",
                "--source", "videotestsrc num-buffers=12 ! video/x-raw,width=128,height=128",
                "--max-defect-area-mm2", "2.5", "--mm-per-pixel", "0.1"});
  };
  const Result r = judge("seg_part.pt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const QaOutput o = parse_qa_output(r.out);
  ASSERT_EQ(o.parts.size(), 1u);
  EXPECT_EQ(o.parts[0]["verdict"], "reject");
  ASSERT_EQ(o.parts[0]["defects"].size(), 1u) << o.parts[0];
  EXPECT_NEAR(o.parts[0]["defects"][0]["area_mm2"].get<double>(), 2.56, 1e-9);
  EXPECT_EQ(o.summary["invalid_results"], json::parse(R"({"detector": 0, "segmenter": 0})"));
  const Result nan = judge("seg_nan.pt");
  EXPECT_EQ(nan.exit_code, 4) << nan.err;
  const QaOutput n = parse_qa_output(nan.out);
  ASSERT_EQ(n.parts.size(), 1u);
  EXPECT_EQ(n.parts[0]["verdict"], "pass") << "no mask judged: " << n.parts[0];
  EXPECT_EQ(n.summary["invalid_results"], json::parse(R"({"detector": 0, "segmenter": 12})"));
  EXPECT_NE(nan.err.find("12 of the segmenter"), std::string::npos) << nan.err;
}
