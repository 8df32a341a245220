#include "parts/qa_frames.h"

#include <gst/video/video.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

namespace torchinfer::qa {

namespace {

GstTorchTensorMeta* detector_meta(GstBuffer* buf, const std::string& id) {
  gpointer iter = nullptr;
  while (GstMeta* m =
             gst_buffer_iterate_meta_filtered(buf, &iter, GST_TORCH_TENSOR_META_API_TYPE)) {
    auto* tm = reinterpret_cast<GstTorchTensorMeta*>(m);
    if (g_strcmp0(tm->model_instance_id, id.c_str()) == 0) return tm;
  }
  return nullptr;
}

// The classifier's result on a part: every label it reports (the top-k
// arrays, the whole distribution when k covers the labels; else top-1).
// False when the region has none, or only one reused from an earlier frame
// (reclassify-interval): that view was judged already.
bool classifier_evidence(GstVideoRegionOfInterestMeta* roi, std::map<std::string, double>& out) {
  const GstStructure* s = gst_torch_roi_get_classification(roi, kClassifierElement);
  gboolean inferred = TRUE;
  if (!s || (gst_structure_get_boolean(s, "inferred", &inferred) && !inferred)) return false;
  const GValue* labels = gst_structure_get_value(s, "labels");
  const GValue* confs = gst_structure_get_value(s, "confidences");
  if (labels && confs && GST_VALUE_HOLDS_ARRAY(labels) && GST_VALUE_HOLDS_ARRAY(confs) &&
      gst_value_array_get_size(labels) == gst_value_array_get_size(confs)) {
    for (guint i = 0; i < gst_value_array_get_size(labels); ++i) {
      const GValue* l = gst_value_array_get_value(labels, i);
      const GValue* c = gst_value_array_get_value(confs, i);
      if (G_VALUE_HOLDS_STRING(l) && G_VALUE_HOLDS_DOUBLE(c))
        out[g_value_get_string(l)] = g_value_get_double(c);
    }
  }
  double conf = 0;
  const gchar* label = gst_structure_get_string(s, "label");
  if (out.empty() && label && gst_structure_get_double(s, "confidence", &conf)) out[label] = conf;
  return !out.empty();
}

// The ids of the tracks torchtrack ended on this frame.
std::vector<int> ended_tracks(GstBuffer* buf) {
  std::vector<int> ended;
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buf, "GstTorchTrackEventsMeta");
  const GValue* events =
      cm ? gst_structure_get_value(gst_custom_meta_get_structure(cm), "events") : nullptr;
  for (guint i = 0; events && GST_VALUE_HOLDS_ARRAY(events) && i < gst_value_array_get_size(events);
       ++i) {
    const GValue* e = gst_value_array_get_value(events, i);
    if (!GST_VALUE_HOLDS_STRUCTURE(e)) continue;
    const GstStructure* s = gst_value_get_structure(e);
    int id = 0;
    if (gst_structure_has_name(s, "torchtrack-track-ended") && gst_structure_get_int(s, "id", &id))
      ended.push_back(id);
  }
  return ended;
}

// The app's model of a tensor meta, by its model-instance-id.
const char* model_of(const GstTorchTensorMeta* tm, const std::string& detector) {
  if (g_strcmp0(tm->model_instance_id, detector.c_str()) == 0) return "detector";
  if (g_strcmp0(tm->model_instance_id, "qa-classifier") == 0) return "classifier";
  if (g_strcmp0(tm->model_instance_id, "qa-anomaly") == 0) return "anomaly";
  if (g_strcmp0(tm->model_instance_id, kSegmenterId) == 0) return "segmenter";
  return nullptr;
}

void count_invalid(GstBuffer* buf, const std::string& detector,
                   std::map<std::string, std::int64_t>& invalid) {
  gpointer iter = nullptr;
  while (GstMeta* m =
             gst_buffer_iterate_meta_filtered(buf, &iter, GST_TORCH_TENSOR_META_API_TYPE)) {
    auto* tm = reinterpret_cast<GstTorchTensorMeta*>(m);
    const char* model = model_of(tm, detector);
    if (model && tm->inferred && !tm->valid) invalid[model]++;
  }
}

// A detection ROI as a box in frame pixels with its track id; nullopt for
// an ROI without a labelled detection.
std::optional<ScoredBox> scored_box(GstVideoRegionOfInterestMeta* roi, const GstTorchDetection& d,
                                    double w, double h) {
  if (!d.label) return std::nullopt;
  ScoredBox b;
  b.label = d.label;
  b.confidence = d.confidence;
  b.box = {d.x_min * w, d.y_min * h, d.x_max * w, d.y_max * h};
  gint id = 0;
  gboolean predicted = FALSE;
  if (gst_torch_roi_get_object_id(roi, &id, &predicted)) {
    b.id = id;
    b.predicted = predicted;
  }
  return b;
}

// torchcodes' "code" param on a part's ROI (read now or carried for its
// track); nullopt when the part has none yet.
std::optional<QaCode> part_code(GstVideoRegionOfInterestMeta* roi) {
  const GstStructure* s = gst_torch_roi_get_code(roi);
  const gchar* format = s ? gst_structure_get_string(s, "format") : nullptr;
  const gchar* text = s ? gst_structure_get_string(s, "text") : nullptr;
  if (!format || !text) return std::nullopt;
  return QaCode{format, text, -1};
}

// The area of the ROI's mask (torchnms yolov8-seg) in mm²; none without a
// mask or a calibration.
std::optional<double> mask_area_mm2(GstVideoRegionOfInterestMeta* roi, double mm_per_pixel) {
  const GstStructure* mask = gst_torch_roi_get_mask(roi);
  guint64 area = 0;
  if (!mask || mm_per_pixel <= 0 || !gst_structure_get_uint64(mask, "area", &area))
    return std::nullopt;
  return static_cast<double>(area) * mm_per_pixel * mm_per_pixel;
}

// A detection of the --segmenter's torchnms (its detection param names
// the segmenter's model-instance-id).
bool from_segmenter(GstVideoRegionOfInterestMeta* roi) {
  const GstStructure* s =
      gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_DETECTION_STRUCTURE_NAME);
  return s && g_strcmp0(gst_structure_get_string(s, "model-instance-id"), kSegmenterId) == 0;
}

}  // namespace

FrameResults read_frame(GstBuffer* buf, std::int64_t index, const ReadRules& rules) {
  FrameResults r;
  r.frame.index = index;
  const GstClockTime pts = GST_BUFFER_PTS(buf);
  r.frame.pts = GST_CLOCK_TIME_IS_VALID(pts) ? static_cast<std::int64_t>(pts) : -1;
  count_invalid(buf, rules.detector_id, r.invalid);
  GstTorchTensorMeta* tm = detector_meta(buf, rules.detector_id);
  if (!tm || tm->frame_width == 0 || tm->frame_height == 0) return r;
  r.has_detector = true;
  r.detector_inferred = tm->inferred;
  if (tm->inferred) r.detector_ms = tm->inference_ns / 1e6;
  r.frame.width = static_cast<int>(tm->frame_width);
  r.frame.height = static_cast<int>(tm->frame_height);
  std::vector<QaDefectBox> defects;
  // Defect boxes judge on frames the model that gave them inferred: the
  // detector's, or with --segmenter the segmenter's.
  const GstTorchTensorMeta* seg = rules.segmenter ? detector_meta(buf, kSegmenterId) : nullptr;
  const bool defects_inferred = rules.segmenter ? seg && seg->inferred && seg->valid : tm->inferred;
  gst_torch::foreach_detection(
      buf, [&](GstVideoRegionOfInterestMeta* roi, const GstTorchDetection& d) {
        auto scored = scored_box(roi, d, tm->frame_width, tm->frame_height);
        if (!scored) return;
        ScoredBox b = std::move(*scored);
        const bool part = std::find(rules.part_classes.begin(), rules.part_classes.end(),
                                    b.label) != rules.part_classes.end();
        if (part && b.id >= 0 && b.confidence >= rules.part_threshold) {
          QaPart p;
          p.id = static_cast<int>(b.id);
          p.label = b.label;
          p.confidence = b.confidence;
          p.box = b.box;
          // The classifier looked at this frame's pixels, also in a predicted
          // box; without it, the evidence is the detector's, which only an
          // inferred frame has.
          if (rules.classifier)
            p.judged = classifier_evidence(roi, p.evidence);
          else if (rules.defect_boxes)
            p.judged = !b.predicted && tm->inferred;
          if (rules.anomaly && rules.anomaly_view) p.anomaly = rules.anomaly_view(buf, roi);
          if (rules.codes) p.code = part_code(roi);
          r.frame.parts.push_back(std::move(p));
        } else if (!part && rules.defect_boxes && !b.predicted && defects_inferred &&
                   rules.segmenter == from_segmenter(roi)) {
          defects.push_back({b.label, b.confidence, b.box, mask_area_mm2(roi, rules.mm_per_pixel)});
        }
        // The boxes scored against the truth are the detector's.
        if (!rules.segmenter || !from_segmenter(roi)) r.boxes.push_back(std::move(b));
      });
  if (rules.defect_boxes) attach_defect_boxes(r.frame.parts, defects);
  std::stable_sort(r.boxes.begin(), r.boxes.end(), [](const ScoredBox& a, const ScoredBox& b) {
    return a.confidence > b.confidence;
  });

  r.frame.ended = ended_tracks(buf);
  return r;
}

}  // namespace torchinfer::qa
