// torchnms suppress-contained (src/decode/containment.h).
#include <gtest/gtest.h>

#include "decode/containment.h"

using namespace torchinfer;

namespace {

Detection box(int id, double x0, double y0, double x1, double y1, double conf = 0.5) {
  Detection d;
  d.label_id = id;
  d.label = "c" + std::to_string(id);
  d.confidence = conf;
  d.x_min = x0;
  d.y_min = y0;
  d.x_max = x1;
  d.y_max = y1;
  return d;
}

std::vector<double> x_mins(const std::vector<Detection>& d) {
  std::vector<double> out;
  for (const Detection& x : d) out.push_back(x.x_min);
  return out;
}

}  // namespace

TEST(SuppressContained, HalfPartInsideWholePartOfTheSameClassGoes) {
  // The demo detector's case: a half-part box (more confident) inside the whole part.
  std::vector<Detection> d = {box(0, 100, 100, 150, 200, 0.9), box(0, 100, 100, 200, 200, 0.8),
                              box(1, 110, 110, 140, 190, 0.7)};  // another class inside: stays
  EXPECT_EQ(suppress_contained(d, 0.9), 1u);
  EXPECT_EQ(x_mins(d), (std::vector<double>{100, 110}));
  EXPECT_EQ(d[0].x_max, 200);
}

TEST(SuppressContained, FractionDecides) {
  // 80 % of the small box (x 100..150) inside the big one (x 110..300).
  const std::vector<Detection> in = {box(0, 100, 0, 150, 100), box(0, 110, 0, 300, 100)};
  auto d = in;
  EXPECT_EQ(suppress_contained(d, 0.9), 0u);
  EXPECT_EQ(d.size(), 2u);
  d = in;
  EXPECT_EQ(suppress_contained(d, 0.8), 1u);
  EXPECT_EQ(x_mins(d), (std::vector<double>{110}));
  d = in;
  EXPECT_EQ(suppress_contained(d, 0), 0u);  // off
  EXPECT_EQ(d.size(), 2u);
}

TEST(SuppressContained, EqualBoxesKeepTheFirstAndChainsCollapse) {
  std::vector<Detection> d = {box(0, 0, 0, 10, 10, 0.9), box(0, 0, 0, 10, 10, 0.8)};
  EXPECT_EQ(suppress_contained(d, 1.0), 1u);
  EXPECT_DOUBLE_EQ(d[0].confidence, 0.9);
  std::vector<Detection> nest = {box(0, 2, 2, 4, 4), box(0, 1, 1, 8, 8), box(0, 0, 0, 10, 10)};
  EXPECT_EQ(suppress_contained(nest, 0.9), 2u);
  EXPECT_EQ(x_mins(nest), (std::vector<double>{0}));
  std::vector<Detection> none;
  EXPECT_EQ(suppress_contained(none, 0.9), 0u);
  std::vector<Detection> empty_box = {box(0, 5, 5, 5, 5), box(0, 0, 0, 10, 10)};
  EXPECT_EQ(suppress_contained(empty_box, 0.9), 0u);  // no area: nothing to say
}
