#include "stream/regions.h"

#include <algorithm>
#include <cmath>

namespace torchinfer {

std::vector<std::string> parse_class_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    const auto first = item.find_first_not_of(" \t");
    const auto last = item.find_last_not_of(" \t");
    if (first != std::string::npos) out.push_back(item.substr(first, last - first + 1));
    start = end + 1;
  }
  return out;
}

const char* to_string(RegionFate f) {
  switch (f) {
    case RegionFate::kFiltered:
      return "filtered";
    case RegionFate::kOutside:
      return "outside";
    case RegionFate::kTooSmall:
      return "too-small";
    case RegionFate::kInferred:
      return "inferred";
    case RegionFate::kReuse:
      return "reuse";
    case RegionFate::kNotInferred:
      return "not-inferred";
  }
  return "?";
}

namespace {

// The rotated box grown by `padding` of its own width and height per side;
// the crop's pixel box becomes its bounds (outwards to whole pixels),
// clipped. A box whose bounds miss the frame keeps the axis-aligned crop
// (which passed the checks above).
void deskew_region(const RotatedBox& rotated, double padding, std::int64_t W, std::int64_t H,
                   RegionResult& r) {
  RotatedBox b = rotated;
  b.width *= 1 + 2 * padding;
  b.height *= 1 + 2 * padding;
  if (!(b.width > 0) || !(b.height > 0) || !std::isfinite(b.area()) || !std::isfinite(b.cx) ||
      !std::isfinite(b.cy) || !std::isfinite(b.angle))
    return;
  const Box bb = b.bounds();
  const double x0 = std::clamp(std::floor(bb.x_min), 0.0, static_cast<double>(W));
  const double y0 = std::clamp(std::floor(bb.y_min), 0.0, static_cast<double>(H));
  const double x1 = std::clamp(std::ceil(bb.x_max), 0.0, static_cast<double>(W));
  const double y1 = std::clamp(std::ceil(bb.y_max), 0.0, static_cast<double>(H));
  if (!(x1 > x0) || !(y1 > y0)) return;
  r.box.x = static_cast<int>(x0), r.box.y = static_cast<int>(y0);
  r.box.width = static_cast<int>(x1 - x0), r.box.height = static_cast<int>(y1 - y0);
  r.box.rotated = b;
}

}  // namespace

RegionResult plan_region(const RegionOfInterest& roi, const RegionOptions& opts, int frame_width,
                         int frame_height) {
  RegionResult r;
  r.roi_id = roi.roi_id;
  r.object_id = roi.object_id;
  if (!opts.classes.empty() &&
      std::find(opts.classes.begin(), opts.classes.end(), roi.label) == opts.classes.end()) {
    r.fate = RegionFate::kFiltered;
    return r;
  }
  const std::int64_t W = frame_width, H = frame_height;
  const std::int64_t x0 = std::max<std::int64_t>(0, roi.x), y0 = std::max<std::int64_t>(0, roi.y);
  const std::int64_t x1 = std::min(W, roi.x + roi.width), y1 = std::min(H, roi.y + roi.height);
  if (roi.width <= 0 || roi.height <= 0 || x1 <= x0 || y1 <= y0) {
    r.fate = RegionFate::kOutside;
    return r;
  }
  if (x1 - x0 < opts.min_size || y1 - y0 < opts.min_size) {
    r.fate = RegionFate::kTooSmall;
    return r;
  }
  // Padding grows the box as given (not the clipped one), outwards to whole
  // pixels, and is clipped again.
  const double px = opts.padding * static_cast<double>(roi.width);
  const double py = opts.padding * static_cast<double>(roi.height);
  const auto clampd = [](double v, std::int64_t hi) {
    return static_cast<std::int64_t>(std::clamp(v, 0.0, static_cast<double>(hi)));
  };
  const std::int64_t bx0 = clampd(std::floor(roi.x - px), W);
  const std::int64_t by0 = clampd(std::floor(roi.y - py), H);
  const std::int64_t bx1 = clampd(std::ceil(static_cast<double>(roi.x + roi.width) + px), W);
  const std::int64_t by1 = clampd(std::ceil(static_cast<double>(roi.y + roi.height) + py), H);
  r.box.x = static_cast<int>(bx0), r.box.y = static_cast<int>(by0);
  r.box.width = static_cast<int>(bx1 - bx0), r.box.height = static_cast<int>(by1 - by0);
  r.fate = RegionFate::kInferred;
  if (opts.deskew && roi.rotated) deskew_region(*roi.rotated, opts.padding, W, H, r);
  return r;
}

std::uint64_t object_forget_frames(int reclassify_interval, int inference_interval) {
  // Long enough to bridge a tracker's occlusion (torchtrack max-age 30 by
  // default) at any interval.
  const std::uint64_t span = static_cast<std::uint64_t>(std::max(1, reclassify_interval)) *
                             static_cast<std::uint64_t>(std::max(1, inference_interval));
  return std::max<std::uint64_t>(300, 4 * span);
}

}  // namespace torchinfer
