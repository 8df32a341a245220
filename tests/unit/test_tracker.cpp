// SORT tracker: ids over scripted trajectories, birth, death, occlusion,
// per-label matching, constant-velocity prediction and the assignment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "common/error.h"
#include "track/assignment.h"
#include "track/box_filter.h"
#include "track/sort_tracker.h"

using namespace torchinfer;

namespace {

Box centred(double cx, double cy, double w = 40, double h = 40) {
  return {cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
}

TrackDetection det(double cx, double cy, const std::string& label = "bolt", double w = 40,
                   double h = 40) {
  return {centred(cx, cy, w, h), label, label == "bolt" ? 0 : 1, 0.9};
}

std::vector<int> ids(const TrackStep& step) {
  std::vector<int> out;
  for (const auto& o : step.objects) out.push_back(o.id);
  return out;
}

std::vector<int> event_ids(const std::vector<TrackEvent>& events) {
  std::vector<int> out;
  for (const auto& e : events) out.push_back(e.id);
  return out;
}

TrackerOptions opts(int max_age, int min_hits, double iou = 0.3) {
  TrackerOptions o;
  o.max_age = max_age;
  o.min_hits = min_hits;
  o.iou_threshold = iou;
  return o;
}

}  // namespace

TEST(Assignment, OptimalWhereGreedyIsNot) {
  // Greedy (cheapest first) takes (0,0) then must take (1,1): 1.0 in all;
  // the optimum crosses over: 0.2 + 0.15.
  EXPECT_EQ(min_cost_assignment({{0.1, 0.2}, {0.15, 0.9}}), (std::vector<int>{1, 0}));
}

TEST(Assignment, RectangularLeavesExtraRowsUnassigned) {
  EXPECT_EQ(min_cost_assignment({{0.9, 0.1}, {0.2, 0.8}, {0.0, 0.0}}),
            (std::vector<int>{1, -1, 0}));
  EXPECT_EQ(min_cost_assignment({{0.5, 0.1, 0.3}}), (std::vector<int>{1}));
  EXPECT_TRUE(min_cost_assignment({}).empty());
}

TEST(Assignment, MatchesBruteForceOnRandomMatrices) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost_of(0.0, 1.0);
  for (int trial = 0; trial < 300; ++trial) {
    const int rows = 1 + trial % 5, cols = 1 + (trial / 5) % 5;
    std::vector<std::vector<double>> cost(rows, std::vector<double>(cols));
    for (auto& row : cost)
      for (double& c : row) c = cost_of(rng);
    const std::vector<int> got = min_cost_assignment(cost);
    double got_total = 0;
    std::vector<bool> used(cols, false);
    int assigned = 0;
    for (int r = 0; r < rows; ++r)
      if (got[r] >= 0) {
        ASSERT_FALSE(used[got[r]]) << "column used twice, trial " << trial;
        used[got[r]] = true;
        got_total += cost[r][got[r]];
        ++assigned;
      }
    EXPECT_EQ(assigned, std::min(rows, cols));
    // Brute force over every way to give min(rows, cols) rows distinct columns.
    std::vector<int> perm(std::max(rows, cols));
    std::iota(perm.begin(), perm.end(), 0);
    double best = 1e9;
    do {
      double total = 0;
      for (int r = 0; r < rows; ++r)
        if (perm[r] < cols) total += cost[r][perm[r]];
      best = std::min(best, total);
    } while (std::next_permutation(perm.begin(), perm.end()));
    EXPECT_NEAR(got_total, best, 1e-9) << "trial " << trial;
  }
}

TEST(Assignment, RaggedMatrixIsRejected) {
  try {
    min_cost_assignment({{0.1, 0.2}, {0.3}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("differ in length"), std::string::npos);
  }
}

TEST(Iou, OverlapAndDisjoint) {
  EXPECT_DOUBLE_EQ(iou({0, 0, 10, 10}, {0, 0, 10, 10}), 1.0);
  EXPECT_DOUBLE_EQ(iou({0, 0, 10, 10}, {5, 0, 15, 10}), 50.0 / 150.0);
  EXPECT_DOUBLE_EQ(iou({0, 0, 10, 10}, {10, 0, 20, 10}), 0.0);
}

TEST(SortTracker, BadOptionsAreRejected) {
  struct Case {
    TrackerOptions o;
    const char* word;
  } cases[] = {{opts(-1, 3), "max-age"},
               {opts(30, 0), "min-hits"},
               {opts(30, 3, 0.0), "iou-threshold"},
               {opts(30, 3, 1.5), "iou-threshold"},
               {opts(30, 3, std::nan("")), "iou-threshold"}};
  for (const auto& c : cases) {
    try {
      SortTracker t(c.o);
      ADD_FAILURE() << c.word << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << c.word;
      EXPECT_NE(std::string(e.what()).find(c.word), std::string::npos) << e.what();
    }
  }
}

TEST(SortTracker, TwoCrossingObjectsKeepTheirIds) {
  SortTracker tracker(opts(1, 1));
  // A moves right along y = 100, B left along y = 112; 40 px boxes, so at
  // the crossing (frame 12) they overlap by IoU 0.54. The detection order
  // alternates, so ids cannot come from the order.
  for (int f = 0; f < 26; ++f) {
    const TrackDetection a = det(100 + 8 * f, 100), b = det(300 - 8 * f, 112);
    const bool a_first = f % 2 == 0;
    const TrackStep step = tracker.update(a_first ? std::vector<TrackDetection>{a, b}
                                                  : std::vector<TrackDetection>{b, a});
    ASSERT_EQ(step.objects.size(), 2u) << f;
    EXPECT_EQ(ids(step), a_first ? (std::vector<int>{1, 2}) : (std::vector<int>{2, 1})) << f;
    EXPECT_EQ(step.objects[0].detection, 0);
    EXPECT_EQ(step.objects[1].detection, 1);
    EXPECT_FALSE(step.objects[0].predicted);
    EXPECT_EQ(step.objects[0].age, f + 1);
    EXPECT_EQ(event_ids(step.started), f == 0 ? (std::vector<int>{1, 2}) : std::vector<int>{}) << f;
    EXPECT_TRUE(step.ended.empty()) << f;
  }
  EXPECT_EQ(tracker.live_tracks(), 2u);
}

TEST(SortTracker, IdOnlyAfterMinHitsAndNoGapsFromNoise) {
  SortTracker tracker(opts(5, 3));
  // A flicker seen twice, then gone: never confirmed, never takes an id.
  EXPECT_TRUE(tracker.update({det(500, 500)}).objects.empty());
  EXPECT_TRUE(tracker.update({det(500, 500)}).objects.empty());
  EXPECT_TRUE(tracker.update({}).objects.empty());
  EXPECT_EQ(tracker.live_tracks(), 0u);
  // A real object: no id on its first two frames, id 1 on the third.
  for (int f = 0; f < 5; ++f) {
    const TrackStep step = tracker.update({det(100 + 4 * f, 100)});
    if (f < 2) {
      EXPECT_TRUE(step.objects.empty()) << f;
      EXPECT_TRUE(step.started.empty()) << f;
    } else {
      EXPECT_EQ(ids(step), std::vector<int>{1}) << f;
      EXPECT_EQ(event_ids(step.started), f == 2 ? std::vector<int>{1} : std::vector<int>{}) << f;
    }
  }
}

TEST(SortTracker, SeveralBirthsTakeIdsInDetectionOrder) {
  SortTracker tracker(opts(5, 1));
  const TrackStep step = tracker.update({det(100, 100), det(300, 100, "nut"), det(500, 100)});
  EXPECT_EQ(ids(step), (std::vector<int>{1, 2, 3}));
  ASSERT_EQ(step.started.size(), 3u);
  EXPECT_EQ(step.started[1].label, "nut");
  EXPECT_EQ(step.started[1].label_id, 1);
  EXPECT_EQ(step.objects[1].label, "nut");
  EXPECT_DOUBLE_EQ(step.objects[2].box.x_min, 480);
}

TEST(SortTracker, EndsAfterMaxAgeMisses) {
  SortTracker tracker(opts(2, 1));
  for (int f = 0; f < 5; ++f) tracker.update({det(100 + 5 * f, 100)});
  // Survives two missed frames, ends on the third.
  for (int miss = 1; miss <= 3; ++miss) {
    const TrackStep step = tracker.update({});
    EXPECT_TRUE(step.objects.empty());
    if (miss < 3) {
      EXPECT_TRUE(step.ended.empty()) << miss;
      EXPECT_EQ(tracker.live_tracks(), 1u);
    } else {
      ASSERT_EQ(event_ids(step.ended), std::vector<int>{1});
      EXPECT_EQ(step.ended[0].label, "bolt");
      EXPECT_EQ(step.ended[0].age, 8);
      EXPECT_EQ(tracker.live_tracks(), 0u);
    }
  }
  // What comes next is a new object.
  EXPECT_EQ(ids(tracker.update({det(100, 100)})), std::vector<int>{2});
}

// An object moving 5 px/frame hidden for `gap` frames, reappearing where
// its motion took it. Returns the ids reported after the gap and the ended ids.
static std::pair<std::vector<int>, std::vector<int>> occlude(int gap, int max_age) {
  SortTracker tracker(opts(max_age, 1));
  int f = 0;
  for (; f < 10; ++f) tracker.update({det(100 + 5 * f, 100)});
  std::vector<int> ended;
  for (int i = 0; i < gap; ++i, ++f)
    for (int id : event_ids(tracker.update({}).ended)) ended.push_back(id);
  std::vector<int> after;
  for (int i = 0; i < 3; ++i, ++f) {
    const TrackStep step = tracker.update({det(100 + 5 * f, 100)});
    for (int id : ids(step)) after.push_back(id);
    for (int id : event_ids(step.ended)) ended.push_back(id);
  }
  return {after, ended};
}

TEST(SortTracker, OcclusionShorterThanMaxAgeKeepsTheId) {
  const auto [after, ended] = occlude(4, 4);
  EXPECT_EQ(after, (std::vector<int>{1, 1, 1}));
  EXPECT_TRUE(ended.empty());
}

TEST(SortTracker, OcclusionLongerThanMaxAgeGivesANewId) {
  const auto [after, ended] = occlude(5, 4);
  EXPECT_EQ(after, (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(ended, std::vector<int>{1});
}

TEST(SortTracker, TrackKeepsItsLabel) {
  SortTracker tracker(opts(0, 1));
  EXPECT_EQ(ids(tracker.update({det(100, 100, "bolt")})), std::vector<int>{1});
  // Same box, other label: a new object, and the bolt has gone.
  const TrackStep step = tracker.update({det(100, 100, "nut")});
  EXPECT_EQ(ids(step), std::vector<int>{2});
  EXPECT_EQ(event_ids(step.ended), std::vector<int>{1});
}

TEST(SortTracker, BelowIouThresholdIsNoMatch) {
  SortTracker tracker(opts(0, 1, 0.5));
  tracker.update({det(100, 100)});
  // 40 px boxes 15 px apart: IoU 25/55 = 0.45 < 0.5.
  EXPECT_EQ(ids(tracker.update({det(115, 100)})), std::vector<int>{2});
  // 10 px apart: IoU 30/50 = 0.6.
  EXPECT_EQ(ids(tracker.update({det(125, 100)})), std::vector<int>{2});
}

TEST(SortTracker, PredictFollowsConstantVelocity) {
  SortTracker tracker(opts(5, 1));
  const double vx = 6, vy = -3, w = 50, h = 30;
  int f = 0;
  for (; f < 20; ++f) tracker.update({det(100 + vx * f, 300 + vy * f, "bolt", w, h)});
  // After 20 exact frames the velocity is learnt: within 0.01 px of the true
  // motion for 5 predicted frames (measured: under 2e-4 px).
  for (int k = 0; k < 5; ++k, ++f) {
    const TrackStep step = tracker.predict();
    ASSERT_EQ(step.objects.size(), 1u);
    const TrackedObject& o = step.objects[0];
    EXPECT_EQ(o.id, 1);
    EXPECT_TRUE(o.predicted);
    EXPECT_EQ(o.detection, -1);
    EXPECT_EQ(o.age, f + 1);
    EXPECT_NEAR((o.box.x_min + o.box.x_max) / 2, 100 + vx * f, 0.01) << k;
    EXPECT_NEAR((o.box.y_min + o.box.y_max) / 2, 300 + vy * f, 0.01) << k;
    EXPECT_NEAR(o.box.width(), w, 0.01) << k;
    EXPECT_NEAR(o.box.height(), h, 0.01) << k;
    EXPECT_TRUE(step.started.empty());
    EXPECT_TRUE(step.ended.empty());
  }
  // Predicted frames are no misses: with max-age 5, the object found again
  // after them (at its true place) keeps its id.
  EXPECT_EQ(ids(tracker.update({det(100 + vx * f, 300 + vy * f, "bolt", w, h)})),
            std::vector<int>{1});
}

TEST(SortTracker, PredictReportsOnlyConfirmedTracksSeenAtTheLastUpdate) {
  SortTracker tracker(opts(5, 2));
  tracker.update({det(100, 100), det(300, 100)});
  tracker.update({det(100, 100), det(300, 100), det(500, 100)});  // 1, 2 confirmed
  tracker.update({det(100, 100), det(500, 100)});                 // 2 coasting, 3 confirmed
  const TrackStep step = tracker.predict();
  EXPECT_EQ(ids(step), (std::vector<int>{1, 3}));
  EXPECT_EQ(tracker.live_tracks(), 3u);
}

TEST(SortTracker, FinishEndsConfirmedTracksAndIdsKeepCounting) {
  SortTracker tracker(opts(5, 2));
  tracker.update({det(100, 100), det(300, 100)});
  tracker.update({det(100, 100), det(300, 100), det(500, 100)});
  const std::vector<TrackEvent> ended = tracker.finish();
  EXPECT_EQ(event_ids(ended), (std::vector<int>{1, 2}));  // the tentative one had no id
  EXPECT_EQ(tracker.live_tracks(), 0u);
  tracker.update({det(100, 100)});
  EXPECT_EQ(ids(tracker.update({det(100, 100)})), std::vector<int>{3});
}

TEST(BoxFilter, FirstBoxIsTheState) {
  BoxFilter f(Box{10, 20, 50, 40});
  EXPECT_NEAR(f.box().x_min, 10, 1e-9);
  EXPECT_NEAR(f.box().y_max, 40, 1e-9);
  EXPECT_DOUBLE_EQ(f.velocity_x(), 0);
  // No velocity yet: a prediction stays put.
  const Box p = f.predict();
  EXPECT_NEAR(p.x_min, 10, 1e-9);
  EXPECT_NEAR(p.y_min, 20, 1e-9);
}

// A part that moved and came to rest, then frames the motion gate found
// still: hold() keeps the tracks where they were last seen, so the next
// inferred frame finds the part (same id). predict() on those frames would
// have carried the track on at the part's old speed, off the part.
TEST(SortTracker, HoldKeepsTracksWhereTheyWereSeenWithoutAgingThem) {
  auto moved_then_stopped = [](SortTracker& t) {
    for (int f = 0; f < 10; ++f) t.update({det(100 + 10 * f, 200)});
    for (int f = 0; f < 3; ++f) t.update({det(190, 200)});  // stopped: seen at x = 190
  };
  SortTracker held(opts(2, 3));
  moved_then_stopped(held);
  for (int k = 0; k < 50; ++k) {
    const TrackStep step = held.hold();
    ASSERT_EQ(step.objects.size(), 1u);
    const TrackedObject& o = step.objects[0];
    EXPECT_EQ(o.id, 1);
    EXPECT_FALSE(o.predicted);
    EXPECT_EQ(o.detection, -1);
    EXPECT_EQ(o.age, 14 + k);
    EXPECT_EQ(o.box.x_min, centred(190, 200).x_min);
    EXPECT_EQ(o.box.x_max, centred(190, 200).x_max);
    EXPECT_EQ(o.box.y_min, centred(190, 200).y_min);
    EXPECT_TRUE(step.started.empty());
    EXPECT_TRUE(step.ended.empty());
  }
  EXPECT_EQ(ids(held.update({det(190, 200)})), std::vector<int>{1}) << "50 holds, max-age 2";

  SortTracker predicted(opts(2, 3));
  moved_then_stopped(predicted);
  for (int k = 0; k < 50; ++k) predicted.predict();
  EXPECT_TRUE(ids(predicted.update({det(190, 200)})).empty()) << "lost: a new tentative track";
}
