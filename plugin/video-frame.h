// GStreamer video frames as the core's FrameView (no copy).
#pragma once

#include <gst/video/video.h>

#include "preprocess/frame.h"

namespace torchinfer::gst {

// False for formats the core does not read.
bool to_pixel_format(GstVideoFormat f, PixelFormat* out);
FrameView frame_view(const GstVideoFrame& f);

}  // namespace torchinfer::gst
