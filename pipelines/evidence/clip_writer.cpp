#include "evidence/clip_writer.h"

#include <gst/app/gstappsrc.h>

#include <cstring>

namespace torchinfer::evidence {

namespace {

// A muxer that does not finish in this time is stuck (a FIFO at the path,
// a hung file system): the clip is given up, counted by the caller.
constexpr GstClockTime kClipTimeout = 60 * GST_SECOND;

GstElement* clip_pipeline(GstCaps* caps, int fd, GstElement** src, std::string* why) {
  const bool h264 =
      gst_structure_has_name(gst_caps_get_structure(caps, 0), "video/x-h264") != FALSE;
  GstElement* p = gst_pipeline_new("evidence-clip");
  *src = gst_element_factory_make("appsrc", nullptr);
  GstElement* parse = h264 ? gst_element_factory_make("h264parse", nullptr) : nullptr;
  GstElement* mux = gst_element_factory_make("matroskamux", nullptr);
  // fdsink on the store's descriptor (a file made relative to the evidence
  // folder's own descriptor), never a path: a folder replaced by a link
  // since the start cannot redirect the clip. It seeks, as matroskamux
  // needs to finish its header.
  GstElement* sink = gst_element_factory_make("fdsink", nullptr);
  if (!*src || (h264 && !parse) || !mux || !sink) {
    for (GstElement* e : {*src, parse, mux, sink})
      if (e) gst_object_unref(gst_object_ref_sink(e));
    gst_object_unref(p);
    *why = "appsrc, h264parse, matroskamux or fdsink is not installed";
    return nullptr;
  }
  g_object_set(*src, "caps", caps, "format", GST_FORMAT_TIME, "max-bytes", G_GUINT64_CONSTANT(0),
               nullptr);
  g_object_set(sink, "fd", fd, "sync", FALSE, "async", FALSE, nullptr);
  gst_bin_add_many(GST_BIN(p), *src, mux, sink, nullptr);
  bool linked;
  if (parse) {
    gst_bin_add(GST_BIN(p), parse);
    linked = gst_element_link_many(*src, parse, mux, sink, nullptr);
  } else {
    linked = gst_element_link_many(*src, mux, sink, nullptr);
  }
  if (!linked) {
    gst_object_unref(p);
    *why = "cannot link the clip muxer";
    return nullptr;
  }
  return p;
}

GstBuffer* clip_buffer(const EncodedFrame& f, std::int64_t base) {
  GstBuffer* b = f.data ? gst_buffer_new_memdup(f.data->data(), f.data->size()) : gst_buffer_new();
  GST_BUFFER_PTS(b) = GST_BUFFER_DTS(b) = f.pts_ns - base;
  if (f.duration_ns > 0) GST_BUFFER_DURATION(b) = f.duration_ns;
  if (!f.keyframe) GST_BUFFER_FLAG_SET(b, GST_BUFFER_FLAG_DELTA_UNIT);
  return b;
}

// Waits for the muxer to finish; the error's text (filesink's "Could not
// write", with the system's reason in its details) when it does not.
bool wait_done(GstElement* p, GstClockTime timeout, std::string* why) {
  GstBus* bus = gst_element_get_bus(p);
  GstMessage* m = gst_bus_timed_pop_filtered(
      bus, timeout, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  gst_object_unref(bus);
  bool ok = m && GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS;
  if (!m && why->empty()) *why = "the clip muxer did not finish";
  if (m && !ok) {
    GError* e = nullptr;
    gchar* dbg = nullptr;
    gst_message_parse_error(m, &e, &dbg);
    // The details' last line holds the system's reason ("... File too
    // large"); the rest is GStreamer's source position.
    const char* reason = dbg ? std::strrchr(dbg, '\n') : nullptr;
    reason = reason ? reason + 1 : dbg;
    *why = std::string(e ? e->message : "error") + (reason ? std::string(" (") + reason + ")" : "");
    if (e) g_error_free(e);
    g_free(dbg);
  }
  if (m) gst_message_unref(m);
  return ok;
}

}  // namespace

double write_clip(const std::vector<EncodedFrame>& frames, GstCaps* caps, int fd,
                  std::string* why) {
  if (frames.empty()) {
    *why = "no frames";
    return -1;
  }
  GstElement* src = nullptr;
  GstElement* p = clip_pipeline(caps, fd, &src, why);
  if (!p) return -1;
  bool ok = gst_element_set_state(p, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE;
  if (!ok) *why = "cannot start the clip muxer";
  const std::int64_t base = frames.front().pts_ns;
  for (std::size_t i = 0; ok && i < frames.size(); ++i)
    ok = gst_app_src_push_buffer(GST_APP_SRC(src), clip_buffer(frames[i], base)) == GST_FLOW_OK;
  if (ok) gst_app_src_end_of_stream(GST_APP_SRC(src));
  // After a failed start or push the reason is already on the bus.
  ok = wait_done(p, ok ? kClipTimeout : GST_SECOND, why) && ok;
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
  if (!ok) return -1;
  const EncodedFrame& last = frames.back();
  return (last.pts_ns + last.duration_ns - frames.front().pts_ns) / 1e9;
}

}  // namespace torchinfer::evidence
