// Builds the FrameRecord of a buffer (frame fields, torchinfer tensor meta,
// classification meta, detection ROIs with torchtrack's object ids,
// torchtrack's events meta): shared by the elements that export
// per-frame results (torchmetaconvert, torchpublish), so they say the same.
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <string>

#include "export/frame_record.h"

namespace torchinfer::gst {

// What a per-frame exporter knows about its stream besides the buffer.
struct StreamContext {
  std::string stream_id;
  int width = 0, height = 0;
  std::uint64_t next_frame = 0;  // frame number of the next buffer

  void reset() { *this = StreamContext(); }
  void set_caps(GstCaps* caps);
  void on_event(GstEvent* event);  // STREAM_START sets the stream id
};

// Numbers the frame (consumes ctx.next_frame). Tensor views share the meta's
// memory: the record must not outlive `buf` when include_tensors is set.
// anomaly_regions: anomaly results also get the boxes of their map's
// anomalous areas (src/decode/anomaly.h), from the map in the tensor meta.
FrameRecord read_frame_record(GstBuffer* buf, StreamContext& ctx, bool include_tensors,
                              bool anomaly_regions = false);

// The exporters' "mm-per-pixel" property, described once: the camera's
// calibration, so that a mask's "area_mm2" is the same in the JSON lines
// and over MQTT.
GParamSpec* mm_per_pixel_param_spec(GParamFlags flags);

// The calibration on the record (masks then get "area_mm2"); 0 = none.
void set_mm_per_pixel(FrameRecord& r, double mm_per_pixel);

}  // namespace torchinfer::gst
