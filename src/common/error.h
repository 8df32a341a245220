// Errors raised by the torchinfer core. The GStreamer glue maps each kind to
// one GStreamer error domain and code (error_code() in
// plugin/element-errors.cpp; the table, with what each kind means, is in
// docs/architecture.md, "Errors"), so the kind must say what went wrong for
// the user, not where in the code it happened.
#pragma once

#include <stdexcept>
#include <string>

namespace torchinfer {

enum class ErrorKind {
  // A file the user named does not exist or cannot be read (model, sidecar,
  // labels, TLS files).
  kNotFound,
  // The model file is corrupt, or its interface is one torchinfer cannot run
  // (inputs, outputs, forward() failing on a dummy input at load).
  kModelInvalid,
  // Sidecar or property values are malformed or inconsistent (bad JSON,
  // unknown field, cores not available, elements sharing a model that
  // disagree).
  kConfigInvalid,
  // A value handed to the core is out of range (pad value, negative crop,
  // a crop outside the frame, batch size < 1): the caller's settings, not
  // the data.
  kInvalidArgument,
  // The data on the stream does not fit what it must be processed with: a
  // decoder given tensors of another layout, a frame whose planes or strides
  // do not match its size.
  kStreamData,
  // A library or system facility could not be set up (the MQTT client,
  // a thread).
  kSetupFailed,
  // Work on frames failed while running (forward() raised on a batch, a
  // result could not be delivered).
  kRuntime,
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace torchinfer
