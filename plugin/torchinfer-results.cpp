#include "torchinfer-results.h"

#include "anomaly-meta.h"
#include "classification-meta.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "common/error.h"
#include "decode/classification.h"
#include "engine/engine.h"
#include "gst/torchinfer/torchinfer-helpers.h"
#include "gst/torchinfer/torchinfer-meta.h"

namespace torchinfer::gst {
namespace {

GstTorchDType to_gst_dtype(DType d) {
  switch (d) {
    case DType::kFloat32:
      return GST_TORCH_DTYPE_FLOAT32;
    case DType::kFloat64:
      return GST_TORCH_DTYPE_FLOAT64;
    case DType::kInt32:
      return GST_TORCH_DTYPE_INT32;
    case DType::kInt64:
      return GST_TORCH_DTYPE_INT64;
    case DType::kUInt8:
      return GST_TORCH_DTYPE_UINT8;
    case DType::kInt8:
      return GST_TORCH_DTYPE_INT8;
    case DType::kBool:
      return GST_TORCH_DTYPE_BOOL;
  }
  return GST_TORCH_DTYPE_FLOAT32;
}

}  // namespace

void read_regions(GstBuffer* buf, std::vector<RegionOfInterest>* out) {
  std::size_t n = 0;
  gst_torch::foreach_roi(buf, [&](GstVideoRegionOfInterestMeta* roi) {
    if (n == out->size()) out->emplace_back();
    RegionOfInterest& r = (*out)[n++];
    r.x = roi->x;
    r.y = roi->y;
    r.width = roi->w;
    r.height = roi->h;
    r.roi_id = roi->id;
    const GstStructure* det =
        gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_DETECTION_STRUCTURE_NAME);
    const gchar* label = det ? gst_structure_get_string(det, "label") : nullptr;
    if (!label) label = roi->roi_type ? g_quark_to_string(roi->roi_type) : "";
    r.label.assign(label ? label : "");  // into the string's own capacity
    r.object_id.reset();
    gint id = 0;
    if (gst_torch_roi_get_object_id(roi, &id, nullptr)) r.object_id = id;
    GstTorchRotatedBox rb;
    r.rotated.reset();
    if (gst_torch_roi_get_rotated_box(roi, &rb))
      r.rotated = RotatedBox{rb.cx, rb.cy, rb.width, rb.height, rb.angle};
  });
  // Shrinking keeps the capacity, and the strings of the ones kept.
  out->resize(n);
}

// The meta's skip reasons follow SkipReason's order, NONE first.
static_assert(GST_TORCH_SKIP_STILL == static_cast<int>(SkipReason::kStill) + 1 &&
                  GST_TORCH_SKIP_INTERVAL == static_cast<int>(SkipReason::kInterval) + 1,
              "GstTorchSkipReason = SkipReason + 1");

std::vector<TensorView> add_tensor_meta(GstBuffer* buf, const FrameInference& rec,
                                        const SlotResult& slot, const TensorMetaInfo& info,
                                        const std::string& model_instance_id) {
  const FrameResult& r = slot.result;
  const ModelConfig& config = r.model->config;
  std::vector<TensorView> views = r.output->frame(r.index);
  for (const auto& v : views)
    if (v.dims.size() > GST_TORCH_MAX_DIMS)
      throw Error(ErrorKind::kModelInvalid, "output '" + v.name + "' has more than 8 dimensions");

  auto* holder = new std::shared_ptr<const BatchOutput>(r.output);
  GBytes* owner = g_bytes_new_with_free_func(
      nullptr, 0, [](gpointer p) { delete static_cast<std::shared_ptr<const BatchOutput>*>(p); },
      holder);
  GstTorchTensorMeta* meta = gst_buffer_add_torch_tensor_meta(buf, views.size(), owner);
  g_bytes_unref(owner);
  meta->model = g_strdup(r.model->path.c_str());
  meta->model_instance_id = g_strdup(model_instance_id.c_str());
  meta->input_width = config.input_width;
  meta->input_height = config.input_height;
  meta->frame_width = rec.frame_width;
  meta->frame_height = rec.frame_height;
  meta->transform = {slot.transform.scale_x, slot.transform.scale_y, slot.transform.offset_x,
                     slot.transform.offset_y};
  meta->preprocess_ns = static_cast<guint64>(slot.preprocess_ms * 1e6);
  meta->inference_ns = static_cast<guint64>(r.inference_ms * 1e6);
  meta->queue_ns = static_cast<guint64>(r.queue_ms * 1e6);
  meta->batch_size = r.batch_fill;
  meta->batch_index = r.index;
  meta->inferred = info.inferred;
  meta->valid = info.valid;
  meta->result_pts = info.result_pts;
  meta->roi_id = info.roi_id;
  meta->skip_reason = info.skip;
  meta->tile_index = info.tile_index;
  meta->tile_count = info.tile_count;
  for (std::size_t i = 0; i < views.size(); ++i) {
    GstTorchTensor& t = meta->tensors[i];
    t.name = g_strdup(views[i].name.c_str());
    t.dtype = to_gst_dtype(views[i].dtype);
    t.n_dims = views[i].dims.size();
    std::copy(views[i].dims.begin(), views[i].dims.end(), t.dims);
    t.data = views[i].data;
    t.size = views[i].bytes;
  }
  return views;
}

namespace {

// The top-k of the first score vector; false when there is none.
bool decode_scores(const std::vector<TensorView>& views, const ModelConfig& config,
                   std::vector<ClassResult>* top) {
  for (const auto& v : views)
    if (looks_like_class_scores(v)) {
      *top = decode_top_k(v, config.top_k, config.output_activation, config.labels);
      return true;
    }
  return false;
}

bool decodes_to_labels(Task t) {
  return t == Task::kClassification || t == Task::kAnomaly;
}

bool slot_valid(const SlotResult& s) {
  return !s.result.output || s.result.output->frame_finite(s.result.index);
}

}  // namespace

bool attach_results(GstBuffer* buf, const FrameInference& rec, bool inferred,
                    const std::string& model_instance_id, std::optional<SkipReason> skip) {
  if (rec.slots.empty() || !rec.slots[0].result.output) return true;
  const SlotResult& slot = rec.slots[0];
  TensorMetaInfo info;
  info.inferred = inferred;
  if (!inferred && skip) info.skip = static_cast<GstTorchSkipReason>(static_cast<int>(*skip) + 1);
  info.valid = result_valid(rec);
  info.result_pts = rec.pts;
  const std::vector<TensorView> views = add_tensor_meta(buf, rec, slot, info, model_instance_id);
  const ModelConfig& config = slot.result.model->config;
  if (!decodes_to_labels(config.task) || !info.valid) return true;
  if (config.task == Task::kAnomaly) {
    const auto r = decode_anomaly(views, config.anomaly);
    if (r) attach_anomaly(buf, *r, config.anomaly);
    return r.has_value();
  }
  std::vector<ClassResult> top;
  if (!decode_scores(views, config, &top)) return false;
  attach_classification(buf, top);
  return true;
}

namespace {

// Each region's ROI meta on `buf`, found by the id read_regions() took from
// it: the k-th region with id X gets the k-th meta with id X (ids are unique
// when torchinfer's elements made the metas; GStreamer's own default is 0
// for every ROI, where this keeps the buffer's order). Null for a region
// whose meta is gone.
std::vector<GstVideoRegionOfInterestMeta*> metas_of_regions(GstBuffer* buf,
                                                            const FrameInference& rec) {
  using Ref = std::pair<gint, std::size_t>;  // (id, order): sorting keeps equal ids in order
  std::vector<std::pair<Ref, GstVideoRegionOfInterestMeta*>> metas;
  gst_torch::foreach_roi(buf, [&](GstVideoRegionOfInterestMeta* roi) {
    metas.push_back({{roi->id, metas.size()}, roi});
  });
  std::vector<Ref> regions;
  regions.reserve(rec.regions.size());
  for (std::size_t i = 0; i < rec.regions.size(); ++i)
    regions.push_back({rec.regions[i].roi_id, i});
  std::sort(metas.begin(), metas.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::sort(regions.begin(), regions.end());
  std::vector<GstVideoRegionOfInterestMeta*> out(rec.regions.size(), nullptr);
  std::size_t m = 0;
  for (const Ref& r : regions) {
    while (m < metas.size() && metas[m].first.first < r.first) ++m;
    if (m < metas.size() && metas[m].first.first == r.first) out[r.second] = metas[m++].second;
  }
  return out;
}

}  // namespace

bool attach_region_results(GstBuffer* buf, const FrameInference& rec, const RegionAttachInfo& who,
                           std::size_t* not_classified) {
  const std::vector<GstVideoRegionOfInterestMeta*> rois = metas_of_regions(buf, rec);
  bool scores_found = true;
  for (std::size_t i = 0; i < rec.regions.size(); ++i) {
    const RegionResult& region = rec.regions[i];
    if (region.slot < 0 || !rois[i]) continue;
    const SlotResult& slot = rec.slots[static_cast<std::size_t>(region.slot)];
    if (!slot.delivered || !slot.result.output) continue;
    TensorMetaInfo info;
    info.inferred = !region.reused;
    info.valid = slot_valid(slot);
    info.result_pts = region.result_pts;
    info.roi_id = rois[i]->id;
    const std::vector<TensorView> views =
        add_tensor_meta(buf, rec, slot, info, who.model_instance_id);
    const ModelConfig& config = slot.result.model->config;
    if (not_classified && info.inferred && config.task == Task::kDetection) ++*not_classified;
    if (!decodes_to_labels(config.task) || !info.valid) continue;
    const RoiClassificationSource src{slot.result.model->path, who.model_instance_id, who.element,
                                      info.inferred, info.result_pts};
    if (config.task == Task::kAnomaly) {
      const auto r = decode_anomaly(views, config.anomaly);
      if (r) attach_roi_anomaly(rois[i], *r, config.anomaly, src);
      scores_found = scores_found && r.has_value();
      continue;
    }
    std::vector<ClassResult> top;
    if (!decode_scores(views, config, &top)) {
      scores_found = false;
      continue;
    }
    attach_roi_classification(rois[i], top, src);
  }
  return scores_found;
}

bool result_valid(const FrameInference& rec) {
  for (const RegionResult& r : rec.regions)  // region mode: the frame's own results only
    if (r.slot >= 0 && !r.reused && !slot_valid(rec.slots[static_cast<std::size_t>(r.slot)]))
      return false;
  if (rec.region_mode) return true;
  for (const SlotResult& s : rec.slots)
    if (!slot_valid(s)) return false;
  return true;
}

std::string invalid_output_warning(const BurstReport& report) {
  std::string s =
      "Model output holds NaN or infinite values: this frame's result is marked invalid "
      "(no classification, no detections)";
  if (report.previous_burst() > 0)
    s += "; the previous burst had " + std::to_string(report.previous_burst()) + " such frames";
  s += "; " + std::to_string(report.total_bad()) +
       " invalid so far. Check the model's input normalisation (mean/std/scale) and "
       "precision.";
  return s;
}

}  // namespace torchinfer::gst
