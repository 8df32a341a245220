#include "frame-record-reader.h"

#include <gst/video/video.h>

#include <optional>

#include "gst/torchinfer/torchinfer-meta.h"
#include "tensor-views.h"

namespace torchinfer::gst {
namespace {

std::optional<std::int64_t> clock_time(GstClockTime t) {
  if (!GST_CLOCK_TIME_IS_VALID(t)) return std::nullopt;
  return static_cast<std::int64_t>(t);
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

// Every ROI meta with a "detection" param, in the order they were attached.
void read_detections(GstBuffer* buf, FrameRecord& r) {
  gpointer iter = nullptr;
  while (GstMeta* m = gst_buffer_iterate_meta_filtered(
             buf, &iter, GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) {
    GstTorchDetection d;
    if (!gst_torch_detection_from_roi(reinterpret_cast<GstVideoRegionOfInterestMeta*>(m), &d))
      continue;
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
    r.detections.push_back(std::move(rec));
  }
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

FrameRecord read_frame_record(GstBuffer* buf, StreamContext& ctx, bool include_tensors) {
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
    r.valid = m->valid;
    if (include_tensors) r.tensors = tensor_views(m);
    read_classification(buf, r);
  }
  read_detections(buf, r);
  return r;
}

}  // namespace torchinfer::gst
