#include "camera_evidence.h"

#include <gst/video/video.h>

#include <algorithm>

#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

namespace torchinfer::server {

namespace {

// torchtrack's id on a tracked ROI (the "object_id" param); -1 if untracked
// (a track not yet confirmed has none).
gint track_id_of(GstVideoRegionOfInterestMeta* roi) {
  gint id = -1;
  return gst_torch_roi_get_object_id(roi, &id, nullptr) ? id : -1;
}

// The recorder's clock (evidence_recorder.cpp): running time, which goes on
// across a looped file's segment seeks where the PTS starts again at 0.
std::int64_t running_time(GstPad* pad, GstBuffer* buf) {
  if (!GST_BUFFER_PTS_IS_VALID(buf)) return -1;
  GstEvent* ev = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0);
  if (!ev) return static_cast<std::int64_t>(GST_BUFFER_PTS(buf));
  const GstSegment* seg = nullptr;
  gst_event_parse_segment(ev, &seg);
  const guint64 t = gst_segment_to_running_time(seg, GST_FORMAT_TIME, GST_BUFFER_PTS(buf));
  gst_event_unref(ev);
  return GST_CLOCK_TIME_IS_VALID(t) ? static_cast<std::int64_t>(t) : -1;
}

// The box of track `id` on this frame (empty if it has none: no crop).
cv::Rect box_of(GstBuffer* buf, gint id) {
  cv::Rect box;
  gst_torch::foreach_roi(buf, [&](GstVideoRegionOfInterestMeta* roi) {
    if (track_id_of(roi) != id) return true;
    box = cv::Rect(roi->x, roi->y, roi->w, roi->h);
    return false;
  });
  return box;
}

// Bounded: torchtrack numbers tracks upwards, so the oldest ids go first.
constexpr std::size_t kRememberedTracks = 4096;

}  // namespace

CameraEvidence::CameraEvidence(std::string id, EvidenceSpec spec,
                               std::shared_ptr<evidence::EvidenceStore> store)
    : id_(std::move(id)),
      spec_(std::move(spec)),
      store_(std::move(store)),
      recorder_(std::make_unique<EvidenceRecorder>(store_)) {}

CameraEvidence::~CameraEvidence() {
  finish();
}

bool CameraEvidence::attach(GstElement* pipeline, GstElement* tee, GstElement* after,
                            std::string* why) {
  if (!recorder_->attach(pipeline, tee, why)) return false;
  GstPad* pad = gst_element_get_static_pad(after, "src");
  // The probe holds a plain pointer: the pipeline stops (NULL) before this
  // object goes (Camera::shutdown, then the camera's destructor).
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, this, nullptr);
  gst_object_unref(pad);
  watch_losses();
  return true;
}

void CameraEvidence::watch_losses() {
  // A weak reference: the timer ends by itself once the camera is gone.
  auto* weak = new std::weak_ptr<CameraEvidence>(weak_from_this());
  g_timeout_add_seconds_full(
      G_PRIORITY_DEFAULT, 1,
      [](gpointer p) -> gboolean {
        std::shared_ptr<CameraEvidence> self =
            static_cast<std::weak_ptr<CameraEvidence>*>(p)->lock();
        if (!self) return G_SOURCE_REMOVE;
        self->warn_if_lost();
        return G_SOURCE_CONTINUE;
      },
      weak, [](gpointer p) { delete static_cast<std::weak_ptr<CameraEvidence>*>(p); });
}

void CameraEvidence::warn_if_lost() {
  const evidence::EvidenceCounters c = recorder_->counters();
  if (c.write_failures <= failures_told_) return;
  g_printerr(
      "torchinfer-server: stream %s: WARNING: evidence: %llu file(s) lost (%llu in all; last: "
      "%s); the camera keeps running\n",
      id_.c_str(), static_cast<unsigned long long>(c.write_failures - failures_told_),
      static_cast<unsigned long long>(c.write_failures), c.last_error.c_str());
  failures_told_ = c.write_failures;
}

GstPadProbeReturn CameraEvidence::on_buffer(GstPad* pad, GstPadProbeInfo* info, gpointer self) {
  // Nothing may throw into GStreamer's streaming thread.
  try {
    static_cast<CameraEvidence*>(self)->look(pad, GST_PAD_PROBE_INFO_BUFFER(info));
  } catch (const std::exception& e) {
    g_printerr("torchinfer-server: evidence: %s\n", e.what());
  }
  return GST_PAD_PROBE_OK;
}

// "lines": each crossing of a listed line by an object of the classes is an
// event (torchanalytics' events on this frame's meta), its box the ROI of
// the crossing track.
void CameraEvidence::look_crossings(GstPad* pad, GstBuffer* buf) {
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buf, GST_TORCH_ANALYTICS_META_NAME);
  const GValue* events =
      cm ? gst_structure_get_value(gst_custom_meta_get_structure(cm), "events") : nullptr;
  if (!events || !GST_VALUE_HOLDS_ARRAY(events)) return;
  for (guint i = 0; i < gst_value_array_get_size(events); ++i) {
    const GValue* v = gst_value_array_get_value(events, i);
    const GstStructure* s = GST_VALUE_HOLDS_STRUCTURE(v) ? gst_value_get_structure(v) : nullptr;
    if (!s || !gst_structure_has_name(s, "torchanalytics-crossing")) continue;
    const char* line = gst_structure_get_string(s, "line");
    const char* label = gst_structure_get_string(s, "label");
    const char* direction = gst_structure_get_string(s, "direction");
    gint track = -1;
    gst_structure_get_int(s, "id", &track);
    if (!line || !label || !direction ||
        std::find(spec_.lines.begin(), spec_.lines.end(), line) == spec_.lines.end() ||
        !keeps_class(spec_, label))
      continue;
    evidence::EventRecord e;
    e.reason = std::string("line:") + line + ":" + direction;
    e.label = label;
    e.track_id = track;
    record(pad, buf, e, box_of(buf, track));
  }
}

void CameraEvidence::look(GstPad* pad, GstBuffer* buf) {
  if (!buf) return;
  if (!spec_.lines.empty()) return look_crossings(pad, buf);
  gst_torch::foreach_detection(buf,
                               [&](GstVideoRegionOfInterestMeta* roi, const GstTorchDetection& d) {
                                 const gint track = track_id_of(roi);
                                 const std::string label = d.label ? d.label : "";
                                 if (track < 0 || !keeps_class(spec_, label)) return;
                                 {
                                   std::lock_guard<std::mutex> lock(mu_);
                                   if (finished_ || !recorded_.insert(track).second) return;
                                   if (recorded_.size() > kRememberedTracks)
                                     recorded_.erase(recorded_.begin());
                                 }
                                 evidence::EventRecord e;
                                 e.reason = "class:" + label;
                                 e.label = label;
                                 e.track_id = track;
                                 record(pad, buf, e, cv::Rect(roi->x, roi->y, roi->w, roi->h));
                               });
}

void CameraEvidence::record(GstPad* pad, GstBuffer* buf, evidence::EventRecord e,
                            const cv::Rect& box) {
  GstVideoInfo info;
  GstCaps* caps = gst_pad_get_current_caps(pad);
  const bool have_info = caps && gst_video_info_from_caps(&info, caps);
  if (caps) gst_caps_unref(caps);
  if (!have_info) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
  }
  e.pts_ns = running_time(pad, buf);
  recorder_->record(e, buf, info, box);
}

void CameraEvidence::finish_async(GstElement* pipeline) {
  auto* hold = new std::shared_ptr<CameraEvidence>(shared_from_this());
  gst_element_call_async(
      pipeline,
      [](GstElement*, gpointer p) {
        (*static_cast<std::shared_ptr<CameraEvidence>*>(p))->finish();
      },
      hold, [](gpointer p) { delete static_cast<std::shared_ptr<CameraEvidence>*>(p); });
}

void CameraEvidence::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
  }
  recorder_->finish();
}

void CameraEvidence::fill(StreamFigures& f) const {
  const evidence::EvidenceCounters c = recorder_->counters();
  f.evidence = true;
  f.evidence_events = c.events;
  f.evidence_snapshots = c.snapshots;
  f.evidence_crops = c.crops;
  f.evidence_clips = c.clips;
  f.evidence_write_failures = c.write_failures;
  f.evidence_pruned = c.pruned_events;
  f.evidence_bytes = c.bytes_on_disk;
  f.evidence_ring_bytes = recorder_->ring_bytes();
  const RecorderLosses l = recorder_->losses();
  f.evidence_ring_dropped = l.queue_dropped;
  f.evidence_ring_evicted = l.ring_evicted_early;
  f.evidence_clips_short = l.clips_short;
}

nlohmann::json CameraEvidence::event_json(const evidence::EventRecord& e) const {
  nlohmann::json j = evidence::to_json(e);
  const std::string base = "/streams/" + id_ + "/events/" + std::to_string(e.n) + "/";
  j["snapshot_url"] = e.snapshot_written ? nlohmann::json(base + "snapshot.jpg") : nullptr;
  j["crop_url"] = e.crop_written ? nlohmann::json(base + "crop.jpg") : nullptr;
  j["clip_url"] = e.clip_written ? nlohmann::json(base + "clip.mkv") : nullptr;
  return j;
}

nlohmann::json CameraEvidence::status() const {
  const evidence::EvidenceCounters c = recorder_->counters();
  const RecorderLosses l = recorder_->losses();
  nlohmann::json last = nlohmann::json::array();
  for (const auto& e : store_->list(4)) last.push_back(event_json(e));
  return {
      {"dir", store_->settings().dir},
      {"classes", spec_.classes},
      {"events", c.events},
      {"files", {{"snapshot", c.snapshots}, {"crop", c.crops}, {"clip", c.clips}}},
      {"write_failures", c.write_failures},
      {"pruned", c.pruned_events},
      {"bytes", c.bytes_on_disk},
      {"ring_bytes", recorder_->ring_bytes()},
      {"ring_frames",
       {{"held", recorder_->ring_frames()},
        {"encoded", l.frames_encoded},
        {"lost_queue", l.queue_dropped},
        {"lost_memory", l.ring_evicted_early}}},
      {"clips_short", l.clips_short},
      {"last_error", c.last_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.last_error)},
      {"events_url", "/streams/" + id_ + "/events"},
      {"last_events", last}};
}

}  // namespace torchinfer::server
