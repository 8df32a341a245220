// libtorch's error texts, written for its developers, turned into lines an
// operator can act on.
#pragma once

#include <exception>
#include <string>

namespace torchinfer {

// One line: c10::Error's backtrace and TorchScript source excerpts dropped
// (the cause is their last line), whitespace runs folded.
std::string message_of(const std::exception& e);

// Why torch::jit::load refused `path` and what to do, libtorch's text after.
std::string load_failure(const std::string& path, std::string why);

}  // namespace torchinfer
