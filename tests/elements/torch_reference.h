// Runs a TorchScript model the plain way (no freeze, no optimisation) on an
// NHWC float input, as a reference for what the element attaches.
#pragma once

#include <string>
#include <vector>

namespace torchinfer::test {

std::vector<float> run_reference_model(const std::string& path, const float* nhwc, int height,
                                       int width, int channels);

}  // namespace torchinfer::test
