// torchinfer-server's camera, its REST side: figures for /metrics, status
// for /streams/{id}, the snapshot, analytics and trigger requests. The
// pipeline's build and lifecycle are in camera.cpp (camera.h says which
// thread runs what).
#include <gst/video/video.h>

#include <cstdio>
#include <cstring>

#include "camera.h"
#include "camera_analytics.h"
#include "evidence/core/jpeg_snapshot.h"
#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "server/core/stream_analytics.h"

namespace torchinfer::server {
namespace {

std::uint64_t stat_u64(const GstStructure* s, const char* field) {
  guint64 v = 0;
  return s && gst_structure_get_uint64(s, field, &v) ? v : 0;
}

double stat_double(const GstStructure* s, const char* field) {
  double v = 0;
  return s && gst_structure_get_double(s, field, &v) ? v : 0;
}

// The torchinfer figures of a camera (a snapshot; the element computes it).
GstStructure* infer_stats(GstElement* infer) {
  GstStructure* s = nullptr;
  if (infer) g_object_get(infer, "stats", &s, nullptr);
  return s;
}

// Bayer frames for the snapshot encoder: one plane, rows padded to 4
// bytes (GStreamer's layout for video/x-bayer, which GstVideoInfo does not
// know).
bool bayer_image_of(const GstStructure* st, const GstMapInfo& map, RawImage* img,
                    std::string* why) {
  const char* order = gst_structure_get_string(st, "format");
  gst_structure_get_int(st, "width", &img->width);
  gst_structure_get_int(st, "height", &img->height);
  img->strides[0] = (img->width + 3) & ~3;
  img->planes[0] = map.data;
  if (!order || !raw_format_from_name(order, &img->format) || img->width <= 0 || img->height <= 0 ||
      map.size < static_cast<std::size_t>(img->strides[0]) * img->height) {
    *why = "the Bayer frame does not match its caps";
    return false;
  }
  return true;
}

std::vector<std::uint8_t> encode_or_say(const RawImage& img, std::string* why) {
  try {
    return encode_jpeg(img);
  } catch (const std::exception& e) {
    *why = e.what();
  }
  return {};
}

// A machine-vision camera's health (server/camera_health.h) for the REST API.
nlohmann::json health_json(const CameraVerdict& v) {
  return {{"state", to_string(v.condition)},
          {"reason", v.reason},
          {"lost_ratio", v.lost_ratio},
          {"window_frames", {{"received", v.window_received}, {"lost", v.window_lost}}},
          {"since_frame_s", v.since_frame_s}};
}

std::vector<SnapshotBox> boxes_of(GstBuffer* buf) {
  std::vector<SnapshotBox> boxes;
  gst_torch::foreach_roi(buf, [&](GstVideoRegionOfInterestMeta* roi) {
    GstTorchDetection d;
    const bool det = gst_torch_detection_from_roi(roi, &d);
    boxes.push_back({static_cast<int>(roi->x), static_cast<int>(roi->y), static_cast<int>(roi->w),
                     static_cast<int>(roi->h), det && d.label ? d.label : ""});
  });
  return boxes;
}

}  // namespace

std::uint64_t Camera::frames_inferred() const {
  GstStructure* s = infer_stats(infer_);
  const std::uint64_t n = stat_u64(s, "frames-inferred");
  if (s) gst_structure_free(s);
  return n;
}

// torchpublish's counters, for the publish-loss alert (deploy/prometheus).
void Camera::read_mqtt_counters(StreamFigures& f) const {
  if (spec_.mqtt_topic.empty() || !pipeline_) return;
  GstElement* mqtt = gst_bin_get_by_name(GST_BIN(pipeline_), "mqtt");
  if (!mqtt) return;
  guint64 published = 0, failed = 0, dropped = 0;
  g_object_get(mqtt, "published", &published, "failed", &failed, "dropped", &dropped, nullptr);
  gst_object_unref(mqtt);
  f.mqtt = true;
  f.mqtt_published = published;
  f.mqtt_failed = failed;
  f.mqtt_dropped = dropped;
}

namespace {

// A machine-vision camera's own counters; a running camera whose frames
// do not reach the analysis takes its condition as state (camera_health.h).
void read_camera_counters(const AravisCounters& c, StreamFigures& f) {
  f.camera = true;
  f.camera_frames_received = c.frames.received;
  f.camera_frames_incomplete = c.frames.incomplete;
  f.camera_frames_missing = c.frames.missing;
  f.camera_frames_overflow = c.overflow;
  f.camera_packets_missing = c.packets_missing;
  f.camera_packets_resent = c.packets_resent;
  f.camera_triggers = c.triggers;
  f.camera_trigger_failures = c.trigger_failures;
  f.camera_lost_ratio = c.health.lost_ratio;
  f.camera_since_frame_s = c.health.since_frame_s;
  if (f.state == "running" && c.health.condition != CameraCondition::kOk)
    f.state = to_string(c.health.condition);
}

}  // namespace

StreamFigures Camera::figures() const {
  StreamFigures f;
  f.id = spec_.id;
  f.model = spec_.model;
  {
    // Before torchinfer's counters: a frame leaving the pipeline between
    // the two reads would otherwise make "out" overtake what torchinfer let out.
    std::lock_guard<std::mutex> lock(mu_);
    f.frames_out = frames_out_;
  }
  GstStructure* s = infer_stats(infer_);
  // One structure, read at one moment: the counters add up.
  f.frames_in = stat_u64(s, "frames-in");
  f.frames_inferred = stat_u64(s, "frames-inferred");
  f.frames_skipped = stat_u64(s, "frames-skipped");
  for (std::size_t r = 0; r < kSkipReasons; ++r)
    f.frames_skipped_by[r] = stat_u64(
        s, (std::string("frames-skipped-") + to_string(static_cast<SkipReason>(r))).c_str());
  f.frames_dropped = stat_u64(s, "frames-dropped");
  f.frames_in_flight = stat_u64(s, "frames-in-flight");
  f.frames_in_flight_limit = stat_u64(s, "frames-in-flight-limit");
  f.frames_invalid = stat_u64(s, "frames-invalid");
  f.frames_saturated = stat_u64(s, "frames-saturated");
  f.fps = stat_double(s, "fps");
  if (s) gst_structure_free(s);
  read_mqtt_counters(f);
  if (evidence_) evidence_->fill(f);
  {
    // Plain copies only under mu_: the streaming thread takes it per frame.
    std::lock_guard<std::mutex> lock(mu_);
    f.state = to_string(health_.state());
    f.latency_p50_s = latency_.quantile(0.5);
    f.latency_p99_s = latency_.quantile(0.99);
    f.latency_sum_s = latency_.sum();
    f.latency_count = latency_.count();
    f.reconnects = health_.reconnects();
    f.disconnects = health_.disconnects();
    f.errors = health_.errors();
    f.detections = detections_;
  }
  if (analytics_) read_counts(analytics_, f.lines, f.zones);
  if (aravis_) read_camera_counters(aravis_->counters(), f);
  if (restream_) {
    f.restream = true;
    f.restream_clients = restream_->clients();
    f.restream_frames_sent = restream_->frames_sent();
    f.restream_frames_dropped = restream_->frames_dropped();
  }
  if (parts_) parts_->figures(f);
  if (codes_) codes_->figures(f);
  return f;
}

nlohmann::json Camera::status() const {
  const StreamFigures f = figures();
  std::string last_error, previous_error;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_error = health_.last_error();
    previous_error = health_.previous_error();
  }
  nlohmann::json skipped_by = nlohmann::json::object();
  for (std::size_t r = 0; r < kSkipReasons; ++r)
    skipped_by[to_string(static_cast<SkipReason>(r))] = f.frames_skipped_by[r];
  nlohmann::json j = {
      {"id", f.id},
      {"uri", spec_.uri},
      {"model", f.model},
      {"state", f.state},
      {"last_error", last_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(last_error)},
      {"previous_error",
       previous_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(previous_error)},
      {"fps", f.fps},
      {"frames",
       {{"in", f.frames_in},
        {"inferred", f.frames_inferred},
        {"skipped", f.frames_skipped},
        {"skipped_by", skipped_by},
        {"dropped", f.frames_dropped},
        {"in_flight", f.frames_in_flight},
        {"in_flight_limit", f.frames_in_flight_limit},
        {"out", f.frames_out},
        {"invalid", f.frames_invalid},
        {"saturated", f.frames_saturated}}},
      {"latency_ms", {{"p50", f.latency_p50_s * 1e3}, {"p99", f.latency_p99_s * 1e3}}},
      {"reconnects", f.reconnects},
      {"disconnects", f.disconnects},
      {"detections", f.detections},
      {"rtsp_url", restream_ ? nlohmann::json(restream_->url()) : nlohmann::json(nullptr)},
      {"rtsp_clients", f.restream_clients},
      {"rtsp_frames", {{"sent", f.restream_frames_sent}, {"dropped", f.restream_frames_dropped}}},
      {"config", to_json(spec_)}};
  if (aravis_) j["camera"] = camera_status(f);
  if (evidence_) j["evidence"] = evidence_->status();
  if (parts_) parts_->status(j);
  if (codes_) codes_->status(j);
  std::lock_guard<std::mutex> lock(mu_);
  j["config"] = to_json(spec_with(layout_));
  j["analytics"] = analytics_ ? counts_json(f.lines, f.zones) : nlohmann::json(nullptr);
  return j;
}

StreamSpec Camera::spec_with(const AnalyticsConfig& layout) const {
  StreamSpec s = spec_;
  s.analytics = layout;
  return s;
}

std::string Camera::layout_path() const {
  return output_dir_ + "/" + spec_.id + ".analytics.json";
}

int Camera::set_analytics(const AnalyticsConfig& layout, std::string* why) {
  if (!analytics_) {
    *why = "stream '" + spec_.id +
           "' runs without tracking (\"track\": false): lines and zones count tracked objects; "
           "add the stream again with \"track\": true";
    return 409;
  }
  std::lock_guard<std::mutex> lock(layout_mu_);  // one writer of the file at a time
  if (!apply_layout(analytics_, layout_path(), layout, why)) return 500;
  std::lock_guard<std::mutex> state(mu_);
  layout_ = layout;
  return 200;
}

nlohmann::json Camera::analytics_status() const {
  const nlohmann::json s = status();
  const nlohmann::json& c = s["config"];
  return {{"id", spec_.id},
          {"lines", c.value("lines", nlohmann::json::array())},
          {"zones", c.value("zones", nlohmann::json::array())},
          {"analytics", s["analytics"]}};
}

nlohmann::json Camera::camera_status(const StreamFigures& f) const {
  const AravisCounters c = aravis_->counters();
  nlohmann::json last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last = last_result_;
  }
  return {{"name", spec_.camera.name},
          {"acquiring", c.acquiring},
          {"pixel_format", c.pixel_format},
          {"width", c.width},
          {"height", c.height},
          {"trigger", to_string(spec_.camera.trigger)},
          {"frames",
           {{"received", f.camera_frames_received},
            {"lost", c.frames.lost() + c.overflow},
            {"incomplete", f.camera_frames_incomplete},
            {"missing", f.camera_frames_missing},
            {"overflow", f.camera_frames_overflow}}},
          {"packets", {{"missing", f.camera_packets_missing}, {"resent", f.camera_packets_resent}}},
          {"aravis",
           {{"completed", c.completed},
            {"failures", c.failures},
            {"missing_frames", c.missing_frames},
            {"underruns", c.underruns}}},
          {"health", health_json(c.health)},
          {"triggers", f.camera_triggers},
          {"trigger_failures", c.trigger_failures},
          {"triggers_pending", c.triggers_pending},
          {"last_result", last}};
}

int Camera::trigger(std::string* why) {
  if (!aravis_) {
    *why =
        "stream '" + spec_.id + "' is not a machine-vision camera (aravis://): nothing to trigger";
    return 409;
  }
  if (spec_.camera.trigger != TriggerMode::kSoftware) {
    *why = "stream '" + spec_.id + "': camera '" + spec_.camera.name + "' is in " +
           to_string(spec_.camera.trigger) +
           " mode; a software trigger needs \"trigger\": \"software\"";
    return 409;
  }
  return aravis_->trigger(why);
}

std::vector<std::uint8_t> Camera::snapshot_jpeg(std::string* why) const {
  GstSample* sample = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (latest_) sample = gst_sample_ref(latest_);
  }
  if (!sample) {
    *why = "no frame yet";
    return {};
  }
  GstCaps* caps = gst_sample_get_caps(sample);
  GstBuffer* buf = gst_sample_get_buffer(sample);
  const GstStructure* st =
      caps && gst_caps_get_size(caps) ? gst_caps_get_structure(caps, 0) : nullptr;
  std::vector<std::uint8_t> jpeg;
  RawImage img;
  // Drawn here: a machine-vision camera's frames skip torchoverlay (camera.h).
  if (aravis_ && buf) img.boxes = boxes_of(buf);
  GstMapInfo map;
  GstVideoInfo info;
  GstVideoFrame frame;
  if (st && buf && gst_structure_has_name(st, "video/x-bayer")) {
    if (gst_buffer_map(buf, &map, GST_MAP_READ)) {
      if (bayer_image_of(st, map, &img, why)) jpeg = encode_or_say(img, why);
      gst_buffer_unmap(buf, &map);
    } else {
      *why = "the frame cannot be read";
    }
  } else if (!caps || !buf || !gst_video_info_from_caps(&info, caps) ||
             !raw_format_from_name(gst_video_format_to_string(GST_VIDEO_INFO_FORMAT(&info)),
                                   &img.format)) {
    *why = "the frame's format cannot be encoded";
  } else if (gst_video_frame_map(&frame, &info, buf, GST_MAP_READ)) {
    img.width = GST_VIDEO_FRAME_WIDTH(&frame);
    img.height = GST_VIDEO_FRAME_HEIGHT(&frame);
    for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&frame) && p < 3; ++p) {
      img.planes[p] = static_cast<const std::uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&frame, p));
      img.strides[p] = GST_VIDEO_FRAME_PLANE_STRIDE(&frame, p);
    }
    if (aravis_) img.bits = aravis_->counters().bits;
    jpeg = encode_or_say(img, why);
    gst_video_frame_unmap(&frame);
  } else {
    *why = "the frame cannot be read";
  }
  // Not on the main loop: this may be the last reference (see take_sample).
  if (pipeline_)
    gst_element_call_async(
        pipeline_, [](GstElement*, gpointer p) { gst_sample_unref(static_cast<GstSample*>(p)); },
        sample, nullptr);
  else
    gst_sample_unref(sample);
  return jpeg;
}

}  // namespace torchinfer::server
