#include "element-errors.h"

#include <new>

GST_DEBUG_CATEGORY_STATIC(torchinfer_errors_debug);
#define GST_CAT_DEFAULT torchinfer_errors_debug

namespace torchinfer::gst {

GstErrorCode error_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotFound:
      return {GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_NOT_FOUND};
    case ErrorKind::kModelInvalid:
      return {GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT};
    case ErrorKind::kConfigInvalid:
    case ErrorKind::kInvalidArgument:
      return {GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_SETTINGS};
    case ErrorKind::kStreamData:
      return {GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE};
    case ErrorKind::kSetupFailed:
      return {GST_LIBRARY_ERROR, GST_LIBRARY_ERROR_INIT};
    case ErrorKind::kRuntime:
      break;
  }
  return {GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED};
}

void post_error_at(SourceLocation where, GstElement* element, ErrorKind kind,
                   const std::string& message, const std::string& debug) {
  static gsize once = 0;
  if (g_once_init_enter(&once)) {
    GST_DEBUG_CATEGORY_INIT(torchinfer_errors_debug, "torchinfer-errors", 0,
                            "errors posted by the torchinfer elements");
    g_once_init_leave(&once, 1);
  }
  GST_WARNING_OBJECT(element, "error: %s%s%s", message.c_str(), debug.empty() ? "" : " / ",
                     debug.c_str());
  const GstErrorCode c = error_code(kind);
  // gst_element_message_full takes ownership of both strings; an empty
  // message would make GStreamer substitute the code's generic text.
  gst_element_message_full(element, GST_MESSAGE_ERROR, c.domain, c.code,
                           message.empty() ? nullptr : g_strdup(message.c_str()),
                           debug.empty() ? nullptr : g_strdup(debug.c_str()), where.file,
                           where.function, where.line);
}

void post_exception_at(SourceLocation where, GstElement* element, const std::exception& e,
                       ErrorKind fallback, const std::string& prefix, const std::string& debug) {
  if (const auto* err = dynamic_cast<const Error*>(&e)) {
    post_error_at(where, element, err->kind(), prefix + err->what(), debug);
    return;
  }
  if (dynamic_cast<const std::bad_alloc*>(&e)) {
    post_error_at(where, element, fallback, prefix + "out of memory", debug);
    return;
  }
  post_error_at(where, element, fallback, prefix + e.what(), debug);
}

}  // namespace torchinfer::gst
