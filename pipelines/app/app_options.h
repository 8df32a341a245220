// Command-line handling shared by the example apps (demo, QA line, RTSP
// server and client): their own options next to GStreamer's --gst-*.
#pragma once

#include <gst/gst.h>

#include <string>

namespace torchinfer::app {

// Parses argv with `entries` and GStreamer's option group. On a bad option
// prints "<error_prefix><GLib's message>" and returns false.
inline bool parse_options(int* argc, char*** argv, GOptionEntry* entries, const char* summary,
                          const char* error_prefix) {
  GOptionContext* ctx = g_option_context_new(summary);
  g_option_context_add_main_entries(ctx, entries, nullptr);
  g_option_context_add_group(ctx, gst_init_get_option_group());
  GError* err = nullptr;
  const bool ok = g_option_context_parse(ctx, argc, argv, &err);
  g_option_context_free(ctx);
  if (!ok) {
    g_printerr("%s%s\n", error_prefix, err->message);
    g_error_free(err);
  }
  return ok;
}

// Moves a string option GLib allocated into `to`, if it was given.
inline void take(gchar* value, std::string& to) {
  if (value) to = value;
  g_free(value);
}

}  // namespace torchinfer::app
