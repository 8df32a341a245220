// The engine's own input quantization must give exactly what
// aten::quantize_per_tensor gives, and taking that node out of a frozen
// int8 graph must not change the model's outputs.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <cmath>
#include <limits>

#include "engine/input_quant.h"
#include "test_paths.h"

using namespace torchinfer;

namespace {

at::Tensor reference(const at::Tensor& x, double scale, std::int64_t zp) {
  return at::quantize_per_tensor(x, scale, zp, at::kQUInt8).int_repr();
}

at::Tensor ours(const at::Tensor& x, double scale, std::int64_t zp) {
  return quantize_input(x, InputQuantization{scale, zp}).int_repr();
}

}  // namespace

TEST(InputQuant, MatchesAtenOnRandomValues) {
  torch::manual_seed(1);
  const at::Tensor x = torch::randn({2, 3, 17, 23}) * 3;
  for (double scale : {0.0039502, 0.02, 1.0 / 255, 0.1}) {
    for (std::int64_t zp : {0, 1, 128, 255}) {
      EXPECT_TRUE(torch::equal(ours(x, scale, zp), reference(x, scale, zp)))
          << "scale " << scale << " zero point " << zp;
    }
  }
}

TEST(InputQuant, TiesRoundToEvenLikeAten) {
  const double scale = 0.25;  // exact in float: v / scale lands on .5 exactly
  std::vector<float> v;
  for (int k = -20; k <= 20; ++k) v.push_back(static_cast<float>((k + 0.5) * scale));
  const at::Tensor x = torch::tensor(v).reshape({1, 1, 1, -1});
  const at::Tensor got = ours(x, scale, 10), want = reference(x, scale, 10);
  EXPECT_TRUE(torch::equal(got, want)) << got << want;
  // 0.5 -> 0 and 1.5 -> 2 (plus the zero point): half to even.
  EXPECT_EQ(got[0][0][0][20].item<int>(), 10);
  EXPECT_EQ(got[0][0][0][21].item<int>(), 12);
}

TEST(InputQuant, SaturatesAndMapsNanToZero) {
  const at::Tensor big = torch::tensor({3e6f, -3e6f, 1e9f, -1e9f}).reshape({1, 1, 1, 4});
  EXPECT_TRUE(torch::equal(ours(big, 0.02, 100), reference(big, 0.02, 100)));
  // Beyond int64, ATen's scalar cast is undefined (it gives 0 for +1e30);
  // here the value saturates.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float in[] = {1e30f, inf, -1e30f, -inf, nan};
  std::uint8_t out[5];
  quantize_to_uint8(in, out, 5, 0.02, 100);
  EXPECT_EQ(std::vector<int>(out, out + 5), (std::vector<int>{255, 255, 0, 0, 0}));
}

TEST(InputQuant, KeepsChannelsLastLayout) {
  const at::Tensor x = torch::rand({2, 3, 8, 5}).contiguous(c10::MemoryFormat::ChannelsLast);
  const at::Tensor q = quantize_input(x, InputQuantization{0.01, 3});
  EXPECT_TRUE(q.is_contiguous(c10::MemoryFormat::ChannelsLast));
  EXPECT_EQ(q.q_scale(), 0.01);
  EXPECT_EQ(q.q_zero_point(), 3);
  EXPECT_TRUE(torch::equal(q.int_repr(), reference(x, 0.01, 3)));
}

TEST(InputQuant, TakenFromAFrozenInt8GraphWithSameOutputs) {
  at::globalContext().setQEngine(at::QEngine::ONEDNN);
  torch::jit::Module original = torch::jit::load(test::model_path("tiny_int8.pt"));
  original.eval();
  torch::jit::Module frozen = torch::jit::freeze(original);
  const auto q = take_input_quantization(frozen);
  ASSERT_TRUE(q.has_value());
  EXPECT_GT(q->scale, 0);
  // The input now feeds the first quantized convolution directly.
  const auto graph = frozen.get_method("forward").graph();
  ASSERT_EQ(graph->inputs()[1]->uses().size(), 1u);
  EXPECT_EQ(std::string(graph->inputs()[1]->uses()[0].user->kind().toQualString()),
            "quantized::conv2d_relu");

  torch::manual_seed(2);
  const at::Tensor x = torch::randn({2, 3, 32, 48}).contiguous(c10::MemoryFormat::ChannelsLast);
  c10::InferenceMode guard;
  const at::Tensor want = original.forward({x}).toTensor();
  const at::Tensor got = frozen.forward({quantize_input(x, *q)}).toTensor();
  EXPECT_TRUE(torch::equal(got, want)) << (got - want).abs().max();
}

TEST(InputQuant, LeavesFloatModelsAlone) {
  torch::jit::Module m = torch::jit::load(test::model_path("identity.pt"));
  m.eval();
  torch::jit::Module frozen = torch::jit::freeze(m);
  EXPECT_FALSE(take_input_quantization(frozen).has_value());
}
