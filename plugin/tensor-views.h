// The tensors of a GstTorchTensorMeta as core TensorViews (no copy), for
// elements that hand them to src/ (decoders, JSON export).
#pragma once

#include <vector>

#include "common/tensor.h"
#include "gst/torchinfer/torchinfer-meta.h"

namespace torchinfer::gst {

DType from_gst_dtype(GstTorchDType d);
std::vector<TensorView> tensor_views(const GstTorchTensorMeta* meta);

}  // namespace torchinfer::gst
