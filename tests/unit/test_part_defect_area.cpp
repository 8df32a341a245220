// The QA line's defect-area rule (QaRules::max_defect_area_mm2): a part is
// rejected for a defect mask larger than the limit, not for a small one.
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "parts/core/decision_json.h"
#include "parts/core/part_verdicts.h"

using namespace torchinfer;

namespace {

// A bracket whole in a 640x480 frame, with one scratch box of this
// confidence and mask area (mm²) on it.
QaFrame view(std::int64_t i, double confidence, std::optional<double> area) {
  QaPart p;
  p.id = 1;
  p.label = "bracket";
  p.confidence = 0.9;
  p.box = {100, 100, 300, 300};
  p.judged = true;
  std::vector<QaPart> parts{p};
  attach_defect_boxes(parts, {{"scratch", confidence, {150, 150, 160, 160}, area}});
  QaFrame f;
  f.index = i;
  f.width = 640;
  f.height = 480;
  f.parts = parts;
  return f;
}

QaRules area_rules(std::optional<double> limit) {
  QaRules r;
  r.rule = QaRule::kMax;
  r.defect_threshold = 0.5;
  r.max_defect_area_mm2 = limit;
  return r;
}

QaDecision judge(const QaRules& rules, const std::vector<std::pair<double, double>>& views) {
  PartVerdicts v(rules);
  std::int64_t i = 0;
  for (const auto& [conf, area] : views) v.add_frame(view(i++, conf, area));
  auto out = v.flush();
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? QaDecision() : out[0];
}

}  // namespace

TEST(DefectArea, MaskLargerThanTheLimitRejects) {
  const QaDecision d = judge(area_rules(0.5), {{0.9, 0.25}, {0.8, 0.75}, {0.9, 0.5}});
  EXPECT_EQ(d.verdict, QaVerdict::kReject);
  ASSERT_EQ(d.defects.size(), 1u);
  EXPECT_EQ(d.defects[0].first, "defect_area");
  EXPECT_DOUBLE_EQ(d.defects[0].second, 0.75);  // the largest view
  EXPECT_DOUBLE_EQ(d.defect_area_mm2.at("scratch"), 0.75);
  const auto j = nlohmann::json::parse(decision_json(d, nullptr));
  EXPECT_EQ(j["defects"][0],
            nlohmann::json::parse(R"({"class": "defect_area", "area_mm2": 0.75})"));
  EXPECT_EQ(j["evidence"]["defect_area_mm2"]["scratch"], 0.75);
}

TEST(DefectArea, SmallDefectPassesWhereTheConfidenceRuleRejects) {
  const std::vector<std::pair<double, double>> views{{0.9, 0.25}, {0.9, 0.5}};
  EXPECT_EQ(judge(area_rules(std::nullopt), views).verdict, QaVerdict::kReject);
  const QaDecision d = judge(area_rules(0.5), views);  // 0.5 is not larger than 0.5
  EXPECT_EQ(d.verdict, QaVerdict::kPass);
  EXPECT_TRUE(d.defects.empty());
}

TEST(DefectArea, LargeMaskOfAnUnsureDefectPasses) {
  EXPECT_EQ(judge(area_rules(0.5), {{0.4, 3.0}}).verdict, QaVerdict::kPass);
}

TEST(DefectArea, CountsRejectsAsDefectArea) {
  PartVerdicts v(area_rules(0.1));
  v.add_frame(view(0, 0.9, 0.2));
  v.flush();
  EXPECT_EQ(v.counts().rejected, 1);
  EXPECT_EQ(v.counts().rejected_by_defect.at("defect_area"), 1);
}

TEST(DefectArea, RulesThatCannotWorkAreRefused) {
  EXPECT_THROW(validate(area_rules(-1.0)), std::invalid_argument);
  EXPECT_THROW(validate(area_rules(std::numeric_limits<double>::infinity())),
               std::invalid_argument);
  QaRules vote = area_rules(0.5);
  vote.rule = QaRule::kVote;
  EXPECT_THROW(validate(vote), std::invalid_argument);
  EXPECT_NO_THROW(validate(area_rules(0.0)));
}

TEST(DefectArea, BoxesWithoutMasksGiveNoArea) {
  const QaFrame f = view(0, 0.9, std::nullopt);
  EXPECT_TRUE(f.parts[0].defect_area_mm2.empty());
  EXPECT_DOUBLE_EQ(f.parts[0].evidence.at("scratch"), 0.9);
}

// defect_area_median (the QA app's --defect-area-views median): a class's
// area is the median over the judged whole views, 0 on views without it,
// so a false mask on a few views does not reject.
static QaFrame clean_view(std::int64_t i) {
  QaFrame f = view(i, 0.9, 0.1);
  f.parts[0].evidence.clear();
  f.parts[0].defect_area_mm2.clear();
  return f;
}

TEST(DefectArea, MedianOverViewsIgnoresAFewLargeFalseMasks) {
  QaRules rules = area_rules(0.5);
  rules.defect_area_median = true;
  PartVerdicts v(rules);
  v.add_frame(view(0, 0.9, 3.0));  // one large mask among five views
  for (int i = 1; i < 5; ++i) v.add_frame(clean_view(i));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, QaVerdict::kPass);
  EXPECT_TRUE(out[0].defects.empty());
  EXPECT_DOUBLE_EQ(out[0].defect_area_mm2.at("scratch"), 0.0);  // median of 3, 0, 0, 0, 0
  rules.defect_area_median = false;
  PartVerdicts largest(rules);
  largest.add_frame(view(0, 0.9, 3.0));
  for (int i = 1; i < 5; ++i) largest.add_frame(clean_view(i));
  EXPECT_EQ(largest.flush().at(0).verdict, QaVerdict::kReject);
}

TEST(DefectArea, MedianOfAnEvenCountIsTheMeanOfTheMiddleTwo) {
  QaRules rules = area_rules(0.5);
  rules.defect_area_median = true;
  // Areas 0.25, 0.75, 1.5 and a view without the defect (0): (0.25 + 0.75) / 2.
  PartVerdicts v(rules);
  v.add_frame(view(0, 0.9, 0.25));
  v.add_frame(view(1, 0.9, 1.5));
  v.add_frame(clean_view(2));
  v.add_frame(view(3, 0.9, 0.75));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_DOUBLE_EQ(out[0].defect_area_mm2.at("scratch"), 0.5);
  EXPECT_EQ(out[0].verdict, QaVerdict::kPass);  // 0.5 is not larger than 0.5
  const QaDecision d = judge(rules, {{0.9, 0.5}, {0.9, 0.75}, {0.9, 1.0}});
  EXPECT_EQ(d.verdict, QaVerdict::kReject);
  ASSERT_EQ(d.defects.size(), 1u);
  EXPECT_DOUBLE_EQ(d.defects[0].second, 0.75);
}
