// Turning a frame's batch result into the metas attached to the outgoing
// buffer.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <string>

#include "preprocess/frame.h"
#include "preprocess/preprocess.h"
#include "stream/stream_session.h"
#include "video-frame.h"

namespace torchinfer::gst {

// Adds the GstTorchTensorMeta of the frame's full-frame result (and, for classifiers, the
// classification meta). inferred=false marks a result reused from an earlier frame. Throws
// Error(kModelInvalid) for outputs the meta cannot describe. Returns false
// when the model is a classifier but its output is not a score vector.
bool attach_results(GstBuffer* buf, const FrameInference& rec, bool inferred,
                    const std::string& model_instance_id);

}  // namespace torchinfer::gst
