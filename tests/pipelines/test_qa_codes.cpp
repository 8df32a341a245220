// torchinfer-qa-line --codes / --require-code end to end on the demo clip,
// whose parts each carry a DataMatrix serial (models/demo/part_codes.py:
// some turned, some smudged, part 6's damaged beyond reading on purpose;
// line.truth.json has each part's code, text null on the damaged one).
// Each decision line must carry its part's exact serial from the truth
// file (the part found by its frames), the damaged part "code": null; with
// --require-code that part alone becomes a reject with the defect no_code,
// every other verdict as without it.
#include <set>

#include "qa_run.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

// The truth part a decision is about: the one whose frames in view best
// match the decision's (intersection over union of the two frame spans).
const json& truth_part_of(const json& truth, const json& d) {
  const json* best = nullptr;
  double best_iou = 0;
  const long f0 = d["first_frame"].get<long>(), f1 = d["last_frame"].get<long>();
  for (const json& p : truth["parts"]) {
    if (p["first_seen"].is_null()) continue;
    const long s0 = p["first_seen"].get<long>(), s1 = p["last_seen"].get<long>();
    const long inter = std::min(s1, f1) - std::max(s0, f0) + 1;
    const long uni = std::max(s1, f1) - std::min(s0, f0) + 1;
    const double iou = inter <= 0 ? 0.0 : double(inter) / double(uni);
    if (iou > best_iou) {
      best_iou = iou;
      best = &p;
    }
  }
  EXPECT_GT(best_iou, 0.5) << d;
  return best ? *best : truth["parts"][0];
}

Result run_codes(const char* flag) {
  return run({qa_app(), "--clip", qa_clip(), "--model", qa_model(), "--classifier", qa_classifier(),
              "--truth", qa_truth_path(), "--quiet", flag});
}

}  // namespace

TEST(QaLineCodes, EachDecisionCarriesItsPartsSerialFromTheTruthFile) {
  const json truth = qa_truth();
  const Result r = run_codes("--codes");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const QaOutput o = parse_qa_output(r.out);
  ASSERT_EQ(o.parts.size(), 13u);
  std::set<int> seen;
  int unreadable = 0;
  for (const json& d : o.parts) {
    const json& p = truth_part_of(truth, d);
    EXPECT_TRUE(seen.insert(p["id"].get<int>()).second) << "one decision per part: " << d;
    EXPECT_EQ(d["verdict"], p["verdict"]) << d;
    ASSERT_TRUE(d.contains("code")) << d;
    const json& want = p["code"];
    ASSERT_EQ(want["format"], "DataMatrix") << p;
    if (want["text"].is_null()) {
      EXPECT_TRUE(want["damaged"].get<bool>()) << p;
      EXPECT_TRUE(d["code"].is_null()) << "damaged on purpose, never read: " << d;
      unreadable++;
    } else {
      EXPECT_EQ(d["code"], (json{{"format", "DataMatrix"}, {"text", want["text"]}})) << d;
    }
  }
  EXPECT_EQ(unreadable, 1);
  EXPECT_EQ(o.summary["passed"], 4) << o.summary;
  EXPECT_EQ(o.summary["rejected"], 9) << o.summary;
  const json& c = o.summary["codes"];
  EXPECT_EQ(c["parts_with_code"], 12) << c;
  EXPECT_EQ(c["parts_without_code"], 1) << c;
  EXPECT_GE(c["views_read"].get<int>(), 12) << c;
  EXPECT_GT(c["views_skipped_known"].get<int>(), 0) << "once per track: " << c;
  EXPECT_EQ(c["views_tried"].get<int>(), c["views_read"].get<int>() + c["views_failed"].get<int>())
      << c;
  EXPECT_NE(r.err.find("qa-line: codes: 12 of 13 parts with a code, 1 without; views: "),
            std::string::npos)
      << r.err;
}

TEST(QaLineCodes, RequireCodeRejectsOnlyTheUnreadablePartWithNoCode) {
  const json truth = qa_truth();
  const Result r = run_codes("--require-code");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const QaOutput o = parse_qa_output(r.out);
  ASSERT_EQ(o.parts.size(), 13u);
  int no_code = 0;
  for (const json& d : o.parts) {
    const json& p = truth_part_of(truth, d);
    ASSERT_FALSE(d["defects"].is_null()) << d;
    if (!p["code"]["text"].is_null()) {
      EXPECT_EQ(d["code"]["text"], p["code"]["text"]) << d;
      EXPECT_EQ(d["verdict"], p["verdict"]) << "read, so judged as without the flag: " << d;
      continue;
    }
    // The damaged mark is on a good part: the judges pass it, no_code rejects it.
    no_code++;
    EXPECT_TRUE(d["code"].is_null()) << d;
    EXPECT_EQ(p["verdict"], "pass") << p;
    EXPECT_EQ(d["verdict"], "reject") << d;
    EXPECT_EQ(d["evidence"]["top"], "ok") << d;
    EXPECT_EQ(d["defects"], (json::array({{{"class", "no_code"}, {"confidence", 1.0}}}))) << d;
  }
  EXPECT_EQ(no_code, 1);
  const json& s = o.summary;
  EXPECT_EQ(s["passed"], 3) << s;
  EXPECT_EQ(s["rejected"], 10) << s;
  EXPECT_EQ(s["rejected_by_defect"]["no_code"], 1) << s;
  EXPECT_EQ(s["codes"]["parts_without_code"], 1) << s;
}
