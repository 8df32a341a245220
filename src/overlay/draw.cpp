#include "overlay/draw.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <opencv2/imgproc.hpp>

#include "common/error.h"
#include "overlay/mask_fill.h"

namespace torchinfer {
namespace {

// Well-separated hues (Tableau-like); class ids cycle through them.
constexpr std::array<Rgb, 12> kPalette = {{{230, 25, 75},
                                           {60, 180, 75},
                                           {255, 225, 25},
                                           {0, 130, 200},
                                           {245, 130, 48},
                                           {145, 30, 180},
                                           {70, 240, 240},
                                           {240, 50, 230},
                                           {210, 245, 60},
                                           {250, 190, 212},
                                           {0, 128, 128},
                                           {170, 110, 40}}};
constexpr int kWhite = static_cast<int>(kPalette.size());
constexpr int kBlack = kWhite + 1;
constexpr int kColours = kBlack + 1;

Rgb colour_of(int index) {
  if (index == kWhite) return {255, 255, 255};
  if (index == kBlack) return {0, 0, 0};
  return kPalette[static_cast<std::size_t>(index)];
}

int palette_index(int class_id) {
  const int n = static_cast<int>(kPalette.size());
  return ((class_id % n) + n) % n;
}

// Dashes along each edge from its starting corner, so every corner is
// marked and the box's extent stays readable.
void dashed_rectangle(cv::Mat& m, cv::Point p0, cv::Point p1, const cv::Scalar& c, int thick) {
  const int dash = dash_length(thick);
  const cv::Point corners[] = {p0, {p1.x, p0.y}, p1, {p0.x, p1.y}};
  for (int e = 0; e < 4; ++e) {
    const cv::Point a = corners[e], b = corners[(e + 1) % 4];
    const int len = std::max(std::abs(b.x - a.x), std::abs(b.y - a.y));
    const cv::Point step((b.x > a.x) - (b.x < a.x), (b.y > a.y) - (b.y < a.y));
    for (int t = 0; t <= len; t += 2 * dash)
      cv::line(m, a + step * t, a + step * std::min(len, t + dash - 1), c, thick, cv::LINE_8);
  }
}

// Analytics lines and zones: white on a black outline, so that they show on
// light and dark scenes alike, and unlike any class colour; the name on a
// black tag at the first point.
void draw_shapes(cv::Mat& m, const std::vector<OverlayShape>& shapes,
                 const std::function<cv::Scalar(int)>& colour, int thick, double font,
                 int font_thick, int line_type) {
  const int face = cv::FONT_HERSHEY_SIMPLEX;
  for (const OverlayShape& sh : shapes) {
    if (sh.points.size() < 2) continue;
    std::vector<cv::Point> pts;
    for (const auto& [x, y] : sh.points)
      pts.emplace_back(static_cast<int>(std::lround(x)), static_cast<int>(std::lround(y)));
    cv::polylines(m, pts, sh.closed, colour(kBlack), thick + 2, cv::LINE_8);
    cv::polylines(m, pts, sh.closed, colour(kWhite), thick, cv::LINE_8);
    if (sh.name.empty()) continue;
    int base = 0;
    const cv::Size ts = cv::getTextSize(sh.name, face, font, font_thick, &base);
    const cv::Point at(std::clamp(pts[0].x, 0, std::max(0, m.cols - ts.width - 2)),
                       std::clamp(pts[0].y, ts.height + 2, std::max(ts.height + 2, m.rows - base)));
    cv::rectangle(m, cv::Rect(at.x, at.y - ts.height - 2, ts.width + 4, ts.height + base + 4),
                  colour(kBlack), cv::FILLED);
    cv::putText(m, sh.name, cv::Point(at.x + 2, at.y), face, font, colour(kWhite), font_thick,
                line_type);
  }
}

// White on black just under the box's bottom edge, or just inside it when
// the frame ends there.
void draw_caption(cv::Mat& m, const std::string& text, cv::Point p0, cv::Point p1,
                  const std::function<cv::Scalar(int)>& colour, double font, int font_thick,
                  int line_type) {
  const int face = cv::FONT_HERSHEY_SIMPLEX;
  int base = 0;
  const cv::Size ts = cv::getTextSize(text, face, font, font_thick, &base);
  const int h = ts.height + base + 2;
  const int top = p1.y + 1 + h <= m.rows ? p1.y + 1 : std::max(0, p1.y - h);
  cv::rectangle(m, cv::Rect(p0.x, top, ts.width + 4, h), colour(kBlack), cv::FILLED);
  cv::putText(m, text, cv::Point(p0.x + 2, top + 1 + ts.height), face, font, colour(kWhite),
              font_thick, line_type);
}

// A rotated box: its corners rounded to the pixel grid, joined (LINE_8, no
// anti-aliasing: YUV frames draw colour indices).
void draw_outline(cv::Mat& m, const std::vector<std::pair<double, double>>& corners,
                  const cv::Scalar& c, int thick) {
  std::vector<cv::Point> pts;
  for (const auto& [x, y] : corners)
    pts.emplace_back(static_cast<int>(std::lround(std::clamp(x, -1e6, 1e6))),
                     static_cast<int>(std::lround(std::clamp(y, -1e6, 1e6))));
  cv::polylines(m, pts, true, c, thick, cv::LINE_8);
}

// Draws the scene with colour indices turned into Scalars by `colour`.
void draw_scene(cv::Mat& m, const OverlayScene& s, const std::function<cv::Scalar(int)>& colour,
                int line_type) {
  const int thick = box_thickness(m.rows);
  const double font = std::max(0.4, m.rows / 1200.0);
  const int font_thick = std::max(1, static_cast<int>(std::lround(font * 1.5)));
  const int face = cv::FONT_HERSHEY_SIMPLEX;
  draw_shapes(m, s.shapes, colour, thick, font, font_thick, line_type);
  for (const auto& b : s.boxes) {
    const int ci = palette_index(b.class_id);
    const cv::Point p0(static_cast<int>(std::floor(b.x_min)),
                       static_cast<int>(std::floor(b.y_min)));
    const cv::Point p1(static_cast<int>(std::ceil(b.x_max)) - 1,
                       static_cast<int>(std::ceil(b.y_max)) - 1);
    if (!b.outline.empty())
      draw_outline(m, b.outline, colour(ci), thick);
    else if (b.dashed)
      dashed_rectangle(m, p0, p1, colour(ci), thick);
    else
      cv::rectangle(m, p0, p1, colour(ci), thick, cv::LINE_8);
    if (!b.caption.empty()) draw_caption(m, b.caption, p0, p1, colour, font, font_thick, line_type);
    if (b.text.empty()) continue;
    int base = 0;
    const cv::Size ts = cv::getTextSize(b.text, face, font, font_thick, &base);
    // Above the box when there is room, else just inside its top edge.
    const int top = p0.y - ts.height - base - thick >= 0 ? p0.y - ts.height - base - thick : p0.y;
    const cv::Rect tag(p0.x, top, ts.width + 2 * thick, ts.height + base + thick);
    cv::rectangle(m, tag, colour(ci), cv::FILLED);
    const Rgb c = colour_of(ci);
    const bool light = 299 * c.r + 587 * c.g + 114 * c.b > 128000;
    cv::putText(m, b.text, cv::Point(p0.x + thick, top + ts.height), face, font,
                colour(light ? kBlack : kWhite), font_thick, line_type);
  }
  int y = 0;
  for (const auto& line : s.lines) {
    int base = 0;
    const cv::Size ts = cv::getTextSize(line, face, font, font_thick, &base);
    const int pad = std::max(2, thick);
    cv::rectangle(m, cv::Rect(0, y, ts.width + 2 * pad, ts.height + base + 2 * pad), colour(kBlack),
                  cv::FILLED);
    cv::putText(m, line, cv::Point(pad, y + pad + ts.height), face, font, colour(kWhite),
                font_thick, line_type);
    y += ts.height + base + 2 * pad;
  }
}

// Channel positions of R, G, B and the padding/alpha byte (-1: none).
std::array<int, 4> rgb_layout(PixelFormat f) {
  const PixelLayout& L = layout_of(f);
  const int r = L.c[0].offset, g = L.c[1].offset, b = L.c[2].offset;
  return {r, g, b, L.plane_bpp[0] == 4 ? 0 + 1 + 2 + 3 - r - g - b : -1};
}

struct Yuv {
  std::uint8_t y, u, v;
};

// Luma per pixel, then chroma per chroma sample, each at the byte the
// format's layout gives for that component.
void paint(const std::vector<std::uint8_t>& canvas, const cv::Rect& r, OverlayImage& img,
           const std::array<Yuv, kColours>& yuv) {
  const int w = img.width, h = img.height;
  const PixelLayout& L = layout_of(img.format);
  auto mark = [&](int x, int y) -> int {
    return x < w && y < h ? canvas[static_cast<std::size_t>(y) * w + x] : 0;
  };
  auto at = [&](const Component& c, int x, int y) -> std::uint8_t& {
    return img.planes[c.plane][static_cast<std::size_t>(y) * img.strides[c.plane] +
                               static_cast<std::size_t>(x) * c.step + c.offset];
  };
  for (int y = r.y; y < r.y + r.height; ++y) {
    for (int x = r.x; x < r.x + r.width; ++x) {
      const int c = mark(x, y);
      if (c) at(L.c[0], x, y) = yuv[c - 1].y;
    }
  }
  if (L.kind == PixelLayout::kGray) return;
  const int sub_y = L.plane_half_h[L.c[1].plane] ? 2 : 1;
  for (int cy = r.y / sub_y; cy <= (r.y + r.height - 1) / sub_y; ++cy) {
    for (int cx = r.x / 2; cx <= (r.x + r.width - 1) / 2; ++cx) {
      int c = 0;
      for (int dy = 0; dy < sub_y && !c; ++dy)
        for (int dx = 0; dx < 2 && !c; ++dx) c = mark(2 * cx + dx, cy * sub_y + dy);
      if (!c) continue;
      at(L.c[1], cx, cy) = yuv[c - 1].u;
      at(L.c[2], cx, cy) = yuv[c - 1].v;
    }
  }
}

// A map's heat (0..1) at every pixel of the frame area it covers, clipped
// to its box and the frame: bilinear between map cells.
struct HeatArea {
  cv::Rect rect;     // frame pixels
  cv::Mat heat;      // CV_32F, covers the whole map's frame area
  cv::Point origin;  // frame position of heat(0, 0)
  float at(int x, int y) const {
    return heat.at<float>(std::clamp(y - origin.y, 0, heat.rows - 1),
                          std::clamp(x - origin.x, 0, heat.cols - 1));
  }
};

bool heat_area(const OverlayHeatMap& hm, int width, int height, HeatArea* out) {
  const MapPlacement& w = hm.where;
  const double fx0 = -w.offset_x / w.scale_x, fx1 = (w.input_width - w.offset_x) / w.scale_x;
  const double fy0 = -w.offset_y / w.scale_y, fy1 = (w.input_height - w.offset_y) / w.scale_y;
  const int x0 = static_cast<int>(std::floor(std::max({fx0, w.clip_x0, 0.0})));
  const int y0 = static_cast<int>(std::floor(std::max({fy0, w.clip_y0, 0.0})));
  const int x1 = static_cast<int>(std::ceil(std::min({fx1, w.clip_x1, double(width)})));
  const int y1 = static_cast<int>(std::ceil(std::min({fy1, w.clip_y1, double(height)})));
  const std::size_t rank = hm.map.dims.size();
  if (x1 <= x0 || y1 <= y0 || rank < 3 || !hm.map.data) return false;
  const int mh = static_cast<int>(hm.map.dims[rank - 2]),
            mw = static_cast<int>(hm.map.dims[rank - 1]);
  cv::Mat cells(mh, mw, CV_32F);
  for (int i = 0; i < mh * mw; ++i) {
    const double raw = hm.map.dtype == DType::kFloat64 ? static_cast<const double*>(hm.map.data)[i]
                                                       : static_cast<const float*>(hm.map.data)[i];
    const double v = hm.rule.norm && !std::isnan(raw) ? normalize_min_max(raw, *hm.rule.norm) : raw;
    cells.at<float>(i / mw, i % mw) = static_cast<float>(heat_of(v, hm.rule));
  }
  const cv::Size full(std::max(1, static_cast<int>(std::lround(fx1 - fx0))),
                      std::max(1, static_cast<int>(std::lround(fy1 - fy0))));
  cv::resize(cells, out->heat, full, 0, 0, cv::INTER_LINEAR);
  out->origin = {static_cast<int>(std::lround(fx0)), static_cast<int>(std::lround(fy0))};
  out->rect = cv::Rect(x0, y0, x1 - x0, y1 - y0);
  return true;
}

void blend_rgb(const HeatArea& a, double alpha, OverlayImage& img) {
  const auto lay = rgb_layout(img.format);
  const int bpp = layout_of(img.format).plane_bpp[0];
  for (int y = a.rect.y; y < a.rect.y + a.rect.height; ++y) {
    std::uint8_t* row = img.planes[0] + static_cast<std::size_t>(y) * img.strides[0];
    for (int x = a.rect.x; x < a.rect.x + a.rect.width; ++x) {
      const Rgb c = heat_colour(a.at(x, y));
      std::uint8_t* p = row + static_cast<std::size_t>(x) * bpp;
      p[lay[0]] = blend_sample(p[lay[0]], c.r, alpha);
      p[lay[1]] = blend_sample(p[lay[1]], c.g, alpha);
      p[lay[2]] = blend_sample(p[lay[2]], c.b, alpha);
    }
  }
}

// Luma per pixel; chroma per chroma sample, with the heat of its first
// pixel when that pixel is inside the area (as paint() colours chroma).
void blend_yuv(const HeatArea& a, double alpha, OverlayImage& img) {
  const PixelLayout& L = layout_of(img.format);
  auto at = [&](const Component& c, int x, int y) -> std::uint8_t& {
    return img.planes[c.plane][static_cast<std::size_t>(y) * img.strides[c.plane] +
                               static_cast<std::size_t>(x) * c.step + c.offset];
  };
  auto yuv = [&](int x, int y) {
    Yuv out{};
    rgb_to_yuv(heat_colour(a.at(x, y)), img.matrix, img.full_range, &out.y, &out.u, &out.v);
    return out;
  };
  const cv::Rect& r = a.rect;
  for (int y = r.y; y < r.y + r.height; ++y)
    for (int x = r.x; x < r.x + r.width; ++x)
      at(L.c[0], x, y) = blend_sample(at(L.c[0], x, y), yuv(x, y).y, alpha);
  if (L.kind == PixelLayout::kGray) return;
  const int sub_y = L.plane_half_h[L.c[1].plane] ? 2 : 1;
  for (int cy = (r.y + sub_y - 1) / sub_y; cy * sub_y < r.y + r.height; ++cy)
    for (int cx = (r.x + 1) / 2; 2 * cx < r.x + r.width; ++cx) {
      const Yuv c = yuv(2 * cx, cy * sub_y);
      at(L.c[1], cx, cy) = blend_sample(at(L.c[1], cx, cy), c.u, alpha);
      at(L.c[2], cx, cy) = blend_sample(at(L.c[2], cx, cy), c.v, alpha);
    }
}

}  // namespace

void draw_heat_map(const OverlayHeatMap& hm, double alpha, OverlayImage& img) {
  HeatArea a;
  if (!heat_area(hm, img.width, img.height, &a)) return;
  if (is_yuv_or_gray(img.format))
    blend_yuv(a, alpha, img);
  else
    blend_rgb(a, alpha, img);
}

Rgb class_colour(int class_id) {
  return kPalette[static_cast<std::size_t>(palette_index(class_id))];
}

int box_thickness(int frame_height) {
  return std::max(1, static_cast<int>(std::lround(frame_height / 360.0)));
}

int dash_length(int thickness) {
  return 3 * thickness + 3;
}

void rgb_to_yuv(Rgb c, YuvMatrix m, bool full_range, std::uint8_t* y, std::uint8_t* u,
                std::uint8_t* v) {
  const double kr = m == YuvMatrix::kBT709 ? 0.2126 : m == YuvMatrix::kBT2020 ? 0.2627 : 0.299;
  const double kb = m == YuvMatrix::kBT709 ? 0.0722 : m == YuvMatrix::kBT2020 ? 0.0593 : 0.114;
  const double Y = kr * c.r + (1 - kr - kb) * c.g + kb * c.b;                     // 0..255
  const double cb = (c.b - Y) / (2 * (1 - kb)), cr = (c.r - Y) / (2 * (1 - kr));  // -127.5..127.5
  auto byte = [](double x) {
    return static_cast<std::uint8_t>(std::clamp(std::lround(x), 0L, 255L));
  };
  *y = byte(full_range ? Y : 16 + Y * 219 / 255);
  *u = byte(128 + (full_range ? cb : cb * 224 / 255));
  *v = byte(128 + (full_range ? cr : cr * 224 / 255));
}

void Overlay::draw(const OverlayScene& scene, OverlayImage& img) {
  if (img.width < 1 || img.height < 1) throw Error(ErrorKind::kStreamData, "overlay: empty frame");
  for (int p = 0; p < layout_of(img.format).n_planes; ++p)
    if (!img.planes[p]) throw Error(ErrorKind::kStreamData, "overlay: missing plane");
  for (const auto& hm : scene.heat_maps) draw_heat_map(hm, scene.heat_alpha, img);
  for (const auto& m : scene.masks)
    fill_mask(m.mask, class_colour(m.class_id), scene.mask_alpha, img);
  if (scene.boxes.empty() && scene.lines.empty()) return;

  if (!is_yuv_or_gray(img.format)) {
    const auto lay = rgb_layout(img.format);
    const int ch = lay[3] < 0 ? 3 : 4;
    cv::Mat m(img.height, img.width, CV_8UC(ch), img.planes[0],
              static_cast<std::size_t>(img.strides[0]));
    draw_scene(
        m, scene,
        [&](int i) {
          const Rgb c = colour_of(i);
          cv::Scalar s;
          s[lay[0]] = c.r;
          s[lay[1]] = c.g;
          s[lay[2]] = c.b;
          if (lay[3] >= 0) s[lay[3]] = 255;
          return s;
        },
        cv::LINE_AA);
    return;
  }

  const std::size_t n = static_cast<std::size_t>(img.width) * img.height;
  if (canvas_.size() != n) canvas_.assign(n, 0);
  cv::Mat canvas(img.height, img.width, CV_8UC1, canvas_.data());
  // Anti-aliasing would blend indices: plain lines on the canvas.
  draw_scene(
      canvas, scene, [](int i) { return cv::Scalar(i + 1); }, cv::LINE_8);
  const cv::Rect dirty = cv::boundingRect(canvas);
  if (dirty.empty()) return;
  std::array<Yuv, kColours> yuv{};
  for (int i = 0; i < kColours; ++i)
    rgb_to_yuv(colour_of(i), img.matrix, img.full_range, &yuv[i].y, &yuv[i].u, &yuv[i].v);
  paint(canvas_, dirty, img, yuv);
  canvas(dirty).setTo(0);  // keep the canvas zeroed for the next frame
}

}  // namespace torchinfer
