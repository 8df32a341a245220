// PartVerdicts: one verdict per tracked part from the evidence of the frames
// where it is whole, and the QA-line JSON lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "parts/core/decision_json.h"
#include "parts/core/part_verdicts.h"

using namespace torchinfer;

namespace {

constexpr int kW = 640, kH = 480;

QaPart part(int id, double x0, double x1, std::map<std::string, double> evidence = {},
            bool judged = true, const std::string& label = "bracket", double conf = 0.9) {
  QaPart p;
  p.id = id;
  p.label = label;
  p.confidence = conf;
  p.box = {x0, 100, x1, 300};
  p.judged = judged;
  p.evidence = std::move(evidence);
  return p;
}

QaFrame frame(std::int64_t i, std::vector<QaPart> parts, std::vector<int> ended = {}) {
  QaFrame f;
  f.index = i;
  f.pts = i * 33333333;
  f.width = kW;
  f.height = kH;
  f.parts = std::move(parts);
  f.ended = std::move(ended);
  return f;
}

QaRules max_rules(double threshold = 0.5) {
  QaRules r;
  r.rule = QaRule::kMax;
  r.defect_threshold = threshold;
  return r;
}

}  // namespace

// Enters cut by the left edge, is whole for three frames, leaves by the
// right edge: decided on the frame it is first cut again, once.
TEST(PartVerdicts, PartCrossingTheViewIsDecidedOnceWhenItLeaves) {
  PartVerdicts v({});
  EXPECT_TRUE(v.add_frame(frame(0, {part(1, 0, 150, {{"scratch", 0.99}})})).empty());
  for (int i = 1; i <= 3; ++i)
    EXPECT_TRUE(v.add_frame(frame(i, {part(1, 100 * i, 100 * i + 200, {{"ok", 0.8}})})).empty());
  const auto out = v.add_frame(frame(4, {part(1, 500, kW, {{"scratch", 0.99}})}));
  ASSERT_EQ(out.size(), 1u);
  const QaDecision& d = out[0];
  EXPECT_EQ(d.part, 1);
  EXPECT_EQ(d.label, "bracket");
  EXPECT_EQ(d.verdict, QaVerdict::kPass);
  EXPECT_EQ(d.reason, "left");
  EXPECT_EQ(d.top, "ok");
  EXPECT_DOUBLE_EQ(d.top_score, 0.8);
  ASSERT_EQ(d.scores.size(), 1u);
  EXPECT_DOUBLE_EQ(d.scores.at("ok"), 0.8);
  EXPECT_TRUE(d.defects.empty());
  EXPECT_EQ(d.first_frame, 0);
  EXPECT_EQ(d.last_frame, 4);
  EXPECT_EQ(d.first_pts, 0);
  EXPECT_EQ(d.last_pts, 4 * 33333333);
  EXPECT_EQ(d.frames_seen, 5);
  EXPECT_EQ(d.frames_whole, 3);
  EXPECT_EQ(d.frames_judged, 3);
  // Still in view (cut, or even whole again after a box jitter): never
  // decided twice, so every part is counted once.
  EXPECT_TRUE(v.add_frame(frame(5, {part(1, 560, kW)})).empty());
  EXPECT_TRUE(v.add_frame(frame(6, {part(1, 300, 500)}, {1})).empty());
  EXPECT_TRUE(v.flush().empty());
  EXPECT_EQ(v.counts().passed, 1);
  EXPECT_EQ(v.counts().rejected, 0);
  EXPECT_EQ(v.counts().incomplete, 0);
}

// Entering from the left, the box is whole for a frame, then cut by the left
// edge again (detector jitter): still entering, not leaving; nor is a cut by
// the top edge it moved towards by less than half its height. Leaving by the
// right edge, half its width past where it was first seen, decides.
TEST(PartVerdicts, OnlyACutTowardsWhereItTravelsIsLeaving) {
  PartVerdicts v({});
  EXPECT_TRUE(v.add_frame(frame(0, {part(1, 0, 190)})).empty());
  EXPECT_TRUE(v.add_frame(frame(1, {part(1, 3, 200, {{"ok", 0.9}})})).empty());
  EXPECT_TRUE(v.add_frame(frame(2, {part(1, 1, 205)})).empty());
  EXPECT_TRUE(v.add_frame(frame(3, {part(1, 20, 220, {{"ok", 0.9}})})).empty());
  QaPart top = part(1, 100, 300);
  top.box.y_min = 0;
  EXPECT_TRUE(v.add_frame(frame(4, {top})).empty());
  const auto out = v.add_frame(frame(5, {part(1, 200, kW)}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reason, "left");
  EXPECT_EQ(out[0].frames_judged, 2);
}

// Mean of the top-1 confidences per label: scratch (0.9 * 3) / 4 = 0.675
// beats ok 0.8 / 4 = 0.2.
TEST(PartVerdicts, VoteRejectsWhenADefectWinsTheMeanConfidence) {
  PartVerdicts v({});
  v.add_frame(frame(0, {part(7, 100, 300, {{"scratch", 0.9}})}));
  v.add_frame(frame(1, {part(7, 110, 310, {{"ok", 0.8}})}));
  v.add_frame(frame(2, {part(7, 120, 320, {{"scratch", 0.9}})}));
  v.add_frame(frame(3, {part(7, 130, 330, {{"scratch", 0.9}})}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, QaVerdict::kReject);
  EXPECT_EQ(out[0].reason, "eos");
  EXPECT_EQ(out[0].top, "scratch");
  EXPECT_DOUBLE_EQ(out[0].top_score, 0.675);
  EXPECT_DOUBLE_EQ(out[0].scores.at("ok"), 0.2);
  ASSERT_EQ(out[0].defects.size(), 1u);
  EXPECT_EQ(out[0].defects[0].first, "scratch");
  EXPECT_DOUBLE_EQ(out[0].defects[0].second, 0.675);
  EXPECT_EQ(v.counts().rejected, 1);
  EXPECT_EQ(v.counts().rejected_by_defect, (std::map<std::string, int>{{"scratch", 1}}));
}

// One confident bad view among four good ones does not reject; a frame
// judged with nothing found counts as a view for no label.
TEST(PartVerdicts, OneBadViewDoesNotOutvoteTheOthers) {
  PartVerdicts v({});
  for (int i = 0; i < 4; ++i) v.add_frame(frame(i, {part(2, 100, 300, {{"ok", 0.9}})}));
  v.add_frame(frame(4, {part(2, 100, 300, {{"chip", 0.99}})}));
  v.add_frame(frame(5, {part(2, 100, 300, {})}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, QaVerdict::kPass);
  EXPECT_EQ(out[0].frames_judged, 6);
  EXPECT_DOUBLE_EQ(out[0].scores.at("ok"), 0.6);
  EXPECT_DOUBLE_EQ(out[0].scores.at("chip"), 0.165);
}

// Cut views and views without a result of their own (reused, predicted)
// are no evidence.
TEST(PartVerdicts, EvidenceOnlyFromWholeJudgedViews) {
  PartVerdicts v(max_rules());
  v.add_frame(frame(0, {part(3, 0, 200, {{"spot", 0.99}})}));
  v.add_frame(frame(1, {part(3, 100, 300, {{"chip", 0.99}}, false)}));
  v.add_frame(frame(2, {part(3, 100, 300, {{"spot", 0.3}})}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, QaVerdict::kPass);
  EXPECT_EQ(out[0].scores, (std::map<std::string, double>{{"spot", 0.3}}));
  EXPECT_EQ(out[0].top, "spot");
  EXPECT_EQ(out[0].frames_seen, 3);
  EXPECT_EQ(out[0].frames_whole, 2);
  EXPECT_EQ(out[0].frames_judged, 1);
}

// Detector evidence: the best view of a defect class decides, at the
// threshold exactly; several defects listed best first.
TEST(PartVerdicts, MaxRuleRejectsAtTheThreshold) {
  PartVerdicts v(max_rules(0.6));
  v.add_frame(frame(0, {part(4, 100, 300, {{"spot", 0.6}})}));
  v.add_frame(frame(1, {part(4, 100, 300, {{"spot", 0.2}, {"chip", 0.9}})}));
  v.add_frame(frame(2, {part(5, 400, 600, {{"scratch", 0.59}})}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].part, 4);
  EXPECT_EQ(out[0].verdict, QaVerdict::kReject);
  EXPECT_EQ(out[0].defects,
            (std::vector<std::pair<std::string, double>>{{"chip", 0.9}, {"spot", 0.6}}));
  EXPECT_EQ(out[0].top, "chip");
  EXPECT_EQ(out[1].part, 5);
  EXPECT_EQ(out[1].verdict, QaVerdict::kPass) << "0.59 is below 0.6";
  EXPECT_EQ(out[1].top, "scratch");
  EXPECT_EQ(v.counts().rejected_by_defect, (std::map<std::string, int>{{"chip", 1}, {"spot", 1}}));
}

// The max rule has no good label: a label that is not a defect class
// (a classifier's "ok") neither wins nor rejects.
TEST(PartVerdicts, MaxRuleIgnoresLabelsThatAreNotDefects) {
  PartVerdicts v(max_rules());
  v.add_frame(frame(0, {part(4, 100, 300, {{"ok", 0.99}})}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, QaVerdict::kPass);
  EXPECT_EQ(out[0].top, "");
}

TEST(PartVerdicts, NeverWholeOrNeverJudgedIsIncomplete) {
  PartVerdicts v({});
  v.add_frame(frame(0, {part(1, 0, 200, {{"ok", 0.9}}), part(2, 300, 500, {}, false)}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 2u);
  for (const auto& d : out) EXPECT_EQ(d.verdict, QaVerdict::kIncomplete) << d.part;
  EXPECT_EQ(out[0].frames_whole, 0);
  EXPECT_EQ(out[1].frames_whole, 1);
  EXPECT_EQ(out[1].frames_judged, 0);
  EXPECT_EQ(v.counts().incomplete, 2);
}

TEST(PartVerdicts, EdgeMarginDecidesWhole) {
  QaRules r;
  r.edge_margin = 10;
  auto whole = [&](double x0, double x1) {
    PartVerdicts v(r);
    v.add_frame(frame(0, {part(1, x0, x1, {{"ok", 0.9}})}));
    const auto out = v.flush();
    return out.size() == 1 && out[0].frames_whole == 1;
  };
  EXPECT_FALSE(whole(9, 200));
  EXPECT_TRUE(whole(10, 200));
  EXPECT_TRUE(whole(300, kW - 10));
  EXPECT_FALSE(whole(300, kW - 9.5));
}

// torchtrack ended the track (lost): decided on that frame, even though
// the part was never seen leaving.
TEST(PartVerdicts, TrackEndDecides) {
  PartVerdicts v({});
  v.add_frame(frame(0, {part(9, 100, 300, {{"spot", 0.8}})}));
  EXPECT_TRUE(v.add_frame(frame(1, {}, {42})).empty()) << "an id never seen is no part";
  const auto out = v.add_frame(frame(2, {}, {9}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reason, "ended");
  EXPECT_EQ(out[0].verdict, QaVerdict::kReject);
  EXPECT_EQ(out[0].last_frame, 0);
  EXPECT_TRUE(v.flush().empty());
}

// A weaker part box lying inside another (the detector boxing half of a
// bracket) gives no evidence; a track that is only ever that is a
// duplicate, not a part. A part already decided still hides such boxes.
TEST(PartVerdicts, NestedPartBoxesAreDuplicatesNotParts) {
  PartVerdicts v({});
  auto inner = part(2, 110, 200, {{"chip", 0.99}}, true, "bracket", 0.6);
  v.add_frame(frame(0, {part(1, 100, 300, {{"ok", 0.9}}), inner}));
  inner.box.x_min = 510;
  inner.box.x_max = 600;
  v.add_frame(frame(1, {part(1, 500, kW), inner}));  // part 1 leaves
  // Less than 70 % inside: a part of its own.
  v.add_frame(frame(2, {part(3, 350, 450, {{"ok", 0.7}}, true, "washer", 0.5),
                        part(4, 400, 600, {{"ok", 0.8}})}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].part, 3);
  EXPECT_EQ(out[0].label, "washer");
  EXPECT_EQ(out[1].part, 4);
  EXPECT_EQ(v.counts().duplicates, 1);
  EXPECT_EQ(v.duplicate_ids(), (std::set<int>{2}));
  EXPECT_EQ(v.counts().passed, 3);
}

// Each part keeps its own evidence; detections of other classes are not parts.
TEST(PartVerdicts, PartsSideBySideKeepTheirOwnEvidence) {
  PartVerdicts v({});
  for (int i = 0; i < 3; ++i)
    v.add_frame(frame(i, {part(1, 50, 250, {{"ok", 0.9}}),
                          part(2, 350, 550, {{"missing_hole", 0.8}}, true, "washer"),
                          part(3, 60, 90, {{"ok", 1.0}}, true, "scratch")}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].verdict, QaVerdict::kPass);
  EXPECT_EQ(out[1].verdict, QaVerdict::kReject);
  EXPECT_EQ(out[1].top, "missing_hole");
  EXPECT_EQ(out[1].frames_judged, 3);
}

// Detector mode: a defect box is evidence for the part holding its centre,
// the one covering most of it; the best box per class counts.
TEST(PartVerdicts, DefectBoxesGoToThePartHoldingTheirCentre) {
  std::vector<QaPart> parts = {part(1, 100, 300), part(2, 250, 450)};
  attach_defect_boxes(parts, {{"spot", 0.7, {120, 150, 140, 170}},
                              {"spot", 0.9, {130, 150, 150, 170}},
                              {"spot", 0.8, {140, 150, 160, 170}},
                              {"chip", 0.6, {255, 150, 305, 170}},      // centre in both, more in 2
                              {"scratch", 0.99, {460, 150, 500, 170}},  // centre in none
                              {"chip", 0.5, {238, 150, 262, 170}}});    // centre in both, more in 1
  EXPECT_EQ(parts[0].evidence, (std::map<std::string, double>{{"spot", 0.9}, {"chip", 0.5}}));
  EXPECT_EQ(parts[1].evidence, (std::map<std::string, double>{{"chip", 0.6}}));
}

TEST(PartVerdicts, BadRulesAreRefused) {
  auto refused = [](QaRules r, const std::string& why) {
    try {
      PartVerdicts v(r);
      ADD_FAILURE() << "accepted: " << why;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), why);
    }
  };
  QaRules r;
  r.defect_threshold = 1.5;
  refused(r, "defect threshold must lie in 0..1");
  r = {};
  r.nested_cover = 0;
  refused(r, "nested cover must lie in (0, 1]");
  r = {};
  r.edge_margin = -1;
  refused(r, "edge margin must be >= 0");
  r = {};
  r.part_classes.clear();
  refused(r, "no part classes");
  r = {};
  r.defect_classes.clear();
  refused(r, "no defect classes");
  r = {};
  r.defect_classes.insert("washer");
  refused(r, "class 'washer' is both a part and a defect class");
}

TEST(QaJson, DecisionLine) {
  QaDecision d;
  d.part = 3;
  d.label = "washer";
  d.verdict = QaVerdict::kReject;
  d.reason = "left";
  d.scores = {{"chip", 0.75}, {"ok", 0.2}};
  d.top = "chip";
  d.top_score = 0.75;
  d.defects = {{"chip", 0.75}};
  d.first_pts = 1000;
  d.first_frame = 28;
  d.last_frame = 87;
  d.frames_seen = 60;
  d.frames_whole = 40;
  d.frames_judged = 20;
  EXPECT_EQ(decision_json(d),
            R"({"event":"part","part":3,"class":"washer","verdict":"reject","reason":"left",)"
            R"("defects":[{"class":"chip","confidence":0.75}],"evidence":{"rule":"vote",)"
            R"("frames_judged":20,"top":"chip","confidence":0.75,"scores":{"chip":0.75,"ok":0.2}},)"
            R"("first_pts":1000,"last_pts":null,"first_frame":28,"last_frame":87,)"
            R"("frames_seen":60,"frames_whole":40})");
  d.top.clear();
  EXPECT_NE(decision_json(d).find(R"("top":null)"), std::string::npos);
}

// --evidence: a reject's files join its evidence object, after the scores.
TEST(QaJson, DecisionLineWithEvidenceFiles) {
  QaDecision d;
  d.part = 3;
  d.label = "washer";
  d.verdict = QaVerdict::kReject;
  d.scores = {{"chip", 0.75}};
  const nlohmann::ordered_json files = {{"snapshot", "/e/qa-line-1-snapshot.jpg"},
                                        {"crop", "/e/qa-line-1-crop.jpg"},
                                        {"clip", "/e/qa-line-1-clip.mkv"},
                                        {"snapshot_frame", 40}};
  const std::string line = decision_json(d, files);
  EXPECT_NE(line.find(R"("scores":{"chip":0.75},"snapshot":"/e/qa-line-1-snapshot.jpg",)"
                      R"("crop":"/e/qa-line-1-crop.jpg","clip":"/e/qa-line-1-clip.mkv",)"
                      R"("snapshot_frame":40},"first_pts")"),
            std::string::npos)
      << line;
  EXPECT_EQ(decision_json(d, nullptr), decision_json(d));
  EXPECT_EQ(decision_json(d).find("snapshot"), std::string::npos);
}

TEST(QaJson, SummaryLine) {
  QaCounts c;
  c.passed = 4;
  c.rejected = 9;
  c.duplicates = 1;
  c.rejected_by_defect = {{"chip", 3}};
  QaRunInfo run;
  run.frames = 300;
  run.frames_inferred = 100;
  EXPECT_EQ(summary_json(c, run),
            R"({"event":"summary","passed":4,"rejected":9,"incomplete":0,"duplicates":1,)"
            R"("rejected_by_defect":{"chip":3},"frames":300,"frames_inferred":100,)"
            R"("interrupted":false})");
  EXPECT_EQ(
      nlohmann::json::parse(summary_json(c, run, {{"scores", {{"mota", 0.95}}}}))["scores"]["mota"],
      0.95);
}

namespace {

QaPart anomaly_part(int id, double x0, std::optional<double> score,
                    std::map<std::string, double> evidence = {}, bool judged = false) {
  QaPart p = part(id, x0, x0 + 200, std::move(evidence), judged);
  if (score) {
    p.anomaly = QaAnomalyView{};
    p.anomaly->score = *score;
    p.anomaly->threshold = 0.5;
    p.anomaly->peak_x = x0 + 10;
    p.anomaly->peak_y = 150;
    p.anomaly->regions = {{x0 + 5, 140, x0 + 15, 160}};
  }
  return p;
}

QaRules anomaly_alone() {
  QaRules r;
  r.supervised = false;
  r.anomaly = true;
  return r;
}

}  // namespace

// Anomaly alone: the part's score is the median of its whole views' scores
// (mean of the middle two for an even count); one odd view does not reject;
// the median view (the first with the upper middle score) keeps its frame,
// map peak and regions.
TEST(PartVerdicts, AnomalyMedianOfTheViewsDecides) {
  PartVerdicts v(anomaly_alone());
  v.add_frame(frame(0, {anomaly_part(3, 100, 0.2)}));
  v.add_frame(frame(1, {anomaly_part(3, 110, 0.9)}));  // one odd view
  v.add_frame(frame(2, {anomaly_part(3, 120, 0.3)}));
  v.add_frame(frame(3, {anomaly_part(3, 130, std::nullopt)}));  // reused: not a view
  v.add_frame(frame(4, {anomaly_part(3, 140, 0.4)}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].anomaly);
  const QaAnomalyVerdict& a = *out[0].anomaly;
  EXPECT_EQ(a.views, 4);
  EXPECT_EQ(a.view_scores, (std::vector<double>{0.2, 0.9, 0.3, 0.4}));
  EXPECT_DOUBLE_EQ(a.score, 0.35);
  EXPECT_FALSE(a.anomalous);
  EXPECT_EQ(a.view_frame, 4);
  EXPECT_DOUBLE_EQ(a.view.score, 0.4);
  EXPECT_DOUBLE_EQ(a.view.peak_x, 150);
  ASSERT_EQ(a.view.regions.size(), 1u);
  EXPECT_DOUBLE_EQ(a.view.regions[0].x_min, 145);
  EXPECT_EQ(out[0].verdict, QaVerdict::kPass);
  EXPECT_EQ(out[0].frames_judged, 4);
  EXPECT_TRUE(out[0].defects.empty());
  EXPECT_EQ(v.counts().passed, 1);
}

// At the threshold is anomalous (anomalib's >=): rejected, by "anomaly".
TEST(PartVerdicts, AnomalyMedianAtTheThresholdRejects) {
  PartVerdicts v(anomaly_alone());
  for (int i = 0; i < 3; ++i) v.add_frame(frame(i, {anomaly_part(4, 100 + 10 * i, 0.5)}));
  v.add_frame(frame(3, {anomaly_part(4, 130, 0.49)}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_DOUBLE_EQ(out[0].anomaly->score, 0.5);
  EXPECT_TRUE(out[0].anomaly->anomalous);
  EXPECT_EQ(out[0].verdict, QaVerdict::kReject);
  ASSERT_EQ(out[0].defects.size(), 1u);
  EXPECT_EQ(out[0].defects[0].first, "anomaly");
  EXPECT_EQ(v.counts().rejected_by_defect, (std::map<std::string, int>{{"anomaly", 1}}));
}

// Anomaly alone: a part with no anomaly view is incomplete, whatever the
// classifier evidence (not a judge here).
TEST(PartVerdicts, AnomalyAloneIgnoresClassifierEvidence) {
  PartVerdicts v(anomaly_alone());
  v.add_frame(frame(0, {anomaly_part(5, 100, std::nullopt, {{"scratch", 0.99}}, true)}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, QaVerdict::kIncomplete);
  EXPECT_FALSE(out[0].anomaly);
  EXPECT_EQ(out[0].frames_judged, 0);
}

// Beside the classifier: rejected when either says defective; a pass needs
// both. The vote's mean is over the classifier's own views.
TEST(PartVerdicts, AnomalyBesideTheClassifierRejectsIfEitherDoes) {
  QaRules r;
  r.anomaly = true;
  PartVerdicts v(r);
  // Part 1: classifier ok, anomaly anomalous -> reject by anomaly.
  // Part 2: classifier scratch, anomaly normal -> reject by scratch.
  // Part 3: both good -> pass. Part 3's second view has no classifier result.
  v.add_frame(frame(0, {anomaly_part(1, 10, 0.8, {{"ok", 0.9}}, true),
                        anomaly_part(2, 220, 0.1, {{"scratch", 0.9}}, true)}));
  v.add_frame(frame(1, {anomaly_part(3, 430, 0.1, {{"ok", 0.8}}, true)}));
  v.add_frame(frame(2, {anomaly_part(3, 431, 0.2, {}, false)}));
  auto out = v.flush();
  ASSERT_EQ(out.size(), 3u);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.part < b.part; });
  EXPECT_EQ(out[0].verdict, QaVerdict::kReject);
  ASSERT_EQ(out[0].defects.size(), 1u);
  EXPECT_EQ(out[0].defects[0].first, "anomaly");
  EXPECT_EQ(out[1].verdict, QaVerdict::kReject);
  ASSERT_EQ(out[1].defects.size(), 1u);
  EXPECT_EQ(out[1].defects[0].first, "scratch");
  EXPECT_FALSE(out[1].anomaly->anomalous);
  EXPECT_EQ(out[2].verdict, QaVerdict::kPass);
  EXPECT_EQ(out[2].frames_judged, 2);
  EXPECT_EQ(out[2].anomaly->views, 2);
  EXPECT_DOUBLE_EQ(out[2].scores.at("ok"), 0.8) << "mean over the classifier's one view";
  EXPECT_DOUBLE_EQ(out[2].anomaly->score, 0.15);
}

TEST(PartVerdicts, NoJudgeIsRefused) {
  QaRules r;
  r.supervised = false;
  EXPECT_THROW(PartVerdicts{r}, std::invalid_argument);
}

// The decision line carries the anomaly verdict, its view scores and where
// the median view looks wrong.
TEST(DecisionJson, AnomalyObjectWithPeakAndRegions) {
  PartVerdicts v(anomaly_alone());
  v.add_frame(frame(0, {anomaly_part(6, 100, 0.75)}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 1u);
  const auto j = nlohmann::json::parse(decision_json(out[0]));
  EXPECT_EQ(j["verdict"], "reject");
  EXPECT_EQ(j["anomaly"],
            nlohmann::json::parse(R"({"score":0.75,"anomalous":true,"threshold":0.5,"views":1,
              "view_scores":[0.75],"view":{"frame":0,"score":0.75,"peak":{"x":110.0,"y":150.0},
              "regions":[{"x_min":105.0,"y_min":140.0,"x_max":115.0,"y_max":160.0}]}})"));
  EXPECT_EQ(j["defects"], nlohmann::json::parse(R"([{"class":"anomaly","confidence":0.75}])"));
  PartVerdicts plain({});
  plain.add_frame(frame(0, {part(7, 100, 300, {{"ok", 0.9}})}));
  EXPECT_FALSE(nlohmann::json::parse(decision_json(plain.flush()[0])).contains("anomaly"));
}

// --gate: a part is decided on the frame its track crosses the gate, with
// the evidence so far; leaving the view afterwards decides nothing more.
TEST(PartVerdictsAtGate, DecidedWhenCrossingNotWhenLeaving) {
  QaRules r;
  r.at_gate = true;
  PartVerdicts v(r);
  EXPECT_TRUE(v.add_frame(frame(0, {part(1, 0, 150)})).empty());
  EXPECT_TRUE(v.add_frame(frame(1, {part(1, 100, 300, {{"scratch", 0.9}})})).empty());
  QaFrame at = frame(2, {part(1, 200, 400, {{"scratch", 0.8}})});
  at.crossed = {{1, false}};
  const auto out = v.add_frame(at);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].part, 1);
  EXPECT_EQ(out[0].reason, "gate");
  EXPECT_EQ(out[0].direction, "backward");
  EXPECT_EQ(out[0].verdict, QaVerdict::kReject);
  EXPECT_EQ(out[0].frames_judged, 2);
  EXPECT_EQ(out[0].last_frame, 2);
  // Leaving, crossing again, ending: decided once.
  QaFrame again = frame(3, {part(1, 500, kW, {{"ok", 0.99}})});
  again.crossed = {{1, true}};
  EXPECT_TRUE(v.add_frame(again).empty());
  EXPECT_TRUE(v.add_frame(frame(4, {}, {1})).empty());
  EXPECT_TRUE(v.flush().empty());
  EXPECT_EQ(v.counts().rejected, 1);
  EXPECT_EQ(v.counts().passed, 0);
  EXPECT_EQ(v.counts().not_at_gate, 0);
  const auto j = nlohmann::json::parse(decision_json(out[0]));
  EXPECT_EQ(j["reason"], "gate");
  EXPECT_EQ(j["direction"], "backward");
}

// Without the gate the same part is decided when it leaves, and its line
// has no direction.
TEST(PartVerdictsAtGate, WithoutGateLeavingDecidesAndCrossingsAreIgnored) {
  PartVerdicts v({});
  EXPECT_TRUE(v.add_frame(frame(0, {part(1, 0, 150)})).empty());
  QaFrame at = frame(1, {part(1, 200, 400, {{"ok", 0.8}})});
  at.crossed = {{1, true}};
  EXPECT_TRUE(v.add_frame(at).empty());
  const auto out = v.add_frame(frame(2, {part(1, 500, kW)}));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reason, "left");
  EXPECT_EQ(out[0].direction, "");
  EXPECT_FALSE(nlohmann::json::parse(decision_json(out[0])).contains("direction"));
}

// Tracks that end, leave or are open at the end without crossing are not
// decided but counted: one ended, one open at EOS; a nested duplicate stays
// a duplicate; a crossing of an unknown id or a decided one is ignored.
TEST(PartVerdictsAtGate, PartsThatNeverCrossAreCountedNotDecided) {
  QaRules r;
  r.at_gate = true;
  PartVerdicts v(r);
  QaFrame f0 = frame(0, {part(1, 100, 300, {{"ok", 0.9}}), part(2, 350, 550, {{"ok", 0.9}}),
                         part(3, 360, 440, {}, true, "bracket", 0.5)});
  f0.crossed = {{99, true}};
  EXPECT_TRUE(v.add_frame(f0).empty());
  EXPECT_TRUE(v.add_frame(frame(1, {part(2, 500, kW)}, {1, 3})).empty());
  EXPECT_TRUE(v.flush().empty());
  EXPECT_EQ(v.counts().not_at_gate, 2);
  EXPECT_EQ(v.counts().duplicates, 1);
  EXPECT_EQ(v.counts().passed + v.counts().rejected + v.counts().incomplete, 0);
}
