// A video file decoded by GStreamer as a player would (decodebin): how many
// frames, the first and last timestamps, or why it did not decode; or the
// frame nearest a time as BGR pixels, and how far apart two images are. For
// the evidence tests' clips, snapshots and crops.
#pragma once

#include <gst/gst.h>

#include <algorithm>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

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

// The frames of a video whose timestamps are nearest `targets` (ns),
// converted to BGR, in one decoding pass; an empty Mat where nothing
// decoded.
struct NearestFrames {
  std::vector<GstClockTime> targets, best;
  std::vector<cv::Mat> bgr;
};

inline void on_bgr_frame(GstElement*, GstBuffer* b, GstPad* pad, gpointer user) {
  auto* n = static_cast<NearestFrames*>(user);
  const GstClockTime pts = GST_BUFFER_PTS(b);
  if (!GST_CLOCK_TIME_IS_VALID(pts)) return;
  GstCaps* caps = gst_pad_get_current_caps(pad);
  int w = 0, h = 0;
  const GstStructure* s = caps ? gst_caps_get_structure(caps, 0) : nullptr;
  const bool sized =
      s && gst_structure_get_int(s, "width", &w) && gst_structure_get_int(s, "height", &h);
  if (caps) gst_caps_unref(caps);
  GstMapInfo map;
  if (!sized || !gst_buffer_map(b, &map, GST_MAP_READ)) return;
  const std::size_t stride = (static_cast<std::size_t>(w) * 3 + 3) & ~std::size_t{3};
  for (std::size_t i = 0; map.size >= stride * h && i < n->targets.size(); ++i) {
    const GstClockTime t = n->targets[i];
    const auto dist = [t](GstClockTime x) { return x > t ? x - t : t - x; };
    if (GST_CLOCK_TIME_IS_VALID(n->best[i]) && dist(pts) >= dist(n->best[i])) continue;
    cv::Mat(h, w, CV_8UC3, map.data, stride).copyTo(n->bgr[i]);
    n->best[i] = pts;
  }
  gst_buffer_unmap(b, &map);
}

inline std::vector<cv::Mat> decode_frames_at(const std::string& path,
                                             const std::vector<GstClockTime>& targets) {
  if (!gst_is_initialized()) gst_init(nullptr, nullptr);
  NearestFrames n;
  n.targets = targets;
  n.best.assign(targets.size(), GST_CLOCK_TIME_NONE);
  n.bgr.resize(targets.size());
  const std::string line = "filesrc location=\"" + path +
                           "\" ! decodebin ! videoconvert ! video/x-raw,format=BGR ! "
                           "fakesink name=out signal-handoffs=true sync=false";
  GstElement* p = gst_parse_launch(line.c_str(), nullptr);
  if (!p) return n.bgr;
  GstElement* out = gst_bin_get_by_name(GST_BIN(p), "out");
  g_signal_connect(out, "handoff", G_CALLBACK(on_bgr_frame), &n);
  gst_object_unref(out);
  gst_element_set_state(p, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(p);
  GstMessage* m = gst_bus_timed_pop_filtered(
      bus, 60 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  if (m) gst_message_unref(m);
  gst_object_unref(bus);
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
  return n.bgr;
}

inline cv::Mat decode_frame_at(const std::string& path, GstClockTime pts) {
  return decode_frames_at(path, {pts})[0];
}

// Mean absolute difference per channel value (0..255) of two BGR images of
// one size; 255 when the sizes differ or either is empty. Two JPEGs of the
// same pixels differ by a few units; the same box one frame apart on a
// moving scene, or cut elsewhere, by tens.
inline double mean_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  if (a.empty() || b.empty() || a.size() != b.size() || a.type() != b.type()) return 255;
  return cv::norm(a, b, cv::NORM_L1) / (static_cast<double>(a.total()) * a.channels());
}

// mean_abs_diff after fitting b's levels to a's (least squares gain and
// offset over every value). Two faithful copies of one frame may differ in
// levels: the evidence clip is a JPEG of the camera's video-range pixels
// (black 16, white 235, read back as full range), and a snapshot converts
// with OpenCV's video-range rule whatever the source's range. Other
// content does not fit away. `gain`: the fitted gain (1 when levels agree).
inline double mean_abs_diff_levels(const cv::Mat& a, const cv::Mat& b, double* gain = nullptr) {
  if (a.empty() || b.empty() || a.size() != b.size() || a.type() != b.type()) return 255;
  cv::Mat x, y;
  b.clone().reshape(1, 1).convertTo(x, CV_64F);  // clone: reshape needs continuous rows
  a.clone().reshape(1, 1).convertTo(y, CV_64F);
  const double mx = cv::mean(x)[0], my = cv::mean(y)[0];
  const double vx = cv::mean((x - mx).mul(x - mx))[0];
  const double g = vx > 0 ? cv::mean((x - mx).mul(y - my))[0] / vx : 0;
  if (gain) *gain = g;
  return cv::mean(cv::abs(y - (g * (x - mx) + my)))[0];
}

// `r` of `m`, or an empty Mat when it is not wholly inside (or `m` is
// empty): a misplaced box fails the comparison, never throws.
inline cv::Mat region(const cv::Mat& m, const cv::Rect& r) {
  const bool inside = !m.empty() && !r.empty() && (r & cv::Rect(0, 0, m.cols, m.rows)) == r;
  return inside ? m(r) : cv::Mat();
}

// The part of a box in a snapshot free of what is drawn on it: the outline
// (3 px in from each side) and a label at the frame's top (rows < 16,
// where it lands when the box touches the top); empty if nothing is left.
inline cv::Rect undrawn(const cv::Rect& box) {
  const int y0 = std::max(box.y + 3, 16);
  const cv::Rect r(box.x + 3, y0, box.width - 6, box.y + box.height - 3 - y0);
  return r.width > 0 && r.height > 0 ? r : cv::Rect();
}

}  // namespace torchinfer::test
