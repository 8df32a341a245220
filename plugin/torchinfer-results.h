// roi-list glue and results: reading a frame's ROI metas for the session,
// and turning a frame's batch result into the metas attached to the
// outgoing buffer.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <optional>
#include <string>
#include <vector>

#include "common/burst_report.h"
#include "common/tensor.h"
#include "gst/torchinfer/torchinfer-meta.h"
#include "preprocess/frame.h"
#include "preprocess/preprocess.h"
#include "stream/stream_session.h"
#include "video-frame.h"

namespace torchinfer::gst {

// The ROI metas of a frame into `out`, in the buffer's order, each with its
// meta's id (by which attach_region_results finds the meta again). Reuses out's
// elements and their strings: no allocation per frame once warmed up.
void read_regions(GstBuffer* buf, std::vector<RegionOfInterest>* out);

// Adds the GstTorchTensorMeta of the frame's full-frame result (and, for classifiers, the
// classification meta). inferred=false marks a result reused from an earlier frame. Throws
// Error(kModelInvalid) for outputs the meta cannot describe. Returns false
// when the model is a classifier but its output is not a score vector, or
// an anomaly model (src/decode/anomaly.h) whose outputs hold no map or score.
// A result with NaN/infinite outputs gets valid = FALSE on its meta and no
// classification (returns true: the warning is result_valid's business).
// `skip`, for a frame not inferred: why (the meta's skip_reason).
bool attach_results(GstBuffer* buf, const FrameInference& rec, bool inferred,
                    const std::string& model_instance_id,
                    std::optional<SkipReason> skip = std::nullopt);

// What a tensor meta records besides the slot's outputs.
struct TensorMetaInfo {
  GstTorchSkipReason skip = GST_TORCH_SKIP_NONE;
  bool inferred = true;
  bool valid = true;
  std::uint64_t result_pts = kNoTimestamp;
  gint roi_id = -1;
  gint tile_index = -1;  // inference-region=tiles
  guint tile_count = 0;
};

// One slot's outputs as a tensor meta on `buf`; returns the views for
// decoding. Throws Error(kModelInvalid) for outputs the meta cannot describe.
std::vector<TensorView> add_tensor_meta(GstBuffer* buf, const FrameInference& rec,
                                        const SlotResult& slot, const TensorMetaInfo& info,
                                        const std::string& model_instance_id);

struct RegionAttachInfo {
  std::string model_instance_id;
  std::string element;  // the torchinfer element's name
};

// Region mode: for each region with a result (its own or reused), a tensor
// meta with roi_id = its ROI meta's id and, for classifiers, the
// "classification" param on the ROI meta (replacing this element's earlier
// one). Regions find their ROI metas by id (RegionOfInterest::roi_id; among
// metas sharing an id, by order). Returns false when
// a classifier's output is not a score vector. `not_classified` (if given)
// gets the number of regions inferred on this frame by a detection model,
// which attaches no classification.
bool attach_region_results(GstBuffer* buf, const FrameInference& rec, const RegionAttachInfo& who,
                           std::size_t* not_classified = nullptr);

// False when the frame's outputs hold NaN or infinity (region mode: the
// regions inferred on this frame). The element counts
// these (StreamStats::frame_invalid) and warns once per burst:
//   if (report.record(!result_valid(rec))) GST_ELEMENT_WARNING(... invalid_output_warning ...)
bool result_valid(const FrameInference& rec);

// Text of that warning, after report.record() returned true.
std::string invalid_output_warning(const BurstReport& report);

}  // namespace torchinfer::gst
