// The QA app's anomaly figures (pipelines/qa/qa_scores.h): AUROC as the share
// of positive-negative pairs ordered right (ties half, -1 without both
// classes), and anomaly_figures() on a hand-made truth whose figures are
// counted by hand.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "qa/qa_scores.h"

namespace torchinfer::qa {
namespace {

TEST(QaAuroc, SeparatedScoresGiveOneAndReversedZero) {
  EXPECT_DOUBLE_EQ(auroc({0.9, 0.1, 0.8, 0.2}, {true, false, true, false}), 1.0);
  EXPECT_DOUBLE_EQ(auroc({0.1, 0.9, 0.2, 0.8}, {true, false, true, false}), 0.0);
}

TEST(QaAuroc, TiesCountHalf) {
  EXPECT_DOUBLE_EQ(auroc({0.5, 0.5}, {true, false}), 0.5);
  // Pairs (positive, negative): (.3,.5) 0, (.3,.7) 0, (.7,.5) 1, (.7,.7) 1/2.
  EXPECT_DOUBLE_EQ(auroc({0.3, 0.7, 0.5, 0.7}, {true, true, false, false}), 1.5 / 4);
  // 2 positives over 3 negatives: 5 of 6 pairs right, one tie.
  EXPECT_DOUBLE_EQ(auroc({0.9, 0.4, 0.1, 0.4, 0.2}, {true, true, false, false, false}),
                   (3 + 1 + 0.5 + 1) / 6);
}

TEST(QaAuroc, OneClassOrNothingIsMinusOne) {
  EXPECT_DOUBLE_EQ(auroc({0.1, 0.9}, {true, true}), -1);
  EXPECT_DOUBLE_EQ(auroc({0.1, 0.9}, {false, false}), -1);
  EXPECT_DOUBLE_EQ(auroc({}, {}), -1);
}

TEST(QaAuroc, LabelsOfAnotherLengthAreMinusOne) {
  EXPECT_DOUBLE_EQ(auroc({0.1, 0.9, 0.5}, {true, false}), -1);
  EXPECT_DOUBLE_EQ(auroc({0.1}, {true, false}), -1);
}

QaAnomalyVerdict verdict(std::vector<double> views, double score, std::int64_t frame, double px,
                         double py) {
  QaAnomalyVerdict v;
  v.views = static_cast<int>(views.size());
  v.view_scores = std::move(views);
  v.score = score;
  v.anomalous = score >= v.threshold;
  v.view_frame = frame;
  v.view.score = score;
  v.view.peak_x = px;
  v.view.peak_y = py;
  return v;
}

TruthBox box(int id, const char* label, double x0, double y0, double x1, double y1) {
  TruthBox b;
  b.id = id;
  b.label = label;
  b.box = {x0, y0, x1, y1};
  return b;
}

// Three truth parts, two defective; part 2 was never tracked (left out).
// Part 0 (good) 0.2, part 1 (defective) 0.7 with its peak in its scratch,
// part 3 (defective) 0.4 with its peak outside its defect: parts AUROC 1
// (0.7 > 0.2, 0.4 > 0.2).
TEST(QaAnomalyFigures, CountedFromTheVerdictsAndTheTruth) {
  TruthClip truth;
  for (int id = 0; id < 4; ++id) {
    TruthPart p;
    p.id = id;
    p.label = "bracket";
    p.defective = id != 0;
    truth.parts.push_back(p);
  }
  truth.frames.resize(3);
  truth.frames[1] = {box(1, "bracket", 0, 0, 100, 100), box(1, "scratch", 10, 10, 20, 20)};
  truth.frames[2] = {box(3, "bracket", 0, 0, 100, 100), box(3, "spot", 50, 50, 60, 60)};
  const std::map<int, long long> track_of_part = {{0, 10}, {1, 11}, {3, 13}};
  const std::map<long long, QaAnomalyVerdict> anomaly = {{10, verdict({0.1, 0.3}, 0.2, 0, 5, 5)},
                                                         {11, verdict({0.6, 0.8}, 0.7, 1, 15, 15)},
                                                         {13, verdict({0.5, 0.2}, 0.4, 2, 15, 15)}};
  const nlohmann::ordered_json f = anomaly_figures(truth, track_of_part, anomaly);
  EXPECT_EQ(f["parts"], 3) << f;
  EXPECT_EQ(f["views"], 6) << f;
  EXPECT_DOUBLE_EQ(f["part_auroc"].get<double>(), 1.0) << f;
  // Good views 0.1, 0.3 against 0.6, 0.8, 0.5, 0.2: only (0.2 < 0.3) wrong.
  EXPECT_DOUBLE_EQ(f["view_auroc"].get<double>(), 7.0 / 8) << f;
  // Anomalous: part 1 only (0.7 >= 0.5): right on 0 and 1, wrong on 3.
  EXPECT_EQ(f["correct"], 2) << f;
  EXPECT_DOUBLE_EQ(f["accuracy"].get<double>(), 2.0 / 3) << f;
  EXPECT_EQ(f["defective_parts"], 2) << f;
  EXPECT_EQ(f["peak_in_defect"], 1) << f;
  EXPECT_DOUBLE_EQ(f["peak_in_defect_share"].get<double>(), 0.5) << f;
}

}  // namespace
}  // namespace torchinfer::qa
