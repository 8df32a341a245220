// GStreamer video frames as the core's FrameView (no copy), and the caps of
// the formats the core reads (from the core's pixel-format table).
#pragma once

#include <gst/video/video.h>

#include "preprocess/frame.h"

namespace torchinfer::gst {

// video/x-raw in every format of kPixelFormats (in the table's order), any
// size and frame rate: what GST_VIDEO_CAPS_MAKE gives for that list. The
// caller owns the result.
GstCaps* supported_video_caps();

// False for formats the core does not read.
bool to_pixel_format(GstVideoFormat f, PixelFormat* out);
GstVideoFormat to_gst_format(PixelFormat f);
FrameView frame_view(const GstVideoFrame& f);

}  // namespace torchinfer::gst
