// The pixel formats the core reads, in one table: GStreamer's name for each
// (caps, gst_video_format_from_string) and where its samples sit in memory.
// Preprocessing, the overlay and the plugin's caps all derive from it, so a
// format is added in one place. Machine-vision formats (Bayer mosaics and
// 16-bit mono) sit at the end: torchinfer reads them, torchoverlay does not
// draw on them (overlay_draws()).
#pragma once

#include <array>
#include <cstddef>

namespace torchinfer {

// clang-format off
enum class PixelFormat {
  kYUY2, kUYVY,                 // packed 4:2:2
  kNV12, kNV21,                 // 4:2:0: Y plane + interleaved UV (NV21: VU) plane
  kI420, kYV12,                 // 4:2:0: three planes
  kRGB, kBGR,                   // packed 24-bit
  kRGBx, kBGRx, kxRGB, kxBGR,   // packed 32-bit, padding byte ignored
  kRGBA, kBGRA, kARGB, kABGR,   // packed 32-bit, alpha ignored
  kGRAY8,
  kGRAY16_LE,                   // 10..16-bit mono, little-endian, low bits (input_bits)
  kBayerRGGB, kBayerBGGR,       // 8-bit Bayer mosaics (caps video/x-bayer): the
  kBayerGRBG, kBayerGBRG,       //   2x2 cell's top row, then its bottom row
};
// clang-format on

// One colour component: read from `plane` every `step` samples starting at
// sample `offset`, at luma or (chroma) half horizontal resolution. Bayer:
// the component's site in the 2x2 cell is (row, offset), its step 2.
struct Component {
  int plane, step, offset;
  bool chroma;
  int row = 0;
};

struct PixelLayout {
  enum Kind { kRGB, kGray, kYUV, kBayer } kind;
  int n_planes;
  int plane_bpp[3];      // bytes per (plane) pixel; packed 4:2:2 counts a pixel pair
  bool plane_half_w[3];  // plane is horizontally subsampled
  bool plane_half_h[3];  // plane is vertically subsampled
  Component c[3];        // RGB: r,g,b   YUV: y,u,v   gray: y   Bayer: r, g (in r's row), b
  int x_align, y_align;  // crop alignment
  int sample_bytes = 1;  // 2: 16-bit little-endian samples (strides stay in bytes)
};

struct PixelFormatInfo {
  PixelFormat format;
  const char* name;  // GStreamer's (GstVideoFormat) name
  PixelLayout layout;
};

namespace pixel_layouts {
constexpr PixelLayout rgb(int bpp, int r, int g, int b) {
  return {PixelLayout::kRGB,
          1,
          {bpp, 0, 0},
          {false, false, false},
          {false, false, false},
          {{0, bpp, r, false}, {0, bpp, g, false}, {0, bpp, b, false}},
          1,
          1};
}
// Packed 4:2:2 rows are read as bytes: luma every 2 bytes, chroma every 4.
constexpr PixelLayout packed422(int y, int u, int v) {
  return {PixelLayout::kYUV,
          1,
          {4, 0, 0},
          {true, false, false},
          {false, false, false},
          {{0, 2, y, false}, {0, 4, u, true}, {0, 4, v, true}},
          2,
          1};
}
// Y plane + one interleaved chroma plane.
constexpr PixelLayout semi_planar420(int u, int v) {
  return {PixelLayout::kYUV,
          2,
          {1, 2, 0},
          {false, true, false},
          {false, true, false},
          {{0, 1, 0, false}, {1, 2, u, true}, {1, 2, v, true}},
          2,
          2};
}
constexpr PixelLayout planar420(int u_plane, int v_plane) {
  return {PixelLayout::kYUV,
          3,
          {1, 1, 1},
          {false, true, true},
          {false, true, true},
          {{0, 1, 0, false}, {u_plane, 1, 0, true}, {v_plane, 1, 0, true}},
          2,
          2};
}
constexpr PixelLayout gray8() {
  return {PixelLayout::kGray,
          1,
          {1, 0, 0},
          {false, false, false},
          {false, false, false},
          {{0, 1, 0, false}, {0, 0, 0, false}, {0, 0, 0, false}},  // only y is read
          1,
          1};
}
constexpr PixelLayout gray16() {
  return {PixelLayout::kGray,
          1,
          {2, 0, 0},
          {false, false, false},
          {false, false, false},
          {{0, 1, 0, false}, {0, 0, 0, false}, {0, 0, 0, false}},
          1,
          1,
          2};
}
// R at (r_row, r_col) of the 2x2 cell, B diagonal to it, G on the other two
// sites. Crops snap to whole cells (both corners even), so every region
// starts with the same cell phase as the frame.
constexpr PixelLayout bayer(int r_row, int r_col) {
  return {PixelLayout::kBayer,
          1,
          {1, 0, 0},
          {false, false, false},
          {false, false, false},
          {{0, 2, r_col, true, r_row},
           {0, 2, 1 - r_col, true, r_row},
           {0, 2, 1 - r_col, true, 1 - r_row}},
          2,
          2};
}
}  // namespace pixel_layouts

// In enum order, which is also the order caps list them. Bayer names are the
// `format` strings of video/x-bayer caps.
inline constexpr std::array<PixelFormatInfo, 22> kPixelFormats = {{
    {PixelFormat::kYUY2, "YUY2", pixel_layouts::packed422(0, 1, 3)},
    {PixelFormat::kUYVY, "UYVY", pixel_layouts::packed422(1, 0, 2)},
    {PixelFormat::kNV12, "NV12", pixel_layouts::semi_planar420(0, 1)},
    {PixelFormat::kNV21, "NV21", pixel_layouts::semi_planar420(1, 0)},
    {PixelFormat::kI420, "I420", pixel_layouts::planar420(1, 2)},
    {PixelFormat::kYV12, "YV12", pixel_layouts::planar420(2, 1)},
    {PixelFormat::kRGB, "RGB", pixel_layouts::rgb(3, 0, 1, 2)},
    {PixelFormat::kBGR, "BGR", pixel_layouts::rgb(3, 2, 1, 0)},
    {PixelFormat::kRGBx, "RGBx", pixel_layouts::rgb(4, 0, 1, 2)},
    {PixelFormat::kBGRx, "BGRx", pixel_layouts::rgb(4, 2, 1, 0)},
    {PixelFormat::kxRGB, "xRGB", pixel_layouts::rgb(4, 1, 2, 3)},
    {PixelFormat::kxBGR, "xBGR", pixel_layouts::rgb(4, 3, 2, 1)},
    {PixelFormat::kRGBA, "RGBA", pixel_layouts::rgb(4, 0, 1, 2)},
    {PixelFormat::kBGRA, "BGRA", pixel_layouts::rgb(4, 2, 1, 0)},
    {PixelFormat::kARGB, "ARGB", pixel_layouts::rgb(4, 1, 2, 3)},
    {PixelFormat::kABGR, "ABGR", pixel_layouts::rgb(4, 3, 2, 1)},
    {PixelFormat::kGRAY8, "GRAY8", pixel_layouts::gray8()},
    {PixelFormat::kGRAY16_LE, "GRAY16_LE", pixel_layouts::gray16()},
    {PixelFormat::kBayerRGGB, "rggb", pixel_layouts::bayer(0, 0)},
    {PixelFormat::kBayerBGGR, "bggr", pixel_layouts::bayer(1, 1)},
    {PixelFormat::kBayerGRBG, "grbg", pixel_layouts::bayer(0, 1)},
    {PixelFormat::kBayerGBRG, "gbrg", pixel_layouts::bayer(1, 0)},
}};

constexpr bool table_in_enum_order() {
  for (std::size_t i = 0; i < kPixelFormats.size(); ++i)
    if (static_cast<std::size_t>(kPixelFormats[i].format) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kPixelFormats must list the formats in enum order");

// The format's entry (the table is indexed by the enum).
constexpr const PixelFormatInfo& pixel_format_info(PixelFormat f) {
  return kPixelFormats[static_cast<std::size_t>(f)];
}
constexpr const PixelLayout& layout_of(PixelFormat f) {
  return pixel_format_info(f).layout;
}
// GStreamer's name, e.g. "YUY2".
constexpr const char* to_string(PixelFormat f) {
  return pixel_format_info(f).name;
}
constexpr bool is_yuv_or_gray(PixelFormat f) {
  return layout_of(f).kind == PixelLayout::kYUV || layout_of(f).kind == PixelLayout::kGray;
}
constexpr bool is_bayer(PixelFormat f) {
  return layout_of(f).kind == PixelLayout::kBayer;
}
// torchoverlay draws 8-bit RGB, YUV and gray; on a Bayer mosaic or 16-bit
// samples a drawn colour has no meaning (draw on a converted branch).
constexpr bool overlay_draws(PixelFormat f) {
  return !is_bayer(f) && layout_of(f).sample_bytes == 1;
}

}  // namespace torchinfer
