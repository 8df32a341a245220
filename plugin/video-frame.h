// GStreamer video frames as the core's FrameView (no copy), and the caps of
// the formats the core reads (from the core's pixel-format table).
#pragma once

#include <gst/video/video.h>

#include "preprocess/frame.h"

namespace torchinfer::gst {

// video/x-raw in every format of kPixelFormats that GStreamer names (in the
// table's order), then video/x-bayer in the table's Bayer orders; any size
// and frame rate. The caller owns the result.
GstCaps* supported_video_caps();
// The same limited to the formats torchoverlay draws on (overlay_draws()).
GstCaps* drawable_video_caps();

// Negotiated caps as the GstVideoInfo frames are mapped with, and the core's
// format. video/x-bayer maps as one 8-bit plane with rows padded to 4 bytes
// (GRAY8's layout: GStreamer's for video/x-bayer, as bayer2rgb and rgb2bayer
// use it). False for caps the core does not read.
bool video_info_from_caps(const GstCaps* caps, GstVideoInfo* info, PixelFormat* format);

// False for formats the core does not read.
bool to_pixel_format(GstVideoFormat f, PixelFormat* out);
GstVideoFormat to_gst_format(PixelFormat f);
FrameView frame_view(const GstVideoFrame& f);
// A frame mapped with video_info_from_caps()'s info, read as `format`.
FrameView frame_view(const GstVideoFrame& f, PixelFormat format);

}  // namespace torchinfer::gst
