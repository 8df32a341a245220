#include "engine/input_quant.h"

#include <ATen/Parallel.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <cmath>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace torchinfer {

std::optional<InputQuantization> take_input_quantization(torch::jit::Module& frozen) {
  auto graph = frozen.get_method("forward").graph();
  if (graph->inputs().size() != 2) return std::nullopt;
  torch::jit::Value* input = graph->inputs()[1];
  if (input->uses().size() != 1) return std::nullopt;
  torch::jit::Node* n = input->uses()[0].user;
  if (n->kind() != c10::Symbol::fromQualString("aten::quantize_per_tensor") ||
      n->inputs().size() != 4 || n->input(0) != input || n->outputs().size() != 1)
    return std::nullopt;
  auto scale = torch::jit::toIValue(n->input(1));
  auto zero_point = torch::jit::toIValue(n->input(2));
  auto dtype = torch::jit::toIValue(n->input(3));
  if (!scale || !zero_point || !dtype || !dtype->isInt() ||
      static_cast<at::ScalarType>(dtype->toInt()) != at::kQUInt8)
    return std::nullopt;
  InputQuantization q;
  // FX stores the parameters as 0-d tensors; scripted models may pass numbers.
  if (scale->isTensor() && scale->toTensor().numel() == 1)
    q.scale = scale->toTensor().item<double>();
  else if (scale->isDouble())
    q.scale = scale->toDouble();
  else
    return std::nullopt;
  if (zero_point->isTensor() && zero_point->toTensor().numel() == 1)
    q.zero_point = zero_point->toTensor().item<std::int64_t>();
  else if (zero_point->isInt())
    q.zero_point = zero_point->toInt();
  else
    return std::nullopt;
  if (!(q.scale > 0) || q.zero_point < 0 || q.zero_point > 255) return std::nullopt;
  n->output()->replaceAllUsesWith(input);
  n->destroy();
  return q;
}

namespace {

std::uint8_t quantize_one(float v, float inv_scale, float zp) {
  v *= inv_scale;
  // Anything outside +-512 clamps to 0 or 255 anyway; NaN goes to 0.
  v = v > -512.0f ? v : -512.0f;
  v = v < 512.0f ? v : 512.0f;
  v = std::nearbyint(v) + zp;  // half to even, as ATen's Round()
  return static_cast<std::uint8_t>(v > 0.0f ? (v < 255.0f ? v : 255.0f) : 0.0f);
}

}  // namespace

void quantize_to_uint8(const float* in, std::uint8_t* out, std::int64_t n, double scale,
                       std::int64_t zero_point) {
  // ATen's reference: zero_point + nearbyint(v * (1.0f / float(scale))).
  const float inv_scale = 1.0f / static_cast<float>(scale);
  const float zp = static_cast<float>(zero_point);
  std::int64_t i = 0;
#if defined(__SSE2__)
  // Baseline x86-64 has no vector nearbyint, and GCC keeps the NaN-aware
  // clamps above scalar; cvtps2dq rounds half to even in the default MXCSR
  // mode and the two saturating packs clamp to 0..255.
  const __m128 k = _mm_set1_ps(inv_scale), lo = _mm_set1_ps(-512.0f), hi = _mm_set1_ps(512.0f);
  const __m128i z = _mm_set1_epi32(static_cast<int>(zero_point));
  auto four = [&](const float* p) {
    // max(v, lo) returns lo for NaN: its second operand.
    const __m128 v = _mm_min_ps(_mm_max_ps(_mm_mul_ps(_mm_loadu_ps(p), k), lo), hi);
    return _mm_add_epi32(_mm_cvtps_epi32(v), z);
  };
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_packs_epi32(four(in + i), four(in + i + 4));
    const __m128i b = _mm_packs_epi32(four(in + i + 8), four(in + i + 12));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_packus_epi16(a, b));
  }
#endif
  for (; i < n; ++i) out[i] = quantize_one(in[i], inv_scale, zp);
}

at::Tensor quantize_input(const at::Tensor& x, const InputQuantization& q) {
  const auto format = x.is_contiguous(c10::MemoryFormat::ChannelsLast) && x.dim() == 4
                          ? c10::MemoryFormat::ChannelsLast
                          : c10::MemoryFormat::Contiguous;
  const at::Tensor src = x.contiguous(format);
  at::Tensor out = at::_empty_affine_quantized(src.sizes(), at::device(at::kCPU).dtype(at::kQUInt8),
                                               q.scale, q.zero_point, format);
  const float* in = src.data_ptr<float>();
  auto* dst = reinterpret_cast<std::uint8_t*>(out.data_ptr<c10::quint8>());
  at::parallel_for(0, src.numel(), 1 << 15, [&](std::int64_t begin, std::int64_t end) {
    quantize_to_uint8(in + begin, dst + begin, end - begin, q.scale, q.zero_point);
  });
  return out;
}

}  // namespace torchinfer
