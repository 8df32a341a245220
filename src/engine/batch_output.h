// Turning what forward() returned into a BatchOutput: named, dense CPU
// tensors a TensorView can describe, each frame's finiteness, and copies
// only where a result would otherwise change under its reader. Private to
// the engine.
#pragma once

#include <torch/script.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"

namespace torchinfer {

// forward()'s Tensor, tuple/list of Tensors or Dict[str, Tensor] as
// (name, dense tensor) pairs. Throws Error(kModelInvalid) for anything else.
void collect_outputs(const c10::IValue& v, std::vector<std::pair<std::string, at::Tensor>>& out);

// `y` from `module` run on `input` (a view of the caller's batch buffer).
std::shared_ptr<const BatchOutput> make_batch_output(const c10::IValue& y, const at::Tensor& input,
                                                     const torch::jit::Module& module, int batch,
                                                     double inference_ms);

}  // namespace torchinfer
