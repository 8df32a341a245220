#include "torch_reference.h"

#include <torch/script.h>

namespace torchinfer::test {

std::vector<float> run_reference_model(const std::string& path, const float* nhwc, int height,
                                       int width, int channels) {
  torch::jit::Module m = torch::jit::load(path);
  m.eval();
  torch::NoGradGuard no_grad;
  at::Tensor x =
      torch::from_blob(const_cast<float*>(nhwc), {1, height, width, channels}, at::kFloat)
          .permute({0, 3, 1, 2})
          .contiguous();
  at::Tensor y = m.forward({x}).toTensor().contiguous();
  return std::vector<float>(y.data_ptr<float>(), y.data_ptr<float>() + y.numel());
}

}  // namespace torchinfer::test
