// The one mapping from the core's error kinds to GStreamer error domains and
// codes, and the helpers every element posts its errors with, so that one
// kind of failure reads the same on the bus whichever element raised it.
#pragma once

#include <gst/gst.h>

#include <exception>
#include <string>

#include "common/error.h"

namespace torchinfer::gst {

struct GstErrorCode {
  GQuark domain;
  gint code;
};

// The domain and code of `kind` (the table: docs/architecture.md, "Errors").
GstErrorCode error_code(ErrorKind kind);

// Posts an ERROR message from `element` with the domain and code of `kind`;
// `debug` may be empty.
void post_error(GstElement* element, ErrorKind kind, const std::string& message,
                const std::string& debug = {});

// Posts any exception as an ERROR message: a torchinfer::Error by its kind,
// with message `prefix` + what(); anything else as `fallback`. Out of memory
// (std::bad_alloc) is posted as `fallback` too, saying so: it is the
// operation that failed (loading a corrupt model, a frame), not storage, so
// RESOURCE/NO_SPACE_LEFT would mislead.
void post_exception(GstElement* element, const std::exception& e, ErrorKind fallback,
                    const std::string& prefix, const std::string& debug = {});

}  // namespace torchinfer::gst
