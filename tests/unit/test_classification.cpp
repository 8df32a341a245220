#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/error.h"
#include "decode/classification.h"

using namespace torchinfer;

namespace {
TensorView scores(std::vector<float>& v, std::vector<std::int64_t> dims) {
  TensorView t;
  t.name = "output";
  t.dims = std::move(dims);
  t.data = v.data();
  t.bytes = v.size() * sizeof(float);
  return t;
}
}  // namespace

TEST(Classification, SoftmaxTopK) {
  std::vector<float> v{1.f, 3.f, 2.f, 0.f};
  const auto r = decode_top_k(scores(v, {1, 4}), 2, Activation::kSoftmax, {"a", "b", "c", "d"});
  ASSERT_EQ(r.size(), 2u);
  const double z = std::exp(1) + std::exp(3) + std::exp(2) + std::exp(0);
  EXPECT_EQ(r[0].label_id, 1);
  EXPECT_EQ(r[0].label, "b");
  EXPECT_NEAR(r[0].confidence, std::exp(3) / z, 1e-12);
  EXPECT_EQ(r[1].label_id, 2);
  EXPECT_NEAR(r[1].confidence, std::exp(2) / z, 1e-12);
}

TEST(Classification, NoActivationKeepsScoresAndTiesKeepLowerId) {
  std::vector<float> v{0.25f, 0.5f, 0.25f};
  const auto r = decode_top_k(scores(v, {3}), 3, Activation::kNone, {});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].label_id, 1);
  EXPECT_EQ(r[1].label_id, 0);
  EXPECT_EQ(r[2].label_id, 2);
  EXPECT_DOUBLE_EQ(r[1].confidence, 0.25);
  EXPECT_EQ(r[0].label, "1");  // no labels: the id names the class
}

TEST(Classification, SigmoidAndKLargerThanClasses) {
  std::vector<float> v{0.f, 2.f};
  const auto r = decode_top_k(scores(v, {1, 1, 2}), 10, Activation::kSigmoid, {"x"});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(r[0].confidence, 1 / (1 + std::exp(-2.0)), 1e-12);
  EXPECT_EQ(r[0].label, "1");  // past the end of the labels list
  EXPECT_EQ(r[1].label, "x");
  EXPECT_NEAR(r[1].confidence, 0.5, 1e-12);
}

TEST(Classification, NanRanksLast) {
  std::vector<float> v{std::numeric_limits<float>::quiet_NaN(), 1.f, 0.f};
  const auto r = decode_top_k(scores(v, {1, 3}), 3, Activation::kSoftmax, {});
  EXPECT_EQ(r[0].label_id, 1);
  EXPECT_EQ(r[2].label_id, 0);
  EXPECT_DOUBLE_EQ(r[2].confidence, 0.0);
}

TEST(Classification, ShapeCheck) {
  std::vector<float> v(12, 0.f);
  EXPECT_TRUE(looks_like_class_scores(scores(v, {1, 12})));
  EXPECT_FALSE(looks_like_class_scores(scores(v, {1, 3, 2, 2})));
  EXPECT_FALSE(looks_like_class_scores(scores(v, {2, 6})));
  EXPECT_THROW(decode_top_k(scores(v, {1, 3, 4}), 1, Activation::kNone, {}), Error);
  TensorView bools = scores(v, {1, 12});
  bools.dtype = DType::kBool;
  EXPECT_FALSE(looks_like_class_scores(bools));
}

TEST(Classification, IntegerScoresAreFractionsOfTheDtypeMax) {
  std::vector<std::uint8_t> u8{10, 200, 255, 0};
  TensorView t;
  t.name = "output";
  t.dtype = DType::kUInt8;
  t.dims = {1, 4};
  t.data = u8.data();
  t.bytes = u8.size();
  ASSERT_TRUE(looks_like_class_scores(t));
  // The activation does not apply: the integers are confidences already.
  const auto r = decode_top_k(t, 2, Activation::kSoftmax, {"a", "b", "c", "d"});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].label_id, 2);
  EXPECT_EQ(r[0].label, "c");
  EXPECT_DOUBLE_EQ(r[0].confidence, 1.0);
  EXPECT_EQ(r[1].label_id, 1);
  EXPECT_DOUBLE_EQ(r[1].confidence, 200.0 / 255.0);

  std::vector<std::int8_t> i8{-128, 127, 0};
  t.dtype = DType::kInt8;
  t.dims = {3};
  t.data = i8.data();
  t.bytes = i8.size();
  const auto r8 = decode_top_k(t, 3, Activation::kNone, {});
  EXPECT_EQ(r8[0].label_id, 1);
  EXPECT_DOUBLE_EQ(r8[0].confidence, 1.0);
  EXPECT_EQ(r8[2].label_id, 0);
  EXPECT_DOUBLE_EQ(r8[2].confidence, -128.0 / 127.0);

  std::vector<std::int64_t> i64{5, 7};
  t.dtype = DType::kInt64;
  t.dims = {1, 1, 2};
  t.data = i64.data();
  t.bytes = i64.size() * 8;
  const auto r64 = decode_top_k(t, 1, Activation::kSigmoid, {});
  EXPECT_EQ(r64[0].label_id, 1);
  EXPECT_DOUBLE_EQ(r64[0].confidence, 7.0 / 9223372036854775807.0);
}
