// Draws detections, text lines and a HUD onto a video frame in place, in the
// frame's own pixel format (no conversion of the frame).
//
// Packed RGB formats are wrapped as a cv::Mat and drawn on directly. YUV and
// gray formats are drawn as colour indices into a one-byte canvas of the
// frame's size, then painted: luma at full resolution, chroma once per
// chroma sample (2x1 block for YUY2/UYVY, 2x2 for NV12/NV21/I420/YV12) taking
// the colour of the block's first marked pixel. One code path serves every
// subsampling, text stays sharp in luma, and YUY2's interleaved U/V, which no
// single cv::Mat view can draw a colour into, needs nothing special.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decode/yolov8_seg.h"
#include "overlay/heatmap.h"
#include "preprocess/frame.h"

namespace torchinfer {

struct OverlayImage {
  PixelFormat format = PixelFormat::kRGB;
  int width = 0, height = 0;
  std::uint8_t* planes[3] = {nullptr, nullptr, nullptr};
  int strides[3] = {0, 0, 0};
  YuvMatrix matrix = YuvMatrix::kBT601;
  bool full_range = false;
};

struct OverlayBox {
  double x_min = 0, y_min = 0, x_max = 0, y_max = 0;  // frame pixels
  int class_id = 0;                                   // picks the colour
  std::string text;                                   // e.g. "bolt 0.87"; empty = no tag
  bool dashed = false;  // outline in dashes (a tracker's predicted box, not a detection)
  std::string caption;  // under the box, white on black (a part's code); empty = none
  // A rotated box's four corners in order (frame pixels): drawn as that
  // outline instead of the box above (whose corner still places the tag).
  std::vector<std::pair<double, double>> outline;
};

// A torchanalytics line (two points) or zone (a closed polygon), frame
// pixels, with its name drawn at its first point.
struct OverlayShape {
  std::vector<std::pair<double, double>> points;
  bool closed = false;
  std::string name;
};

struct OverlayScene {
  std::vector<OverlayHeatMap> heat_maps;  // drawn first, under the boxes
  double heat_alpha = 0.4;                // weight of the colour map
  std::vector<OverlayBox> boxes;
  std::vector<std::string> lines;  // top-left, one per row (classification, HUD)
  // Drawn first, under the boxes; their counts go in `lines` (a scene with
  // shapes and no lines draws nothing).
  std::vector<OverlayShape> shapes;
  // Instance masks (torchnms yolov8-seg), filled translucently in their
  // class colour under the boxes.
  struct MaskFill {
    Mask mask;
    int class_id = 0;
  };
  std::vector<MaskFill> masks;
  double mask_alpha = 0.4;
};

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
};

// Stable per class: the same id always gets the same colour.
Rgb class_colour(int class_id);

// Box outline thickness for a frame height (2 px at 720p).
int box_thickness(int frame_height);

// Length of each dash, and of each gap, of a dashed outline.
int dash_length(int thickness);

// Y, U, V of an RGB colour for the given matrix and range.
void rgb_to_yuv(Rgb c, YuvMatrix m, bool full_range, std::uint8_t* y, std::uint8_t* u,
                std::uint8_t* v);

// Blends one heat map onto the frame (OverlayScene::heat_maps does it in
// Overlay::draw, under the boxes).
void draw_heat_map(const OverlayHeatMap& heat_map, double alpha, OverlayImage& image);

class Overlay {
 public:
  // Throws Error(kStreamData) for empty frames or null planes.
  void draw(const OverlayScene& scene, OverlayImage& image);

 private:
  std::vector<std::uint8_t> canvas_;  // colour index + 1 per pixel; kept zeroed
};

}  // namespace torchinfer
