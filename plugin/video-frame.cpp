#include "video-frame.h"

#include <cstring>
#include <vector>

namespace torchinfer::gst {
namespace {

GstCaps* caps_of(bool (*keep)(PixelFormat)) {
  std::vector<GstVideoFormat> raw;
  GValue bayer = G_VALUE_INIT;
  g_value_init(&bayer, GST_TYPE_LIST);
  for (const PixelFormatInfo& e : kPixelFormats) {
    if (!keep(e.format)) continue;
    if (!is_bayer(e.format)) {
      raw.push_back(to_gst_format(e.format));
      continue;
    }
    GValue name = G_VALUE_INIT;
    g_value_init(&name, G_TYPE_STRING);
    g_value_set_static_string(&name, e.name);
    gst_value_list_append_and_take_value(&bayer, &name);
  }
  GstCaps* caps = gst_video_make_raw_caps(raw.data(), static_cast<guint>(raw.size()));
  if (gst_value_list_get_size(&bayer) > 0) {
    GstStructure* s = gst_structure_new("video/x-bayer", "width", GST_TYPE_INT_RANGE, 1, G_MAXINT,
                                        "height", GST_TYPE_INT_RANGE, 1, G_MAXINT, "framerate",
                                        GST_TYPE_FRACTION_RANGE, 0, 1, G_MAXINT, 1, nullptr);
    gst_structure_take_value(s, "format", &bayer);
    gst_caps_append_structure(caps, s);
  } else {
    g_value_unset(&bayer);
  }
  return caps;
}

bool bayer_info_from_caps(const GstStructure* s, GstVideoInfo* info, PixelFormat* format) {
  const char* name = gst_structure_get_string(s, "format");
  gint w = 0, h = 0, fps_n = 0, fps_d = 1;
  if (!name || !gst_structure_get_int(s, "width", &w) || !gst_structure_get_int(s, "height", &h) ||
      w < 1 || h < 1)
    return false;
  for (const PixelFormatInfo& e : kPixelFormats)
    if (is_bayer(e.format) && std::strcmp(e.name, name) == 0) {
      if (!gst_video_info_set_format(info, GST_VIDEO_FORMAT_GRAY8, w, h)) return false;
      if (gst_structure_get_fraction(s, "framerate", &fps_n, &fps_d))
        GST_VIDEO_INFO_FPS_N(info) = fps_n, GST_VIDEO_INFO_FPS_D(info) = fps_d;
      *format = e.format;
      return true;
    }
  return false;
}

}  // namespace

GstCaps* supported_video_caps() {
  return caps_of([](PixelFormat) { return true; });
}

GstCaps* drawable_video_caps() {
  return caps_of(overlay_draws);
}

bool video_info_from_caps(const GstCaps* caps, GstVideoInfo* info, PixelFormat* format) {
  if (!caps || gst_caps_get_size(caps) < 1) return false;
  const GstStructure* s = gst_caps_get_structure(caps, 0);
  if (gst_structure_has_name(s, "video/x-bayer")) return bayer_info_from_caps(s, info, format);
  return gst_structure_has_name(s, "video/x-raw") && gst_video_info_from_caps(info, caps) &&
         to_pixel_format(GST_VIDEO_INFO_FORMAT(info), format);
}

GstVideoFormat to_gst_format(PixelFormat f) {
  return gst_video_format_from_string(to_string(f));
}

bool to_pixel_format(GstVideoFormat f, PixelFormat* out) {
  // Per frame: gst_video_format_to_string indexes an array; a few compares.
  const char* name = gst_video_format_to_string(f);
  if (!name) return false;
  for (const PixelFormatInfo& e : kPixelFormats)
    if (!is_bayer(e.format) && std::strcmp(e.name, name) == 0) {
      *out = e.format;
      return true;
    }
  return false;
}

FrameView frame_view(const GstVideoFrame& f) {
  PixelFormat format = PixelFormat::kRGB;
  to_pixel_format(GST_VIDEO_FRAME_FORMAT(&f), &format);
  return frame_view(f, format);
}

FrameView frame_view(const GstVideoFrame& f, PixelFormat format) {
  FrameView v;
  v.format = format;
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
