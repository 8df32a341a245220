// Part tracking and pass/reject rules of the QA-line app, on scripted belts.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "qa/decision_json.h"
#include "qa/part_tracker.h"

using namespace torchinfer;

namespace {

constexpr int kW = 640, kH = 480;
constexpr std::int64_t kFrameNs = 33333333;

QaDetection det(const std::string& label, double conf, double x0, double y0, double x1, double y1) {
  return {label, conf, {x0, y0, x1, y1}};
}

// A 100x80 part whose left edge is at x, clipped to the frame as a detector's
// box is.
QaDetection part_at(double x, const std::string& label = "bracket", double conf = 0.9) {
  return det(label, conf, std::max(0.0, x), 200, std::min<double>(kW, x + 100), 280);
}

struct Belt {
  PartTracker tracker;
  std::int64_t frame = 0;
  std::vector<QaDecision> decided;
  explicit Belt(QaRules r = {}) : tracker(std::move(r)) {}
  void step(const std::vector<QaDetection>& dets) {
    for (auto& d : tracker.add_frame(dets, frame * kFrameNs, frame, kW, kH))
      decided.push_back(std::move(d));
    ++frame;
  }
  void flush() {
    for (auto& d : tracker.flush()) decided.push_back(std::move(d));
  }
};

}  // namespace

// Enters at the left edge (x = -60), 12 px per frame, and leaves at the right
// (the detector loses it when 40 px are left in view).
TEST(PartTracker, OnePartCrossingTheBeltPassesOnceAfterLeaving) {
  Belt belt;
  int seen = 0, whole = 0;
  for (double x = -60; x < kW - 40; x += 12) {
    belt.step({part_at(x)});
    ++seen;
    whole += x >= 2 && x + 100 <= kW - 2;
  }
  EXPECT_TRUE(belt.decided.empty()) << "decided while still in view";
  for (int i = 0; i < 10; ++i) belt.step({});
  EXPECT_TRUE(belt.decided.empty()) << "max_missed = 10 frames unseen keep the track open";
  belt.step({});
  ASSERT_EQ(belt.decided.size(), 1u);
  const QaDecision& d = belt.decided[0];
  EXPECT_EQ(d.part, 0);
  EXPECT_EQ(d.label, "bracket");
  EXPECT_EQ(d.verdict, QaVerdict::kPass);
  EXPECT_EQ(d.frames_seen, seen);
  EXPECT_EQ(d.frames_whole, whole);
  EXPECT_EQ(seen, 55);
  EXPECT_EQ(whole, 44);  // x = 12 .. 528
  EXPECT_EQ(d.first_frame, 0);
  EXPECT_EQ(d.last_frame, 54);
  EXPECT_EQ(d.first_pts, 0);
  EXPECT_EQ(d.last_pts, 54 * kFrameNs);
  EXPECT_TRUE(d.max_defect.empty());
  EXPECT_EQ(belt.tracker.counts().passed, 1);
  EXPECT_EQ(belt.tracker.counts().rejected, 0);
}

TEST(PartTracker, DefectInsideAWholePartAtThresholdRejects) {
  Belt belt;
  for (double x = 100; x < 200; x += 12) {
    std::vector<QaDetection> dets = {part_at(x)};
    if (x == 136) dets.push_back(det("scratch", 0.5, x + 10, 210, x + 30, 230));
    if (x == 148) dets.push_back(det("scratch", 0.7, x + 10, 210, x + 30, 230));
    if (x == 160) dets.push_back(det("spot", 0.2, x + 50, 250, x + 60, 260));
    belt.step(dets);
  }
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 1u);
  const QaDecision& d = belt.decided[0];
  EXPECT_EQ(d.verdict, QaVerdict::kReject);
  EXPECT_DOUBLE_EQ(d.max_defect.at("scratch"), 0.7);
  EXPECT_DOUBLE_EQ(d.max_defect.at("spot"), 0.2);
  const auto found = d.defects(0.5);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].first, "scratch");
  EXPECT_EQ(belt.tracker.counts().rejected, 1);
  EXPECT_EQ(belt.tracker.counts().rejected_by_defect.at("scratch"), 1);
  EXPECT_EQ(belt.tracker.counts().rejected_by_defect.count("spot"), 0u);
}

TEST(PartTracker, DefectJustBelowThresholdPasses) {
  QaRules r;
  r.defect_threshold = 0.8;
  Belt belt(r);
  for (int i = 0; i < 5; ++i)
    belt.step({part_at(100 + 12 * i), det("chip", 0.79, 130 + 12 * i, 210, 150 + 12 * i, 230)});
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 1u);
  EXPECT_EQ(belt.decided[0].verdict, QaVerdict::kPass);
  EXPECT_DOUBLE_EQ(belt.decided[0].max_defect.at("chip"), 0.79);
  EXPECT_TRUE(belt.decided[0].defects(0.8).empty());
}

// Evidence only while the camera sees the whole part.
TEST(PartTracker, DefectSeenOnlyWhileThePartIsCutIsNoEvidence) {
  Belt belt;
  belt.step({part_at(-40), det("spot", 0.99, 10, 210, 30, 230)});
  belt.step({part_at(-28), det("spot", 0.99, 22, 210, 42, 230)});
  belt.step({part_at(-16)});
  belt.step({part_at(-4)});
  belt.step({part_at(8)});
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 1u);
  EXPECT_EQ(belt.decided[0].verdict, QaVerdict::kPass);
  EXPECT_EQ(belt.decided[0].frames_whole, 1);
  EXPECT_TRUE(belt.decided[0].max_defect.empty());
}

TEST(PartTracker, DefectWithItsCentreOutsideThePartIsIgnored) {
  Belt belt;
  for (int i = 0; i < 4; ++i)  // part 100..200 x 200..280; defect centre at y 290
    belt.step({part_at(100), det("spot", 0.99, 150, 270, 170, 310)});
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 1u);
  EXPECT_EQ(belt.decided[0].verdict, QaVerdict::kPass);
}

TEST(PartTracker, DefectGoesToThePartCoveringMostOfIt) {
  Belt belt;
  // Boxes overlap at x 180..200; the defect 185..215 has its centre (200) in
  // both, and lies mostly in the second.
  for (int i = 0; i < 4; ++i)
    belt.step({part_at(100), part_at(180, "washer"), det("chip", 0.9, 185, 230, 215, 250)});
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 2u);
  EXPECT_EQ(belt.decided[0].label, "bracket");
  EXPECT_EQ(belt.decided[0].verdict, QaVerdict::kPass);
  EXPECT_EQ(belt.decided[1].label, "washer");
  EXPECT_EQ(belt.decided[1].verdict, QaVerdict::kReject);
}

TEST(PartTracker, PartNeverWholeIsIncomplete) {
  Belt belt;
  for (double x = -90; x < -10; x += 12) belt.step({part_at(x), det("chip", 0.95, 1, 210, 9, 220)});
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 1u);
  EXPECT_EQ(belt.decided[0].verdict, QaVerdict::kIncomplete);
  EXPECT_EQ(belt.decided[0].frames_whole, 0);
  EXPECT_EQ(belt.tracker.counts().incomplete, 1);
  EXPECT_EQ(belt.tracker.counts().rejected, 0);
}

TEST(PartTracker, EdgeMarginDecidesWhole) {
  QaRules r;
  r.edge_margin = 0;
  Belt belt(r);
  for (int i = 0; i < 3; ++i) belt.step({part_at(0)});  // touches the left edge
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 1u);
  EXPECT_EQ(belt.decided[0].verdict, QaVerdict::kPass);
  Belt strict;  // default margin 2 px: the same part is never whole
  for (int i = 0; i < 3; ++i) strict.step({part_at(0)});
  strict.flush();
  ASSERT_EQ(strict.decided.size(), 1u);
  EXPECT_EQ(strict.decided[0].verdict, QaVerdict::kIncomplete);
}

TEST(PartTracker, ShortTracksAreSpuriousNotParts) {
  Belt belt;
  belt.step({part_at(300)});
  belt.step({part_at(312)});
  for (int i = 0; i < 11; ++i) belt.step({});
  EXPECT_TRUE(belt.decided.empty());
  for (int i = 0; i < 3; ++i) belt.step({part_at(100 + 12 * i)});
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 1u);
  EXPECT_EQ(belt.decided[0].part, 0) << "spurious tracks take no part number";
  EXPECT_EQ(belt.tracker.counts().spurious, 1);
  EXPECT_EQ(belt.tracker.counts().passed, 1);
}

TEST(PartTracker, MissedFramesWithinTheLimitKeepOnePart) {
  Belt belt;
  belt.step({part_at(100)});
  for (int i = 0; i < 10; ++i) belt.step({});
  belt.step({part_at(112)});
  belt.step({part_at(124)});
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 1u);
  EXPECT_EQ(belt.decided[0].frames_seen, 3);
  EXPECT_EQ(belt.decided[0].last_frame, 12);

  Belt gap;  // one frame more than max_missed: two tracks
  for (int i = 0; i < 3; ++i) gap.step({part_at(100)});
  for (int i = 0; i < 11; ++i) gap.step({});
  ASSERT_EQ(gap.decided.size(), 1u);
  EXPECT_EQ(gap.decided[0].last_frame, 2);
  for (int i = 0; i < 3; ++i) gap.step({part_at(100)});
  gap.flush();
  ASSERT_EQ(gap.decided.size(), 2u);
  EXPECT_EQ(gap.decided[1].part, 1);
  EXPECT_EQ(gap.decided[1].first_frame, 14);
}

TEST(PartTracker, TooFarAJumpIsAnotherPart) {
  Belt belt;
  for (int i = 0; i < 3; ++i) belt.step({part_at(100)});
  for (int i = 0; i < 3; ++i) belt.step({part_at(170)});  // IoU 30/170 < 0.3
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 2u);
  EXPECT_EQ(belt.decided[0].first_frame, 0);
  EXPECT_EQ(belt.decided[1].first_frame, 3);
}

TEST(PartTracker, ClassIsTheMostConfidentVote) {
  Belt belt;
  belt.step({part_at(100, "washer", 0.95)});
  belt.step({part_at(112, "bracket", 0.6)});
  belt.step({part_at(124, "bracket", 0.6)});
  belt.step({part_at(136, "washer", 0.5)});
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 1u);
  EXPECT_EQ(belt.decided[0].label, "washer");  // 1.45 against 1.2
}

TEST(PartTracker, WeakAndNestedPartBoxesAreIgnored) {
  Belt belt;
  for (int i = 0; i < 4; ++i)
    belt.step({part_at(100), det("bracket", 0.8, 120, 210, 160, 250),  // inside the part
               det("washer", 0.49, 400, 100, 500, 200)});              // under part threshold
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 1u);
  EXPECT_EQ(belt.decided[0].frames_seen, 4);
}

TEST(PartTracker, TwoPartsSideBySideKeepTheirTracks) {
  Belt belt;
  for (int i = 0; i < 20; ++i) {
    std::vector<QaDetection> dets = {part_at(300 + 12 * i, "washer"), part_at(50 + 12 * i)};
    if (i == 10)
      dets.push_back(det("missing_hole", 0.9, 300 + 12 * i + 40, 230, 300 + 12 * i + 60, 250));
    belt.step(dets);
  }
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 2u);
  for (const auto& d : belt.decided) {
    EXPECT_EQ(d.frames_seen, 20);
    EXPECT_EQ(d.verdict, d.label == "washer" ? QaVerdict::kReject : QaVerdict::kPass);
  }
}

TEST(PartTracker, OtherClassesAreIgnored) {
  QaRules r;
  r.part_classes = {"washer"};
  r.defect_classes = {"chip"};
  Belt belt(r);
  for (int i = 0; i < 4; ++i)
    belt.step({part_at(100), part_at(300, "washer"), det("scratch", 0.99, 320, 220, 340, 240)});
  belt.flush();
  ASSERT_EQ(belt.decided.size(), 1u);
  EXPECT_EQ(belt.decided[0].label, "washer");
  EXPECT_EQ(belt.decided[0].verdict, QaVerdict::kPass);
}

TEST(PartTracker, BadRulesAreRefused) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto bad = [](auto change) {
    QaRules r;
    change(r);
    EXPECT_THROW(PartTracker{r}, std::invalid_argument);
    EXPECT_THROW(validate(r), std::invalid_argument);
  };
  bad([](QaRules& r) { r.defect_threshold = 1.5; });
  bad([](QaRules& r) { r.defect_threshold = -0.1; });
  bad([&](QaRules& r) { r.defect_threshold = nan; });
  bad([](QaRules& r) { r.part_threshold = 2; });
  bad([](QaRules& r) { r.match_iou = 0; });
  bad([](QaRules& r) { r.nested_cover = 1.2; });
  bad([](QaRules& r) { r.max_missed = -1; });
  bad([](QaRules& r) { r.min_frames = 0; });
  bad([&](QaRules& r) { r.edge_margin = nan; });
  bad([](QaRules& r) { r.part_classes.clear(); });
  bad([](QaRules& r) { r.defect_classes.clear(); });
  bad([](QaRules& r) { r.defect_classes.insert("washer"); });
  EXPECT_NO_THROW(validate(QaRules{}));
}

TEST(QaJson, DecisionLine) {
  QaDecision d;
  d.part = 3;
  d.label = "washer";
  d.verdict = QaVerdict::kReject;
  d.max_defect = {{"chip", 0.25}, {"scratch", 0.75}, {"spot", 0.5}};
  d.first_pts = 1000;
  d.last_pts = 2000;
  d.first_frame = 30;
  d.last_frame = 60;
  d.frames_seen = 31;
  d.frames_whole = 20;
  EXPECT_EQ(
      decision_json(d, 0.5),
      R"({"event":"part","part":3,"class":"washer","verdict":"reject",)"
      R"("defects":[{"class":"scratch","confidence":0.75},{"class":"spot","confidence":0.5}],)"
      R"("max_confidence":{"chip":0.25,"scratch":0.75,"spot":0.5},"first_pts":1000,)"
      R"("last_pts":2000,"first_frame":30,"last_frame":60,"frames_seen":31,"frames_whole":20})");
  d.first_pts = d.last_pts = -1;
  d.max_defect.clear();
  d.verdict = QaVerdict::kIncomplete;
  EXPECT_NE(decision_json(d, 0.5).find(R"("verdict":"incomplete","defects":[],)"
                                       R"("max_confidence":{},"first_pts":null,"last_pts":null)"),
            std::string::npos);
}

TEST(QaJson, SummaryLine) {
  QaCounts c;
  c.passed = 4;
  c.rejected = 9;
  c.incomplete = 1;
  c.spurious = 2;
  c.rejected_by_defect = {{"chip", 2}, {"spot", 3}};
  EXPECT_EQ(summary_json(c, {300, 150, true}),
            R"({"event":"summary","passed":4,"rejected":9,"incomplete":1,"spurious":2,)"
            R"("rejected_by_defect":{"chip":2,"spot":3},"frames":300,"frames_inferred":150,)"
            R"("interrupted":true})");
}
