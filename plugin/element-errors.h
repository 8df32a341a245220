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

// Where a message was posted from: the bus message's debug text starts with
// it ("file(line): function (): ..."), so it must be the caller's, not this
// file's. Filled in by the post_error/post_exception macros below.
struct SourceLocation {
  const char* file;
  const char* function;
  int line;
};

// Posts an ERROR message from `element` with the domain and code of `kind`;
// `debug` may be empty. Called as post_error(element, kind, message[, debug]).
void post_error_at(SourceLocation where, GstElement* element, ErrorKind kind,
                   const std::string& message, const std::string& debug = {});

// Posts any exception as an ERROR message: a torchinfer::Error by its kind,
// with message `prefix` + what(); anything else as `fallback`. Out of memory
// (std::bad_alloc) is posted as `fallback` too, saying so: it is the
// operation that failed (loading a corrupt model, a frame), not storage, so
// RESOURCE/NO_SPACE_LEFT would mislead.
// Called as post_exception(element, e, fallback, prefix[, debug]).
void post_exception_at(SourceLocation where, GstElement* element, const std::exception& e,
                       ErrorKind fallback, const std::string& prefix,
                       const std::string& debug = {});

}  // namespace torchinfer::gst

// C++17 has no std::source_location: the macros stamp the caller's file,
// function and line. Qualified calls (gst::post_error(...)) work too.
#define TORCHINFER_HERE (::torchinfer::gst::SourceLocation{__FILE__, GST_FUNCTION, __LINE__})
#define post_error(...) post_error_at(TORCHINFER_HERE, __VA_ARGS__)
#define post_exception(...) post_exception_at(TORCHINFER_HERE, __VA_ARGS__)
