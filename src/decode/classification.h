// Top-k decoding of a classification output (logits or probabilities).
#pragma once

#include <string>
#include <vector>

#include "common/model_config.h"
#include "common/tensor.h"

namespace torchinfer {

struct ClassResult {
  int label_id = -1;
  std::string label;
  double confidence = 0;
};

// True if the tensor holds one score vector per frame: [C], [1,C], [1,1,C]...
// of float or integer (uint8, int8, int32, int64) scores.
bool looks_like_class_scores(const TensorView& t);

// Highest-first top-k after the activation; NaN scores rank last. Labels past
// the end of the list are named by their id so results stay readable.
// Integer scores take no activation: confidence = value / the dtype's
// maximum (uint8 255 -> 1.0, int8 127, int32/int64 their max).
std::vector<ClassResult> decode_top_k(const TensorView& scores, int k, Activation activation,
                                      const std::vector<std::string>& labels);

}  // namespace torchinfer
