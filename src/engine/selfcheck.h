// The start-up self-check: machine, libtorch/oneDNN build and, given an
// engine, the model's state. Shared by the element (logged) and the
// torchinfer-selfcheck CLI (printed).
#pragma once

#include <string>
#include <vector>

#include "common/sysinfo.h"

namespace torchinfer {

class Engine;

// `engine` may be null (machine and libraries only). `input` is the batch
// buffer the caller will feed (checked for 64-byte alignment), may be null.
// `threads`/`cores` describe the planned setup when there is no engine.
std::vector<Finding> self_check(const Engine* engine, const float* input, int threads,
                                const std::vector<int>& cores);

}  // namespace torchinfer
