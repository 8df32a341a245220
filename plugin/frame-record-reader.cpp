#include "frame-record-reader.h"

#include <gst/video/video.h>

#include <algorithm>
#include <optional>

#include "anomaly-map-view.h"
#include "common/stream_stats.h"
#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "gsttorchtrack.h"
#include "mask-param.h"
#include "tensor-views.h"

namespace torchinfer::gst {
namespace {

using gst_torch::foreach_structure;

std::optional<std::int64_t> clock_time(GstClockTime t) {
  if (!GST_CLOCK_TIME_IS_VALID(t)) return std::nullopt;
  return static_cast<std::int64_t>(t);
}

// torchanalytics: the zones the object is in.
void read_roi_zones(GstVideoRegionOfInterestMeta* roi, DetectionRecord& rec) {
  const GstStructure* s =
      gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_ANALYTICS_ROI_STRUCTURE_NAME);
  const GValue* zones = s ? gst_structure_get_value(s, "zones") : nullptr;
  if (!zones || !GST_VALUE_HOLDS_ARRAY(zones)) return;
  rec.zones.emplace();
  for (guint i = 0; i < gst_value_array_get_size(zones); ++i) {
    const GValue* v = gst_value_array_get_value(zones, i);
    if (G_VALUE_HOLDS_STRING(v)) rec.zones->push_back(g_value_get_string(v));
  }
}

void read_classification(GstBuffer* buf, FrameRecord& r) {
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buf, GST_TORCH_CLASSIFICATION_META_NAME);
  if (!cm) return;
  const GstStructure* s = gst_custom_meta_get_structure(cm);
  const GValue* labels = gst_structure_get_value(s, "labels");
  const GValue* ids = gst_structure_get_value(s, "label_ids");
  const GValue* confs = gst_structure_get_value(s, "confidences");
  if (!labels || !ids || !confs) return;
  const guint n = gst_value_array_get_size(labels);
  for (guint i = 0;
       i < n && i < gst_value_array_get_size(ids) && i < gst_value_array_get_size(confs); ++i) {
    ClassResult c;
    const gchar* l = g_value_get_string(gst_value_array_get_value(labels, i));
    c.label = l ? l : "";
    c.label_id = g_value_get_int(gst_value_array_get_value(ids, i));
    c.confidence = g_value_get_double(gst_value_array_get_value(confs, i));
    r.classification.push_back(std::move(c));
  }
}

std::string string_field(const GstStructure* s, const char* name) {
  const gchar* v = gst_structure_get_string(s, name);
  return v ? v : "";
}

// Boxes of the map's anomalous areas; none when the model gave no map.
std::vector<AnomalyRegion> map_regions(const GstStructure* s, GstTorchTensorMeta* tm, double x0,
                                       double y0, double x1, double y1) {
  const auto view = anomaly_map_view(s, tm, x0, y0, x1, y1);
  if (!view) return {};
  return anomaly_regions(view->map, view->rule, view->where);
}

AnomalyRecord read_anomaly(const GstStructure* s) {
  AnomalyRecord a;
  gst_structure_get_double(s, "score", &a.score);
  gst_structure_get_double(s, "raw_score", &a.raw_score);
  gboolean anomalous = FALSE;
  gst_structure_get_boolean(s, "anomalous", &anomalous);
  a.anomalous = anomalous;
  return a;
}

// torchinfer roi-list anomaly result (the first one: one anomaly model per part).
void read_roi_anomaly(GstBuffer* buf, GstVideoRegionOfInterestMeta* roi, bool regions,
                      DetectionRecord& rec) {
  const GstStructure* s = gst_torch_roi_get_anomaly(roi, nullptr);
  if (!s) return;
  rec.anomaly = read_anomaly(s);
  if (!regions) return;
  GstTorchTensorMeta* tm =
      gst_buffer_get_torch_tensor_meta_for_roi(buf, roi->id, gst_structure_get_string(s, "model"));
  rec.anomaly->regions = map_regions(s, tm, roi->x, roi->y, static_cast<double>(roi->x) + roi->w,
                                     static_cast<double>(roi->y) + roi->h);
}

void read_frame_anomaly(GstBuffer* buf, GstTorchTensorMeta* tm, bool regions, FrameRecord& r) {
  const GstStructure* s = gst_buffer_get_torch_anomaly(buf);
  if (!s) return;
  r.anomaly = read_anomaly(s);
  if (regions) r.anomaly->regions = map_regions(s, tm, 0, 0, tm->frame_width, tm->frame_height);
}

// torchinfer roi-list results: one "classification" param per classifier.
void read_roi_classifications(GstVideoRegionOfInterestMeta* roi, DetectionRecord& rec) {
  gpointer state = nullptr;
  while (const GstStructure* s = gst_torch_roi_iterate_classifications(roi, &state)) {
    RegionClassificationRecord c;
    c.label = string_field(s, "label");
    gst_structure_get_int(s, "label_id", &c.label_id);
    gst_structure_get_double(s, "confidence", &c.confidence);
    c.model = string_field(s, "model");
    c.model_instance_id = string_field(s, "model-instance-id");
    c.element = string_field(s, "element");
    gboolean inferred = TRUE;
    if (gst_structure_get_boolean(s, "inferred", &inferred)) c.inferred = inferred;
    rec.classification.push_back(std::move(c));
  }
}

// torchcodes' "code" structure; nullopt without format or text.
std::optional<CodeRecord> code_record(const GstStructure* s) {
  const gchar* format = s ? gst_structure_get_string(s, "format") : nullptr;
  const gchar* text = s ? gst_structure_get_string(s, "text") : nullptr;
  if (!format || !text) return std::nullopt;
  CodeRecord c{format, text};
  gst_structure_get_double(s, "x_min", &c.x_min);
  gst_structure_get_double(s, "y_min", &c.y_min);
  gst_structure_get_double(s, "x_max", &c.x_max);
  gst_structure_get_double(s, "y_max", &c.y_max);
  return c;
}

// torchcodes' full-frame read: the frame's "codes" array.
void read_frame_codes(GstBuffer* buf, FrameRecord& r) {
  const GstStructure* s = gst_buffer_get_torch_codes(buf);
  const GValue* list = s ? gst_structure_get_value(s, "codes") : nullptr;
  if (!list || !GST_VALUE_HOLDS_ARRAY(list)) return;
  r.codes.emplace();
  for (guint i = 0; i < gst_value_array_get_size(list); ++i) {
    const GValue* v = gst_value_array_get_value(list, i);
    if (!GST_VALUE_HOLDS_STRUCTURE(v)) continue;
    if (auto c = code_record(gst_value_get_structure(v))) r.codes->push_back(std::move(*c));
  }
}

// Every ROI meta with a "detection" param, in the order they were attached.
void read_detections(GstBuffer* buf, bool anomaly_regions, FrameRecord& r) {
  gst_torch::foreach_detection(buf,
                               [&](GstVideoRegionOfInterestMeta* roi, const GstTorchDetection& d) {
                                 DetectionRecord rec;
                                 rec.box.label = d.label;
                                 rec.box.label_id = d.label_id;
                                 rec.box.confidence = d.confidence;
                                 rec.nx_min = d.x_min;
                                 rec.ny_min = d.y_min;
                                 rec.nx_max = d.x_max;
                                 rec.ny_max = d.y_max;
                                 rec.box.x_min = d.x_min * r.width;
                                 rec.box.y_min = d.y_min * r.height;
                                 rec.box.x_max = d.x_max * r.width;
                                 rec.box.y_max = d.y_max * r.height;
                                 gint object_id = 0;
                                 gboolean predicted = FALSE;
                                 if (gst_torch_roi_get_object_id(roi, &object_id, &predicted)) {
                                   rec.object_id = object_id;
                                   rec.predicted = predicted;
                                 }
                                 read_roi_zones(roi, rec);
                                 read_roi_classifications(roi, rec);
                                 read_roi_anomaly(buf, roi, anomaly_regions, rec);
                                 rec.code = code_record(gst_torch_roi_get_code(roi));
                                 rec.mask = read_mask_param(gst_torch_roi_get_mask(roi));
                                 GstTorchRotatedBox rb;
                                 if (gst_torch_roi_get_rotated_box(roi, &rb))
                                   rec.box.rotated = RotatedBox{rb.cx, rb.cy, rb.width, rb.height, rb.angle};
                                 r.detections.push_back(std::move(rec));
                               });
}

std::optional<std::int64_t> pts_field(const GstStructure* s, const char* name) {
  guint64 t = GST_CLOCK_TIME_NONE;
  if (!gst_structure_get_uint64(s, name, &t)) return std::nullopt;
  return clock_time(t);
}

// torchtrack's events meta: the same structures as its element messages.
void read_track_events(GstBuffer* buf, FrameRecord& r) {
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buf, GST_TORCHTRACK_EVENTS_META_NAME);
  if (!cm) return;
  const GValue* events = gst_structure_get_value(gst_custom_meta_get_structure(cm), "events");
  if (!events || !GST_VALUE_HOLDS_ARRAY(events)) return;
  for (guint i = 0; i < gst_value_array_get_size(events); ++i) {
    const GValue* v = gst_value_array_get_value(events, i);
    if (!GST_VALUE_HOLDS_STRUCTURE(v)) continue;
    const GstStructure* s = gst_value_get_structure(v);
    TrackEventRecord e;
    if (gst_structure_has_name(s, "torchtrack-track-ended"))
      e.ended = true;
    else if (!gst_structure_has_name(s, "torchtrack-track-started"))
      continue;
    gst_structure_get_int(s, "id", &e.id);
    e.label = string_field(s, "label");
    gst_structure_get_int(s, "label-id", &e.label_id);
    e.pts_ns = pts_field(s, "pts");
    e.stream_id = string_field(s, "stream-id");
    gst_structure_get_int(s, "age", &e.age);
    if (e.ended) {
      e.reason = string_field(s, "reason");
      e.last_seen_pts_ns = pts_field(s, "last-seen-pts");
    }
    r.track_events.push_back(std::move(e));
  }
}

guint64 count(const GstStructure* s, const char* name) {
  guint64 v = 0;
  gst_structure_get_uint64(s, name, &v);
  return v;
}

LineCounts read_line(const GstStructure* l) {
  LineCounts c;
  c.name = string_field(l, "name");
  c.total = {count(l, "forward"), count(l, "backward")};
  foreach_structure(l, "by-class", [&](const GstStructure* k) {
    c.by_class[string_field(k, "label")] = {count(k, "forward"), count(k, "backward")};
  });
  return c;
}

std::optional<AnalyticsEvent> read_analytics_event(const GstStructure* s) {
  AnalyticsEvent e;
  if (gst_structure_has_name(s, "torchanalytics-crossing"))
    e.type = AnalyticsEventType::kCrossing;
  else if (gst_structure_has_name(s, "torchanalytics-zone-entered"))
    e.type = AnalyticsEventType::kEntered;
  else if (gst_structure_has_name(s, "torchanalytics-zone-exited"))
    e.type = AnalyticsEventType::kExited;
  else
    return std::nullopt;
  const bool crossing = e.type == AnalyticsEventType::kCrossing;
  e.name = string_field(s, crossing ? "line" : "zone");
  e.forward = string_field(s, "direction") != "backward";
  gst_structure_get_int(s, "id", &e.track_id);
  e.label = string_field(s, "label");
  gst_structure_get_int(s, "label-id", &e.label_id);
  e.pts_ns = pts_field(s, "pts").value_or(-1);
  e.dwell_ns = static_cast<std::int64_t>(count(s, "dwell"));
  e.lost = string_field(s, "reason") == "lost";
  return e;
}

// torchanalytics' meta: counts so far and this frame's events.
void read_analytics(GstBuffer* buf, FrameRecord& r) {
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buf, GST_TORCH_ANALYTICS_META_NAME);
  if (!cm) return;
  const GstStructure* s = gst_custom_meta_get_structure(cm);
  AnalyticsRecord a;
  foreach_structure(s, "lines", [&](const GstStructure* l) { a.lines.push_back(read_line(l)); });
  foreach_structure(s, "zones", [&](const GstStructure* z) {
    a.zones.push_back(
        {string_field(z, "name"), count(z, "inside"), count(z, "entered"), count(z, "exited")});
  });
  foreach_structure(s, "events", [&](const GstStructure* e) {
    if (auto ev = read_analytics_event(e)) a.events.push_back(std::move(*ev));
  });
  r.analytics = std::move(a);
}

}  // namespace

void StreamContext::set_caps(GstCaps* caps) {
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  gst_structure_get_int(s, "width", &width);
  gst_structure_get_int(s, "height", &height);
}

void StreamContext::on_event(GstEvent* event) {
  if (GST_EVENT_TYPE(event) != GST_EVENT_STREAM_START) return;
  const gchar* id = nullptr;
  gst_event_parse_stream_start(event, &id);
  stream_id = id ? id : "";
}

FrameRecord read_frame_record(GstBuffer* buf, StreamContext& ctx, bool include_tensors,
                              bool anomaly_regions) {
  FrameRecord r;
  r.frame_number = ctx.next_frame++;
  r.pts_ns = clock_time(GST_BUFFER_PTS(buf));
  r.dts_ns = clock_time(GST_BUFFER_DTS(buf));
  r.duration_ns = clock_time(GST_BUFFER_DURATION(buf));
  r.stream_id = ctx.stream_id;
  r.width = ctx.width;
  r.height = ctx.height;
  if (GstTorchTensorMeta* m = gst_buffer_get_torch_tensor_meta(buf)) {
    r.has_inference = true;
    r.model = m->model ? m->model : "";
    r.input_width = static_cast<int>(m->input_width);
    r.input_height = static_cast<int>(m->input_height);
    r.inference_ms = m->inference_ns / 1e6;
    r.preprocess_ms = m->preprocess_ns / 1e6;
    r.queue_ms = m->queue_ns / 1e6;
    r.batch_size = static_cast<int>(m->batch_size);
    r.batch_index = static_cast<int>(m->batch_index);
    r.inferred = m->inferred;
    r.result_pts_ns = clock_time(m->result_pts);
    if (!m->inferred && m->skip_reason > GST_TORCH_SKIP_NONE &&
        m->skip_reason <= static_cast<int>(kSkipReasons))
      r.skip = to_string(static_cast<SkipReason>(m->skip_reason - 1));
    r.valid = m->valid;
    if (include_tensors) r.tensors = tensor_views(m);
    read_classification(buf, r);
    read_frame_anomaly(buf, m, anomaly_regions, r);
  }
  read_detections(buf, anomaly_regions, r);
  read_track_events(buf, r);
  read_analytics(buf, r);
  read_frame_codes(buf, r);
  return r;
}

void set_mm_per_pixel(FrameRecord& r, double mm_per_pixel) {
  if (mm_per_pixel > 0)
    r.mm_per_pixel = mm_per_pixel;
  else
    r.mm_per_pixel.reset();
}

}  // namespace torchinfer::gst
