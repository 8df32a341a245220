#include "gst/torchinfer/torchinfer-meta.h"

#include <cmath>
#include <cstring>

#include "gst/torchinfer/torchinfer-helpers.h"

namespace {

gboolean tensor_meta_init(GstMeta* meta, gpointer, GstBuffer*) {
  auto* m = reinterpret_cast<GstTorchTensorMeta*>(meta);
  std::memset(reinterpret_cast<char*>(m) + sizeof(GstMeta), 0, sizeof(*m) - sizeof(GstMeta));
  m->transform.scale_x = m->transform.scale_y = 1.0;
  m->inferred = TRUE;
  m->valid = TRUE;
  m->roi_id = -1;
  m->tile_index = -1;
  m->result_pts = GST_CLOCK_TIME_NONE;
  return TRUE;
}

void tensor_meta_free(GstMeta* meta, GstBuffer*) {
  auto* m = reinterpret_cast<GstTorchTensorMeta*>(meta);
  for (guint i = 0; i < m->n_tensors; ++i) g_free(m->tensors[i].name);
  g_free(m->tensors);
  g_free(m->model);
  g_free(m->model_instance_id);
  if (m->owner) g_bytes_unref(m->owner);
}

// Copies share the tensor memory through the owner reference. Scaling or
// cropping transforms are accepted too: the meta records the frame size the
// tensors were computed from, so readers can still map coordinates.
gboolean tensor_meta_transform(GstBuffer* dest, GstMeta* meta, GstBuffer*, GQuark type, gpointer) {
  if (!GST_META_TRANSFORM_IS_COPY(type) && type != g_quark_from_static_string("gst-video-scale"))
    return FALSE;
  auto* s = reinterpret_cast<GstTorchTensorMeta*>(meta);
  GstTorchTensorMeta* d = gst_buffer_add_torch_tensor_meta(dest, s->n_tensors, s->owner);
  if (!d) return FALSE;
  d->model = g_strdup(s->model);
  d->model_instance_id = g_strdup(s->model_instance_id);
  d->input_width = s->input_width;
  d->input_height = s->input_height;
  d->frame_width = s->frame_width;
  d->frame_height = s->frame_height;
  d->transform = s->transform;
  d->preprocess_ns = s->preprocess_ns;
  d->inference_ns = s->inference_ns;
  d->batch_size = s->batch_size;
  d->batch_index = s->batch_index;
  d->queue_ns = s->queue_ns;
  d->inferred = s->inferred;
  d->valid = s->valid;
  d->roi_id = s->roi_id;
  d->tile_index = s->tile_index;
  d->tile_count = s->tile_count;
  d->result_pts = s->result_pts;
  d->skip_reason = s->skip_reason;
  for (guint i = 0; i < s->n_tensors; ++i) {
    d->tensors[i] = s->tensors[i];
    d->tensors[i].name = g_strdup(s->tensors[i].name);
  }
  return TRUE;
}

// Shared by the custom metas (classification, anomaly, codes): user_data is the
// meta's registered name.
gboolean classification_transform(GstBuffer* dest, GstCustomMeta* meta, GstBuffer*, GQuark type,
                                  gpointer, gpointer user_data) {
  if (!GST_META_TRANSFORM_IS_COPY(type)) return FALSE;
  GstCustomMeta* d = gst_buffer_add_custom_meta(dest, static_cast<const gchar*>(user_data));
  if (!d) return FALSE;
  GstStructure* src = gst_custom_meta_get_structure(meta);
  GstStructure* dst = gst_custom_meta_get_structure(d);
  gst_structure_set_name(dst, gst_structure_get_name(src));
  gst_structure_foreach(
      src,
      [](GQuark field, const GValue* value, gpointer user) -> gboolean {
        gst_structure_id_set_value(static_cast<GstStructure*>(user), field, value);
        return TRUE;
      },
      dst);
  return TRUE;
}

}  // namespace

extern "C" {

GType gst_torch_tensor_meta_api_get_type(void) {
  static GType type = 0;
  static const gchar* tags[] = {nullptr};
  if (g_once_init_enter(&type)) {
    GType t = gst_meta_api_type_register("GstTorchTensorMetaAPI", tags);
    g_once_init_leave(&type, t);
  }
  return type;
}

const GstMetaInfo* gst_torch_tensor_meta_get_info(void) {
  static const GstMetaInfo* info = nullptr;
  if (g_once_init_enter(&info)) {
    const GstMetaInfo* i = gst_meta_register(GST_TORCH_TENSOR_META_API_TYPE, "GstTorchTensorMeta",
                                             sizeof(GstTorchTensorMeta), tensor_meta_init,
                                             tensor_meta_free, tensor_meta_transform);
    g_once_init_leave(&info, i);
  }
  return info;
}

GstTorchTensorMeta* gst_buffer_add_torch_tensor_meta(GstBuffer* buffer, guint n_tensors,
                                                     GBytes* owner) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  auto* m = reinterpret_cast<GstTorchTensorMeta*>(
      gst_buffer_add_meta(buffer, GST_TORCH_TENSOR_META_INFO, nullptr));
  if (!m) return nullptr;
  m->n_tensors = n_tensors;
  m->tensors = g_new0(GstTorchTensor, n_tensors);
  m->owner = owner ? g_bytes_ref(owner) : nullptr;
  return m;
}

GstTorchTensorMeta* gst_buffer_get_torch_tensor_meta(GstBuffer* buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  gpointer iter = nullptr;
  while (GstMeta* m =
             gst_buffer_iterate_meta_filtered(buffer, &iter, GST_TORCH_TENSOR_META_API_TYPE))
    if (reinterpret_cast<GstTorchTensorMeta*>(m)->roi_id < 0 &&
        reinterpret_cast<GstTorchTensorMeta*>(m)->tile_count == 0)
      return reinterpret_cast<GstTorchTensorMeta*>(m);
  return nullptr;
}

GstTorchTensorMeta* gst_buffer_get_torch_tensor_meta_for_roi(GstBuffer* buffer, gint roi_id,
                                                             const gchar* model) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  g_return_val_if_fail(roi_id >= 0, nullptr);
  gpointer iter = nullptr;
  while (GstMeta* m =
             gst_buffer_iterate_meta_filtered(buffer, &iter, GST_TORCH_TENSOR_META_API_TYPE)) {
    auto* t = reinterpret_cast<GstTorchTensorMeta*>(m);
    if (t->roi_id == roi_id && (!model || g_strcmp0(t->model, model) == 0)) return t;
  }
  return nullptr;
}

const GstStructure* gst_torch_roi_iterate_classifications(GstVideoRegionOfInterestMeta* roi,
                                                          gpointer* state) {
  g_return_val_if_fail(roi != nullptr && state != nullptr, nullptr);
  GList* l = *state ? static_cast<GList*>(*state)->next : roi->params;
  for (; l; l = l->next) {
    auto* s = static_cast<const GstStructure*>(l->data);
    if (gst_structure_has_name(s, GST_TORCH_ROI_CLASSIFICATION_STRUCTURE_NAME)) {
      *state = l;
      return s;
    }
  }
  *state = nullptr;
  return nullptr;
}

const GstStructure* gst_torch_roi_get_classification(GstVideoRegionOfInterestMeta* roi,
                                                     const gchar* element) {
  g_return_val_if_fail(roi != nullptr, nullptr);
  gpointer state = nullptr;
  while (const GstStructure* s = gst_torch_roi_iterate_classifications(roi, &state))
    if (!element || g_strcmp0(gst_structure_get_string(s, "element"), element) == 0) return s;
  return nullptr;
}

const GstTorchTensor* gst_torch_tensor_meta_get_tensor(GstTorchTensorMeta* meta,
                                                       const gchar* name) {
  g_return_val_if_fail(meta != nullptr && name != nullptr, nullptr);
  for (guint i = 0; i < meta->n_tensors; ++i)
    if (g_strcmp0(meta->tensors[i].name, name) == 0) return &meta->tensors[i];
  return nullptr;
}

const gchar* gst_torch_dtype_to_string(GstTorchDType dtype) {
  switch (dtype) {
    case GST_TORCH_DTYPE_FLOAT32:
      return "float32";
    case GST_TORCH_DTYPE_FLOAT64:
      return "float64";
    case GST_TORCH_DTYPE_INT32:
      return "int32";
    case GST_TORCH_DTYPE_INT64:
      return "int64";
    case GST_TORCH_DTYPE_UINT8:
      return "uint8";
    case GST_TORCH_DTYPE_INT8:
      return "int8";
    case GST_TORCH_DTYPE_BOOL:
      return "bool";
  }
  return "unknown";
}

void gst_torch_classification_meta_register(void) {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    static const gchar* tags[] = {nullptr};
    gst_meta_register_custom(GST_TORCH_CLASSIFICATION_META_NAME, tags, classification_transform,
                             const_cast<gchar*>(GST_TORCH_CLASSIFICATION_META_NAME), nullptr);
    g_once_init_leave(&done, 1);
  }
}

void gst_torch_anomaly_meta_register(void) {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    static const gchar* tags[] = {nullptr};
    gst_meta_register_custom(GST_TORCH_ANOMALY_META_NAME, tags, classification_transform,
                             const_cast<gchar*>(GST_TORCH_ANOMALY_META_NAME), nullptr);
    g_once_init_leave(&done, 1);
  }
}

const GstStructure* gst_buffer_get_torch_anomaly(GstBuffer* buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buffer, GST_TORCH_ANOMALY_META_NAME);
  return cm ? gst_custom_meta_get_structure(cm) : nullptr;
}

const GstStructure* gst_torch_roi_get_anomaly(GstVideoRegionOfInterestMeta* roi,
                                              const gchar* element) {
  g_return_val_if_fail(roi != nullptr, nullptr);
  for (GList* l = roi->params; l; l = l->next) {
    auto* s = static_cast<const GstStructure*>(l->data);
    if (gst_structure_has_name(s, GST_TORCH_ANOMALY_STRUCTURE_NAME) &&
        (!element || g_strcmp0(gst_structure_get_string(s, "element"), element) == 0))
      return s;
  }
  return nullptr;
}

void gst_torch_codes_meta_register(void) {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    static const gchar* tags[] = {nullptr};
    gst_meta_register_custom(GST_TORCH_CODES_META_NAME, tags, classification_transform,
                             const_cast<gchar*>(GST_TORCH_CODES_META_NAME), nullptr);
    g_once_init_leave(&done, 1);
  }
}

const GstStructure* gst_buffer_get_torch_codes(GstBuffer* buffer) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer), nullptr);
  GstCustomMeta* cm = gst_buffer_get_custom_meta(buffer, GST_TORCH_CODES_META_NAME);
  return cm ? gst_custom_meta_get_structure(cm) : nullptr;
}

const GstStructure* gst_torch_roi_get_code(GstVideoRegionOfInterestMeta* roi) {
  g_return_val_if_fail(roi != nullptr, nullptr);
  return gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_CODE_STRUCTURE_NAME);
}

GstVideoRegionOfInterestMeta* gst_buffer_add_torch_detection(
    GstBuffer* buffer, const gchar* label, gint label_id, gdouble confidence, gdouble x_min,
    gdouble y_min, gdouble x_max, gdouble y_max, guint frame_width, guint frame_height) {
  g_return_val_if_fail(GST_IS_BUFFER(buffer) && gst_buffer_is_writable(buffer), nullptr);
  g_return_val_if_fail(frame_width > 0 && frame_height > 0, nullptr);
  // The pixel box covers the exact one (rounded outwards); the exact
  // coordinates live in the structure.
  const gdouble fw = frame_width, fh = frame_height;
  const guint x = static_cast<guint>(CLAMP(std::floor(x_min), 0.0, fw));
  const guint y = static_cast<guint>(CLAMP(std::floor(y_min), 0.0, fh));
  const guint x1 = static_cast<guint>(CLAMP(std::ceil(x_max), 0.0, fw));
  const guint y1 = static_cast<guint>(CLAMP(std::ceil(y_max), 0.0, fh));
  GstVideoRegionOfInterestMeta* roi = gst_buffer_add_video_region_of_interest_meta(
      buffer, label ? label : "", x, y, x1 > x ? x1 - x : 0, y1 > y ? y1 - y : 0);
  if (!roi) return nullptr;
  // Ids count up per buffer (0, 1, ...) so that bindings without a meta
  // iterator (Python) can fetch each one with ..._get_..._meta_id().
  roi->id = static_cast<gint>(gst_torch_buffer_foreach_roi(buffer, nullptr, nullptr)) - 1;
  GstStructure* s = gst_structure_new(
      GST_TORCH_DETECTION_STRUCTURE_NAME, "label", G_TYPE_STRING, label ? label : "", "label_id",
      G_TYPE_INT, label_id, "confidence", G_TYPE_DOUBLE, confidence, "x_min", G_TYPE_DOUBLE,
      x_min / fw, "y_min", G_TYPE_DOUBLE, y_min / fh, "x_max", G_TYPE_DOUBLE, x_max / fw, "y_max",
      G_TYPE_DOUBLE, y_max / fh, nullptr);
  gst_video_region_of_interest_meta_add_param(roi, s);
  return roi;
}

gboolean gst_torch_detection_from_roi(GstVideoRegionOfInterestMeta* roi, GstTorchDetection* out) {
  g_return_val_if_fail(roi != nullptr && out != nullptr, FALSE);
  GstStructure* s =
      gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_DETECTION_STRUCTURE_NAME);
  if (!s) return FALSE;
  out->label = gst_structure_get_string(s, "label");
  return out->label && gst_structure_get_int(s, "label_id", &out->label_id) &&
         gst_structure_get_double(s, "confidence", &out->confidence) &&
         gst_structure_get_double(s, "x_min", &out->x_min) &&
         gst_structure_get_double(s, "y_min", &out->y_min) &&
         gst_structure_get_double(s, "x_max", &out->x_max) &&
         gst_structure_get_double(s, "y_max", &out->y_max);
}

const GstStructure* gst_torch_roi_get_mask(GstVideoRegionOfInterestMeta* roi) {
  g_return_val_if_fail(roi != nullptr, nullptr);
  return gst_video_region_of_interest_meta_get_param(roi, GST_TORCH_MASK_STRUCTURE_NAME);
}

}  // extern "C"

// The whole structure goes with a copy: counts are cumulative, so any copy
// of the frame says the same.
static gboolean analytics_transform(GstBuffer* dest, GstCustomMeta* meta, GstBuffer*, GQuark type,
                                    gpointer, gpointer) {
  if (!GST_META_TRANSFORM_IS_COPY(type)) return FALSE;
  GstCustomMeta* d = gst_buffer_add_custom_meta(dest, GST_TORCH_ANALYTICS_META_NAME);
  if (!d) return FALSE;
  const GstStructure* src = gst_custom_meta_get_structure(meta);
  GstStructure* dst = gst_custom_meta_get_structure(d);
  gst_structure_set_name(dst, gst_structure_get_name(src));
  for (gint i = 0; i < gst_structure_n_fields(src); ++i) {
    const gchar* name = gst_structure_nth_field_name(src, i);
    gst_structure_set_value(dst, name, gst_structure_get_value(src, name));
  }
  return TRUE;
}

void gst_torch_analytics_meta_register(void) {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    static const gchar* tags[] = {nullptr};
    gst_meta_register_custom(GST_TORCH_ANALYTICS_META_NAME, tags, analytics_transform, nullptr,
                             nullptr);
    g_once_init_leave(&done, 1);
  }
}
