#include "torchinfer-results.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "common/error.h"
#include "decode/classification.h"
#include "engine/engine.h"
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

void attach_classification(GstBuffer* buf, const std::vector<ClassResult>& top) {
  GstCustomMeta* cm = gst_buffer_add_custom_meta(buf, GST_TORCH_CLASSIFICATION_META_NAME);
  if (!cm || top.empty()) return;
  GstStructure* s = gst_custom_meta_get_structure(cm);
  gst_structure_set_name(s, "classification");
  gst_structure_set(s, "label", G_TYPE_STRING, top[0].label.c_str(), "label_id", G_TYPE_INT,
                    top[0].label_id, "confidence", G_TYPE_DOUBLE, top[0].confidence, nullptr);
  GValue labels = G_VALUE_INIT, ids = G_VALUE_INIT, confs = G_VALUE_INIT, v = G_VALUE_INIT;
  gst_value_array_init(&labels, top.size());
  gst_value_array_init(&ids, top.size());
  gst_value_array_init(&confs, top.size());
  for (const auto& r : top) {
    g_value_init(&v, G_TYPE_STRING);
    g_value_set_string(&v, r.label.c_str());
    gst_value_array_append_and_take_value(&labels, &v);
    g_value_init(&v, G_TYPE_INT);
    g_value_set_int(&v, r.label_id);
    gst_value_array_append_and_take_value(&ids, &v);
    g_value_init(&v, G_TYPE_DOUBLE);
    g_value_set_double(&v, r.confidence);
    gst_value_array_append_and_take_value(&confs, &v);
  }
  gst_structure_take_value(s, "labels", &labels);
  gst_structure_take_value(s, "label_ids", &ids);
  gst_structure_take_value(s, "confidences", &confs);
}

}  // namespace

bool to_pixel_format(GstVideoFormat f, PixelFormat* out) {
  static const struct {
    GstVideoFormat gst;
    PixelFormat ours;
  } table[] = {
      {GST_VIDEO_FORMAT_YUY2, PixelFormat::kYUY2},   {GST_VIDEO_FORMAT_UYVY, PixelFormat::kUYVY},
      {GST_VIDEO_FORMAT_NV12, PixelFormat::kNV12},   {GST_VIDEO_FORMAT_NV21, PixelFormat::kNV21},
      {GST_VIDEO_FORMAT_I420, PixelFormat::kI420},   {GST_VIDEO_FORMAT_YV12, PixelFormat::kYV12},
      {GST_VIDEO_FORMAT_RGB, PixelFormat::kRGB},     {GST_VIDEO_FORMAT_BGR, PixelFormat::kBGR},
      {GST_VIDEO_FORMAT_RGBx, PixelFormat::kRGBx},   {GST_VIDEO_FORMAT_BGRx, PixelFormat::kBGRx},
      {GST_VIDEO_FORMAT_xRGB, PixelFormat::kxRGB},   {GST_VIDEO_FORMAT_xBGR, PixelFormat::kxBGR},
      {GST_VIDEO_FORMAT_RGBA, PixelFormat::kRGBA},   {GST_VIDEO_FORMAT_BGRA, PixelFormat::kBGRA},
      {GST_VIDEO_FORMAT_ARGB, PixelFormat::kARGB},   {GST_VIDEO_FORMAT_ABGR, PixelFormat::kABGR},
      {GST_VIDEO_FORMAT_GRAY8, PixelFormat::kGRAY8},
  };
  for (const auto& e : table)
    if (e.gst == f) {
      *out = e.ours;
      return true;
    }
  return false;
}

FrameView frame_view(const GstVideoFrame& f) {
  FrameView v;
  to_pixel_format(GST_VIDEO_FRAME_FORMAT(&f), &v.format);
  v.width = GST_VIDEO_FRAME_WIDTH(&f);
  v.height = GST_VIDEO_FRAME_HEIGHT(&f);
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&f) && p < 3; ++p) {
    v.planes[p] = static_cast<const std::uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&f, p));
    v.strides[p] = GST_VIDEO_FRAME_PLANE_STRIDE(&f, p);
  }
  const GstVideoColorimetry& c = f.info.colorimetry;
  v.matrix = c.matrix == GST_VIDEO_COLOR_MATRIX_BT709    ? YuvMatrix::kBT709
             : c.matrix == GST_VIDEO_COLOR_MATRIX_BT2020 ? YuvMatrix::kBT2020
                                                         : YuvMatrix::kBT601;
  v.full_range = c.range == GST_VIDEO_COLOR_RANGE_0_255;
  return v;
}

bool attach_results(GstBuffer* buf, const FrameRecord& rec, bool inferred,
                    const std::string& model_instance_id) {
  const FrameResult& r = rec.result;
  const ModelConfig& config = r.model->config;
  const std::vector<TensorView> views = r.output->frame(r.index);
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
  meta->transform = {rec.transform.scale_x, rec.transform.scale_y, rec.transform.offset_x,
                     rec.transform.offset_y};
  meta->preprocess_ns = static_cast<guint64>(rec.preprocess_ms * 1e6);
  meta->inference_ns = static_cast<guint64>(r.inference_ms * 1e6);
  meta->queue_ns = static_cast<guint64>(r.queue_ms * 1e6);
  meta->batch_size = r.batch_fill;
  meta->batch_index = r.index;
  meta->inferred = inferred;
  meta->result_pts = rec.pts;
  for (std::size_t i = 0; i < views.size(); ++i) {
    GstTorchTensor& t = meta->tensors[i];
    t.name = g_strdup(views[i].name.c_str());
    t.dtype = to_gst_dtype(views[i].dtype);
    t.n_dims = views[i].dims.size();
    std::copy(views[i].dims.begin(), views[i].dims.end(), t.dims);
    t.data = views[i].data;
    t.size = views[i].bytes;
  }

  if (config.task != Task::kClassification) return true;
  for (const auto& v : views)
    if (looks_like_class_scores(v)) {
      attach_classification(buf,
                            decode_top_k(v, config.top_k, config.output_activation, config.labels));
      return true;
    }
  return false;
}

}  // namespace torchinfer::gst
