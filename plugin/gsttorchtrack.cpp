/**
 * SECTION:element-torchtrack
 *
 * Gives each detection (the region-of-interest metas torchnms attaches) a
 * stable object id within its stream, SORT-style (src/track/sort_tracker.h):
 * an "object_id" param structure with "id" (int, from 1), "predicted"
 * (boolean) and "age" (frames). Detections of tracks not yet confirmed
 * (min-hits) get no object_id, as with DL Streamer's gvatrack.
 *
 *   ... ! torchinfer model=det.pt inference-interval=3 ! torchnms ! torchtrack ! torchoverlay ! ...
 *
 * short-term (the default): on frames torchinfer did not infer
 * (GstTorchTensorMeta.inferred = FALSE) the repeated detections are replaced
 * by each visible track's predicted box, marked predicted = TRUE. On frames
 * torchinfer's inference-gate=motion found still (skip_reason
 * GST_TORCH_SKIP_STILL: nothing moved since the result was computed) the
 * tracks are held instead: each visible track at its latest detection's
 * box, predicted = FALSE, and the frame neither moves nor ages them.
 * zero-term: every frame's detections are taken as new.
 *
 * Several streams (e.g. through a funnel, which sends each stream's
 * stream-start again when it switches) each have their own tracker, chosen
 * by the stream-id of the latest stream-start. Element messages
 * "torchtrack-track-started" and "torchtrack-track-ended" mark each track's
 * life.
 */
#include "gsttorchtrack.h"

#include <gst/video/video.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"
#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "torchtrack-properties.h"
#include "track/sort_tracker.h"

GST_DEBUG_CATEGORY_STATIC(gst_torchtrack_debug);
#define GST_CAT_DEFAULT gst_torchtrack_debug

using namespace torchinfer;
namespace track = torchinfer::gst::track;
using track::Settings;

namespace {

struct Stream {
  explicit Stream(const TrackerOptions& o) : tracker(o) {}
  SortTracker tracker;
  GstClockTime last_pts = GST_CLOCK_TIME_NONE;
  // PTS of each confirmed track's latest detection: a track ends max-age
  // frames after it was last seen, and dwell time wants the sighting.
  std::map<int, GstClockTime> last_seen;
};

struct State {
  std::mutex lock;  // guards settings
  Settings settings;
  // streaming thread only
  Settings active;  // copied at start
  TrackerOptions options;
  std::map<std::string, Stream> streams;  // by stream-id
  std::string current;                    // stream-id of the latest stream-start
  GstVideoInfo info;
  bool have_info = false;
};

}  // namespace

struct _GstTorchTrack {
  GstBaseTransform parent;
  State* state;
};

void gst_torchtrack_events_meta_register(void) {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    static const gchar* tags[] = {nullptr};
    gst_meta_register_custom(
        GST_TORCHTRACK_EVENTS_META_NAME, tags,
        [](GstBuffer* dest, GstCustomMeta* meta, GstBuffer*, GQuark type, gpointer,
           gpointer) -> gboolean {
          if (!GST_META_TRANSFORM_IS_COPY(type)) return FALSE;
          GstCustomMeta* d = gst_buffer_add_custom_meta(dest, GST_TORCHTRACK_EVENTS_META_NAME);
          if (!d) return FALSE;
          const GstStructure* src = gst_custom_meta_get_structure(meta);
          GstStructure* dst = gst_custom_meta_get_structure(d);
          gst_structure_set_name(dst, gst_structure_get_name(src));
          if (const GValue* events = gst_structure_get_value(src, "events"))
            gst_structure_set_value(dst, "events", events);
          return TRUE;
        },
        nullptr, nullptr);
    g_once_init_leave(&done, 1);
  }
}

G_DEFINE_TYPE(GstTorchTrack, gst_torchtrack, GST_TYPE_BASE_TRANSFORM);
GST_ELEMENT_REGISTER_DEFINE(torchtrack, "torchtrack", GST_RANK_NONE, GST_TYPE_TORCHTRACK);

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw(ANY); video/x-bayer"));
static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS, GST_STATIC_CAPS("video/x-raw(ANY); video/x-bayer"));

static void gst_torchtrack_set_property(GObject* object, guint prop_id, const GValue* value,
                                        GParamSpec* pspec) {
  auto* self = GST_TORCHTRACK(object);
  const bool running = gst::element_running(GST_ELEMENT(object));
  std::lock_guard<std::mutex> lock(self->state->lock);
  track::properties().set(self->state->settings, prop_id, value, pspec, running);
}

static void gst_torchtrack_get_property(GObject* object, guint prop_id, GValue* value,
                                        GParamSpec* pspec) {
  auto* self = GST_TORCHTRACK(object);
  std::lock_guard<std::mutex> lock(self->state->lock);
  track::properties().get(self->state->settings, {}, prop_id, value, pspec);
}

static gboolean gst_torchtrack_start(GstBaseTransform* trans) {
  auto* self = GST_TORCHTRACK(trans);
  State& st = *self->state;
  {
    std::lock_guard<std::mutex> lock(st.lock);
    st.active = st.settings;
  }
  st.streams.clear();
  st.current.clear();
  st.have_info = false;
  st.options.max_age = static_cast<int>(st.active.max_age);
  st.options.min_hits = static_cast<int>(st.active.min_hits);
  st.options.iou_threshold = st.active.iou;
  try {
    SortTracker check(st.options);  // validates the options once, before any frame
  } catch (const Error& e) {
    GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("%s", e.what()),
                      ("set max-age >= 0, min-hits >= 1 and 0 < iou-threshold <= 1"));
    return FALSE;
  }
  return TRUE;
}

static gboolean gst_torchtrack_stop(GstBaseTransform* trans) {
  State& st = *GST_TORCHTRACK(trans)->state;
  st.streams.clear();
  st.current.clear();
  return TRUE;
}

static gboolean gst_torchtrack_set_caps(GstBaseTransform* trans, GstCaps* incaps, GstCaps*) {
  State& st = *GST_TORCHTRACK(trans)->state;
  st.have_info = gst_video_info_from_caps(&st.info, incaps) && GST_VIDEO_INFO_WIDTH(&st.info) > 0 &&
                 GST_VIDEO_INFO_HEIGHT(&st.info) > 0;
  if (!st.have_info) {
    GST_ELEMENT_ERROR(trans, STREAM, FORMAT, ("torchtrack needs video caps with a frame size."),
                      ("caps %" GST_PTR_FORMAT, incaps));
    return FALSE;
  }
  return TRUE;
}

static Stream& current_stream(State& st) {
  auto it = st.streams.find(st.current);
  if (it == st.streams.end()) it = st.streams.try_emplace(st.current, st.options).first;
  return it->second;
}

static GstStructure* event_structure(const char* name, const TrackEvent& e, GstClockTime pts,
                                     const std::string& stream_id) {
  return gst_structure_new(name, "id", G_TYPE_INT, e.id, "label", G_TYPE_STRING, e.label.c_str(),
                           "label-id", G_TYPE_INT, e.label_id, "pts", G_TYPE_UINT64, pts,
                           "stream-id", G_TYPE_STRING, stream_id.c_str(), "age", G_TYPE_INT, e.age,
                           nullptr);
}

static void post(GstTorchTrack* self, GstStructure* s) {
  gst_element_post_message(GST_ELEMENT(self), gst_message_new_element(GST_OBJECT(self), s));
}

static std::vector<GstStructure*> ended_structures(Stream& stream,
                                                   const std::vector<TrackEvent>& ended,
                                                   GstClockTime pts, const std::string& stream_id,
                                                   const char* reason) {
  std::vector<GstStructure*> out;
  for (const TrackEvent& e : ended) {
    GstStructure* s = event_structure("torchtrack-track-ended", e, pts, stream_id);
    const auto seen = stream.last_seen.find(e.id);
    gst_structure_set(s, "reason", G_TYPE_STRING, reason, "last-seen-pts", G_TYPE_UINT64,
                      seen != stream.last_seen.end() ? seen->second : GST_CLOCK_TIME_NONE, nullptr);
    if (seen != stream.last_seen.end()) stream.last_seen.erase(seen);
    out.push_back(s);
  }
  return out;
}

// The frame's track events ride on it too, so that elements downstream
// (which cannot read the bus) can publish them.
static void attach_events(GstBuffer* buf, const std::vector<GstStructure*>& events) {
  GstCustomMeta* cm = gst_buffer_add_custom_meta(buf, GST_TORCHTRACK_EVENTS_META_NAME);
  if (!cm) return;
  GstStructure* s = gst_custom_meta_get_structure(cm);
  gst_structure_set_name(s, "torchtrack-events");
  GValue list = G_VALUE_INIT, v = G_VALUE_INIT;
  gst_value_array_init(&list, events.size());
  for (const GstStructure* e : events) {
    g_value_init(&v, GST_TYPE_STRUCTURE);
    gst_value_set_structure(&v, e);
    gst_value_array_append_and_take_value(&list, &v);
  }
  gst_structure_take_value(s, "events", &list);
}

// Ends every track of every stream (end of stream, flush); ids keep counting.
static void finish_all(GstTorchTrack* self, const char* reason) {
  for (auto& [id, stream] : self->state->streams)
    for (GstStructure* s :
         ended_structures(stream, stream.tracker.finish(), stream.last_pts, id, reason))
      post(self, s);
}

static gboolean gst_torchtrack_sink_event(GstBaseTransform* trans, GstEvent* event) {
  auto* self = GST_TORCHTRACK(trans);
  State& st = *self->state;
  switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_STREAM_START: {
      const gchar* id = nullptr;
      gst_event_parse_stream_start(event, &id);
      st.current = id ? id : "";
      GST_DEBUG_OBJECT(self, "stream %s (%zu known)", st.current.c_str(), st.streams.size());
      break;
    }
    case GST_EVENT_FLUSH_STOP:
      finish_all(self, "flush");
      break;
    case GST_EVENT_EOS:
      finish_all(self, "eos");
      break;
    default:
      break;
  }
  return GST_BASE_TRANSFORM_CLASS(gst_torchtrack_parent_class)->sink_event(trans, event);
}

static void add_object_id(GstVideoRegionOfInterestMeta* roi, const TrackedObject& o) {
  gst_video_region_of_interest_meta_add_param(
      roi, gst_structure_new(GST_TORCHTRACK_OBJECT_ID_STRUCTURE_NAME, "id", G_TYPE_INT, o.id,
                             "predicted", G_TYPE_BOOLEAN, o.predicted, "age", G_TYPE_INT, o.age,
                             nullptr));
}

// The ROIs torchnms attached, i.e. those with a "detection" param; others
// are not torchtrack's and pass untouched.
static std::vector<GstVideoRegionOfInterestMeta*> detection_rois(GstBuffer* buf) {
  std::vector<GstVideoRegionOfInterestMeta*> out;
  gst_torch::foreach_roi(buf, [&](GstVideoRegionOfInterestMeta* roi) {
    if (gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_DETECTION_STRUCTURE_NAME))
      out.push_back(roi);
  });
  return out;
}

// A frame that was not inferred: its detections are the last inferred
// frame's, so they are replaced by where the tracks have moved since (or,
// still, by where they were seen: nothing has moved).
static void show_predictions(State& st, GstBuffer* buf, Stream& stream, bool still) {
  for (GstVideoRegionOfInterestMeta* roi : detection_rois(buf))
    gst_buffer_remove_meta(buf, reinterpret_cast<GstMeta*>(roi));
  const double fw = GST_VIDEO_INFO_WIDTH(&st.info), fh = GST_VIDEO_INFO_HEIGHT(&st.info);
  const TrackStep step = still ? stream.tracker.hold() : stream.tracker.predict();
  for (const TrackedObject& o : step.objects) {
    // Clipped to the frame like torchnms's boxes; one that has left it
    // (less than a pixel still inside) is not shown.
    const double x0 = std::clamp(o.box.x_min, 0.0, fw), x1 = std::clamp(o.box.x_max, 0.0, fw);
    const double y0 = std::clamp(o.box.y_min, 0.0, fh), y1 = std::clamp(o.box.y_max, 0.0, fh);
    if (x1 - x0 < 1 || y1 - y0 < 1) continue;
    GstVideoRegionOfInterestMeta* roi =
        gst_buffer_add_torch_detection(buf, o.label.c_str(), o.label_id, o.confidence, x0, y0, x1,
                                       y1, static_cast<guint>(fw), static_cast<guint>(fh));
    if (roi) add_object_id(roi, o);
  }
}

static void track_detections(GstTorchTrack* self, GstBuffer* buf, Stream& stream) {
  State& st = *self->state;
  const double fw = GST_VIDEO_INFO_WIDTH(&st.info), fh = GST_VIDEO_INFO_HEIGHT(&st.info);
  const std::vector<GstVideoRegionOfInterestMeta*> rois = detection_rois(buf);
  std::vector<TrackDetection> dets;
  dets.reserve(rois.size());
  for (GstVideoRegionOfInterestMeta* roi : rois) {
    GstTorchDetection d;
    TrackDetection t;
    if (gst_torch_detection_from_roi(roi, &d)) {
      t.box = {d.x_min * fw, d.y_min * fh, d.x_max * fw, d.y_max * fh};
      t.label = d.label;
      t.label_id = d.label_id;
      t.confidence = d.confidence;
    } else {
      // An incomplete "detection" param: the pixel box and type still track.
      t.box = {double(roi->x), double(roi->y), double(roi->x + roi->w), double(roi->y + roi->h)};
      t.label = g_quark_to_string(roi->roi_type);
    }
    dets.push_back(std::move(t));
  }
  const TrackStep step = stream.tracker.update(dets);
  for (const TrackedObject& o : step.objects) {
    add_object_id(rois[o.detection], o);
    stream.last_seen[o.id] = GST_BUFFER_PTS(buf);
  }
  std::vector<GstStructure*> events =
      ended_structures(stream, step.ended, GST_BUFFER_PTS(buf), st.current, "lost");
  for (const TrackEvent& e : step.started)
    events.push_back(
        event_structure("torchtrack-track-started", e, GST_BUFFER_PTS(buf), st.current));
  if (events.empty()) return;
  attach_events(buf, events);
  for (GstStructure* s : events) post(self, s);
}

static GstFlowReturn gst_torchtrack_transform_ip(GstBaseTransform* trans, GstBuffer* buf) {
  auto* self = GST_TORCHTRACK(trans);
  State& st = *self->state;
  try {
    Stream& stream = current_stream(st);
    stream.last_pts = GST_BUFFER_PTS(buf);
    const GstTorchTensorMeta* meta = gst_buffer_get_torch_tensor_meta(buf);
    // Frames without a tensor meta: their ROIs come from elsewhere and are
    // taken as this frame's detections.
    if (st.active.type == track::GST_TORCHTRACK_SHORT_TERM && meta && !meta->inferred)
      show_predictions(st, buf, stream, meta->skip_reason == GST_TORCH_SKIP_STILL);
    else
      track_detections(self, buf, stream);
  } catch (const std::exception& e) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Tracking failed: %s", e.what()), (nullptr));
    return GST_FLOW_ERROR;
  } catch (...) {
    GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Tracking failed."), (nullptr));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static void gst_torchtrack_finalize(GObject* object) {
  auto* self = GST_TORCHTRACK(object);
  delete self->state;
  self->state = nullptr;
  G_OBJECT_CLASS(gst_torchtrack_parent_class)->finalize(object);
}

static void gst_torchtrack_class_init(GstTorchTrackClass* klass) {
  auto* gobject_class = G_OBJECT_CLASS(klass);
  auto* element_class = GST_ELEMENT_CLASS(klass);
  auto* trans_class = GST_BASE_TRANSFORM_CLASS(klass);
  gobject_class->set_property = gst_torchtrack_set_property;
  gobject_class->get_property = gst_torchtrack_get_property;
  gobject_class->finalize = gst_torchtrack_finalize;
  track::install_properties(gobject_class);

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(
      element_class, "Torch object tracker", "Filter/Analyzer/Video",
      "Gives each detection a stable object id per stream (IoU + Kalman, SORT-style)",
      "torchinfer developers");

  trans_class->start = GST_DEBUG_FUNCPTR(gst_torchtrack_start);
  trans_class->stop = GST_DEBUG_FUNCPTR(gst_torchtrack_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR(gst_torchtrack_set_caps);
  trans_class->transform_ip = GST_DEBUG_FUNCPTR(gst_torchtrack_transform_ip);
  trans_class->sink_event = GST_DEBUG_FUNCPTR(gst_torchtrack_sink_event);
  // Not passthrough: the buffer must be writable to take metas.
  trans_class->passthrough_on_same_caps = FALSE;

  GST_DEBUG_CATEGORY_INIT(gst_torchtrack_debug, "torchtrack", 0, "torchinfer object tracking");
}

static void gst_torchtrack_init(GstTorchTrack* self) {
  self->state = new State();
  gst_video_info_init(&self->state->info);
  gst_base_transform_set_in_place(GST_BASE_TRANSFORM(self), TRUE);
}
