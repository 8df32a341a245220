// A huge input-width x input-height x batch-size fails at warm-up with
// libtorch's "DefaultCPUAllocator: can't allocate memory" or std::bad_alloc;
// the operator needs to know which setting asked for how much.
#pragma once

#include <cstdint>
#include <exception>
#include <string>

#include "common/error.h"

namespace torchinfer {

// True if `e` reports a failed allocation (std::bad_alloc, or libtorch's
// allocator error, possibly already wrapped in an Error).
bool is_out_of_memory(const std::exception& e);

// Error(kConfigInvalid) naming where the load was (`stage`), the input
// geometry, the bytes of one input batch, the bytes the failed allocation
// asked for (when the cause says) and the settings to lower.
Error input_too_large(int width, int height, int channels, int batch, int bytes_per_value,
                      const std::exception& cause, const std::string& stage = "warm-up");

}  // namespace torchinfer
