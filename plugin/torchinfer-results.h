// Turning a frame's batch result into the metas attached to the outgoing
// buffer.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <string>

#include "batching/batcher.h"
#include "preprocess/frame.h"
#include "preprocess/preprocess.h"
#include "video-frame.h"

namespace torchinfer::gst {

// What the tensor meta records about one frame besides its tensors.
struct FrameRecord {
  FrameResult result;
  FrameTransform transform;
  int frame_width = 0, frame_height = 0;
  double preprocess_ms = 0;
  GstClockTime pts = GST_CLOCK_TIME_NONE;  // of the frame the result was computed on
};

// Adds the GstTorchTensorMeta (and, for classifiers, the classification
// meta). inferred=false marks a result reused from an earlier frame. Throws
// Error(kModelInvalid) for outputs the meta cannot describe. Returns false
// when the model is a classifier but its output is not a score vector.
bool attach_results(GstBuffer* buf, const FrameRecord& rec, bool inferred,
                    const std::string& model_instance_id);

}  // namespace torchinfer::gst
