// Errors raised by the torchinfer core. The GStreamer glue maps each kind to a
// GST_ELEMENT_ERROR domain, so the kind must say what went wrong for the user,
// not where in the code it happened.
#pragma once

#include <stdexcept>
#include <string>

namespace torchinfer {

enum class ErrorKind {
  kNotFound,         // a file the user named does not exist or cannot be read
  kModelInvalid,     // the model file is corrupt, or its interface is unsupported
  kConfigInvalid,    // sidecar / property values are malformed or inconsistent
  kInvalidArgument,  // a caller passed something out of range (frame size, format...)
  kRuntime,          // inference failed on a frame
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace torchinfer
