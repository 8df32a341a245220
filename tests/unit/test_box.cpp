// The core's one box: every stage (containment, tracking, part verdicts,
// scoring) measures overlap through these, so their edge cases are pinned here.
#include <gtest/gtest.h>

#include "common/box.h"

namespace torchinfer {
namespace {

TEST(Box, SizesAndCentre) {
  const Box b{10, 20, 50, 40};
  EXPECT_DOUBLE_EQ(b.width(), 40);
  EXPECT_DOUBLE_EQ(b.height(), 20);
  EXPECT_DOUBLE_EQ(b.area(), 800);
  EXPECT_DOUBLE_EQ(b.center_x(), 30);
  EXPECT_DOUBLE_EQ(b.center_y(), 30);
}

TEST(Box, AnInvertedBoxHasNoAreaAndOverlapsNothing) {
  const Box inverted{50, 40, 10, 20};
  EXPECT_DOUBLE_EQ(inverted.area(), 0);
  EXPECT_DOUBLE_EQ(intersection_area(inverted, {0, 0, 100, 100}), 0);
  EXPECT_DOUBLE_EQ(iou(inverted, inverted), 0);
}

TEST(Box, ContainsItsEdgesButNotBeyond) {
  const Box b{0, 0, 10, 10};
  EXPECT_TRUE(b.contains(0, 0));
  EXPECT_TRUE(b.contains(10, 10));
  EXPECT_TRUE(b.contains(5, 5));
  EXPECT_FALSE(b.contains(10.001, 5));
  EXPECT_FALSE(b.contains(5, -0.001));
}

TEST(Box, IntersectionAndIou) {
  const Box a{0, 0, 10, 10};
  EXPECT_DOUBLE_EQ(intersection_area(a, {5, 5, 15, 15}), 25);
  EXPECT_DOUBLE_EQ(iou(a, {5, 5, 15, 15}), 25.0 / 175.0);
  EXPECT_DOUBLE_EQ(iou(a, a), 1);
  EXPECT_DOUBLE_EQ(iou(a, {2, 2, 4, 4}), 4.0 / 100.0);         // one inside the other
  EXPECT_DOUBLE_EQ(intersection_area(a, {10, 0, 20, 10}), 0);  // touching edges
  EXPECT_DOUBLE_EQ(iou(a, {20, 20, 30, 30}), 0);
}

TEST(Box, TwoEmptyBoxesHaveNoIouRatherThanNaN) {
  const Box point{5, 5, 5, 5};
  EXPECT_DOUBLE_EQ(iou(point, point), 0);
}

}  // namespace
}  // namespace torchinfer
