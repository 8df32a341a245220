// GEnum types of torchinfer's enum properties (type names and nicks are
// public: launch lines and applications use them).
#pragma once

#include <glib-object.h>

namespace torchinfer::gst {

GType channel_order_type();
GType task_type();
GType activation_type();
GType resize_method_type();
GType input_dtype_type();
GType input_layout_type();
GType drop_policy_type();
GType precision_type();
GType inference_region_type();
GType preprocess_on_type();
GType inference_gate_type();

}  // namespace torchinfer::gst
