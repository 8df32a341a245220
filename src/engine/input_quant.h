// Int8 models made by models/quantize.py begin with
// aten::quantize_per_tensor on their float input. This libtorch has no
// fbgemm, so that op runs a scalar loop with a division per element: ~1 ms
// for one 224x224 frame, a fifth of MobileNetV2 int8's whole forward(). The
// engine takes that node out of the frozen graph and quantizes the batch
// itself, bit for bit the same.
#pragma once

#include <torch/script.h>

#include <cstdint>
#include <optional>

namespace torchinfer {

struct InputQuantization {
  double scale = 1;
  std::int64_t zero_point = 0;
};

// If forward()'s only use of its input is a quantize_per_tensor to quint8
// with constant scale and zero point, removes that node (forward() then
// takes the quantized tensor) and returns the parameters.
std::optional<InputQuantization> take_input_quantization(torch::jit::Module& frozen);

// x: float, dense in NCHW or channels_last. Same values as
// at::quantize_per_tensor(x, scale, zero_point, at::kQUInt8), same layout.
at::Tensor quantize_input(const at::Tensor& x, const InputQuantization& q);

// The loop behind quantize_input: round-half-even of v / scale (computed as
// ATen does, v * (1.0f / scale)) plus zero point, clamped to 0..255; NaN -> 0.
// Where v / scale overflows int64, ATen's cast is undefined (+1e30 gives 0);
// here it saturates to 255. Assumes the default rounding mode.
void quantize_to_uint8(const float* in, std::uint8_t* out, std::int64_t n, double scale,
                       std::int64_t zero_point);

}  // namespace torchinfer
