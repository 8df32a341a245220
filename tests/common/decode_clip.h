// A video file decoded by GStreamer as a player would (decodebin): how many
// frames, the first and last timestamps, or why it did not decode. For the
// evidence tests' clips.
#pragma once

#include <gst/gst.h>

#include <string>

namespace torchinfer::test {

struct Decoded {
  int frames = 0;
  GstClockTime first = GST_CLOCK_TIME_NONE, last = GST_CLOCK_TIME_NONE;
  bool ok = false;  // reached its end without an error
  std::string error;
};

inline void on_decoded_frame(GstElement*, GstBuffer* b, GstPad*, gpointer user) {
  auto* d = static_cast<Decoded*>(user);
  if (d->frames++ == 0) d->first = GST_BUFFER_PTS(b);
  d->last = GST_BUFFER_PTS(b);
}

inline Decoded decode_clip(const std::string& path) {
  Decoded d;
  GError* err = nullptr;
  const std::string line = "filesrc location=\"" + path +
                           "\" ! decodebin ! videoconvert ! video/x-raw,format=I420 ! "
                           "fakesink name=out signal-handoffs=true sync=false";
  GstElement* p = gst_parse_launch(line.c_str(), &err);
  if (!p) {
    d.error = err ? err->message : "parse";
    if (err) g_error_free(err);
    return d;
  }
  GstElement* out = gst_bin_get_by_name(GST_BIN(p), "out");
  g_signal_connect(out, "handoff", G_CALLBACK(on_decoded_frame), &d);
  gst_object_unref(out);
  gst_element_set_state(p, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(p);
  GstMessage* m = gst_bus_timed_pop_filtered(
      bus, 30 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  d.ok = m && GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS;
  if (m && !d.ok) {
    GError* e = nullptr;
    gst_message_parse_error(m, &e, nullptr);
    d.error = e->message;
    g_error_free(e);
  }
  if (m) gst_message_unref(m);
  gst_object_unref(bus);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
  return d;
}

}  // namespace torchinfer::test
