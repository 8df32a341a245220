#include "gst/torchinfer/torchinfer-meta.h"

#include <cstring>

namespace {

gboolean tensor_meta_init(GstMeta* meta, gpointer, GstBuffer*) {
  auto* m = reinterpret_cast<GstTorchTensorMeta*>(meta);
  std::memset(reinterpret_cast<char*>(m) + sizeof(GstMeta), 0, sizeof(*m) - sizeof(GstMeta));
  m->transform.scale_x = m->transform.scale_y = 1.0;
  m->inferred = TRUE;
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
  d->result_pts = s->result_pts;
  for (guint i = 0; i < s->n_tensors; ++i) {
    d->tensors[i] = s->tensors[i];
    d->tensors[i].name = g_strdup(s->tensors[i].name);
  }
  return TRUE;
}

gboolean classification_transform(GstBuffer* dest, GstCustomMeta* meta, GstBuffer*, GQuark type,
                                  gpointer, gpointer) {
  if (!GST_META_TRANSFORM_IS_COPY(type)) return FALSE;
  GstCustomMeta* d = gst_buffer_add_custom_meta(dest, GST_TORCH_CLASSIFICATION_META_NAME);
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
                             nullptr, nullptr);
    g_once_init_leave(&done, 1);
  }
}

}  // extern "C"
