#include "video-frame.h"

namespace torchinfer::gst {

bool to_pixel_format(GstVideoFormat f, PixelFormat* out) {
  static const struct {
    GstVideoFormat gst;
    PixelFormat ours;
  } table[] = {
      {GST_VIDEO_FORMAT_YUY2, PixelFormat::kYUY2},   {GST_VIDEO_FORMAT_UYVY, PixelFormat::kUYVY},
      {GST_VIDEO_FORMAT_NV12, PixelFormat::kNV12},   {GST_VIDEO_FORMAT_NV21, PixelFormat::kNV21},
      {GST_VIDEO_FORMAT_I420, PixelFormat::kI420},   {GST_VIDEO_FORMAT_YV12, PixelFormat::kYV12},
      {GST_VIDEO_FORMAT_RGB, PixelFormat::kRGB},     {GST_VIDEO_FORMAT_BGR, PixelFormat::kBGR},
      {GST_VIDEO_FORMAT_RGBx, PixelFormat::kRGBx},   {GST_VIDEO_FORMAT_BGRx, PixelFormat::kBGRx},
      {GST_VIDEO_FORMAT_xRGB, PixelFormat::kxRGB},   {GST_VIDEO_FORMAT_xBGR, PixelFormat::kxBGR},
      {GST_VIDEO_FORMAT_RGBA, PixelFormat::kRGBA},   {GST_VIDEO_FORMAT_BGRA, PixelFormat::kBGRA},
      {GST_VIDEO_FORMAT_ARGB, PixelFormat::kARGB},   {GST_VIDEO_FORMAT_ABGR, PixelFormat::kABGR},
      {GST_VIDEO_FORMAT_GRAY8, PixelFormat::kGRAY8},
  };
  for (const auto& e : table)
    if (e.gst == f) {
      *out = e.ours;
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
