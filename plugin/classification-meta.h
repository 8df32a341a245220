// The classification result as the standard-readable custom meta (structure
// "classification": top-1 label, label_id, confidence; top-k arrays).
#pragma once

#include <gst/gst.h>

#include <vector>

#include "decode/classification.h"

namespace torchinfer::gst {

// Replaces any classification meta already on the buffer.
void attach_classification(GstBuffer* buf, const std::vector<ClassResult>& top);

}  // namespace torchinfer::gst
