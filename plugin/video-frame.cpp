#include "video-frame.h"

#include <array>
#include <cstring>

namespace torchinfer::gst {

GstCaps* supported_video_caps() {
  std::array<GstVideoFormat, kPixelFormats.size()> formats{};
  for (std::size_t i = 0; i < kPixelFormats.size(); ++i)
    formats[i] = to_gst_format(kPixelFormats[i].format);
  return gst_video_make_raw_caps(formats.data(), formats.size());
}

GstVideoFormat to_gst_format(PixelFormat f) {
  return gst_video_format_from_string(to_string(f));
}

bool to_pixel_format(GstVideoFormat f, PixelFormat* out) {
  // Per frame: gst_video_format_to_string indexes an array; 17 compares.
  const char* name = gst_video_format_to_string(f);
  if (!name) return false;
  for (const PixelFormatInfo& e : kPixelFormats)
    if (std::strcmp(e.name, name) == 0) {
      *out = e.format;
      return true;
    }
  return false;
}

FrameView frame_view(const GstVideoFrame& f) {
  FrameView v;
  to_pixel_format(GST_VIDEO_FRAME_FORMAT(&f), &v.format);
  v.width = GST_VIDEO_FRAME_WIDTH(&f);
  v.height = GST_VIDEO_FRAME_HEIGHT(&f);
  for (guint p = 0; p < GST_VIDEO_FRAME_N_PLANES(&f) && p < 3; ++p) {
    v.planes[p] = static_cast<const std::uint8_t*>(GST_VIDEO_FRAME_PLANE_DATA(&f, p));
    v.strides[p] = GST_VIDEO_FRAME_PLANE_STRIDE(&f, p);
  }
  const GstVideoColorimetry& c = f.info.colorimetry;
  v.matrix = c.matrix == GST_VIDEO_COLOR_MATRIX_BT709    ? YuvMatrix::kBT709
             : c.matrix == GST_VIDEO_COLOR_MATRIX_BT2020 ? YuvMatrix::kBT2020
                                                         : YuvMatrix::kBT601;
  v.full_range = c.range == GST_VIDEO_COLOR_RANGE_0_255;
  return v;
}

}  // namespace torchinfer::gst
