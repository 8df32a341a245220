#include "tensor-views.h"

#include <algorithm>

namespace torchinfer::gst {

DType from_gst_dtype(GstTorchDType d) {
  switch (d) {
    case GST_TORCH_DTYPE_FLOAT32:
      return DType::kFloat32;
    case GST_TORCH_DTYPE_FLOAT64:
      return DType::kFloat64;
    case GST_TORCH_DTYPE_INT32:
      return DType::kInt32;
    case GST_TORCH_DTYPE_INT64:
      return DType::kInt64;
    case GST_TORCH_DTYPE_UINT8:
      return DType::kUInt8;
    case GST_TORCH_DTYPE_INT8:
      return DType::kInt8;
    case GST_TORCH_DTYPE_BOOL:
      return DType::kBool;
  }
  return DType::kFloat32;
}

std::vector<TensorView> tensor_views(const GstTorchTensorMeta* meta) {
  std::vector<TensorView> out;
  for (guint i = 0; i < meta->n_tensors; ++i) {
    const GstTorchTensor& t = meta->tensors[i];
    TensorView v;
    v.name = t.name ? t.name : "";
    v.dtype = from_gst_dtype(t.dtype);
    v.dims.assign(t.dims, t.dims + std::min<guint>(t.n_dims, GST_TORCH_MAX_DIMS));
    v.data = t.data;
    v.bytes = t.size;
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace torchinfer::gst
