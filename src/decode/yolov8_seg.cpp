#include "decode/yolov8_seg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "common/error.h"

namespace torchinfer {
namespace {

const char* kLayout =
    "two float tensors, the head [1, 4 + classes + M, anchors] (cx, cy, w, h, class scores, M "
    "mask coefficients) and the prototypes [1, M, h, w]";

std::string describe_outputs(const std::vector<TensorView>& outputs) {
  if (outputs.empty()) return "no output tensors";
  std::string s;
  for (const auto& t : outputs) s += (s.empty() ? "'" : ", '") + t.name + "' " + describe(t);
  return s;
}

[[noreturn]] void layout_error(const std::vector<TensorView>& outputs, const std::string& why) {
  throw Error(ErrorKind::kStreamData, std::string("decoder yolov8-seg expects ") + kLayout +
                                          "; the model gives " + describe_outputs(outputs) +
                                          (why.empty() ? "" : " (" + why + ")"));
}

bool float_and_covered(const TensorView& t) {
  if (t.dtype != DType::kFloat32 && t.dtype != DType::kFloat64) return false;
  const std::size_t n = t.elements();
  return n == 0 || (t.data != nullptr && t.bytes >= n * element_size(t.dtype));
}

// The dims without a leading batch dimension of 1, when the rank is `full`.
std::vector<std::int64_t> strip_batch(const TensorView& t, std::size_t full) {
  std::vector<std::int64_t> d = t.dims;
  if (d.size() == full && d[0] == 1) d.erase(d.begin());
  return d;
}

double value_at(const TensorView& t, std::size_t i) {
  return t.dtype == DType::kFloat32 ? static_cast<const float*>(t.data)[i]
                                    : static_cast<const double*>(t.data)[i];
}

// Where one frame pixel row or column samples the prototypes: cells i0, i1
// and the weight of i1 (PyTorch's bilinear, align_corners=False, clamped).
struct Tap {
  int i0 = 0, i1 = 0;
  double w1 = 0;
};

std::vector<Tap> taps(int first, int count, double scale, double offset, double cells_per_input,
                      int cells) {
  std::vector<Tap> out(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    const double model = (first + i + 0.5) * scale + offset;
    const double u = std::clamp(model * cells_per_input - 0.5, 0.0, cells - 1.0);
    Tap& t = out[static_cast<std::size_t>(i)];
    t.i0 = static_cast<int>(std::floor(u));
    t.i1 = std::min(t.i0 + 1, cells - 1);
    t.w1 = u - t.i0;
  }
  return out;
}

// sum_k coef_k * proto_k over the cells [r0, r1] x [c0, c1], row-major.
template <typename T>
void accumulate(const T* protos, const std::vector<double>& coef, int h, int w, int r0, int r1,
                int c0, int c1, std::vector<double>& out) {
  const int cols = c1 - c0 + 1;
  out.assign(static_cast<std::size_t>((r1 - r0 + 1) * cols), 0.0);
  const std::size_t plane = static_cast<std::size_t>(h) * w;
  for (std::size_t k = 0; k < coef.size(); ++k) {
    const double ck = coef[k];
    for (int r = r0; r <= r1; ++r) {
      const T* src = protos + k * plane + static_cast<std::size_t>(r) * w + c0;
      double* dst = out.data() + static_cast<std::size_t>(r - r0) * cols;
      for (int c = 0; c < cols; ++c) dst[c] += ck * static_cast<double>(src[c]);
    }
  }
}

// Appends pixels to the runs (background first).
struct RunWriter {
  std::vector<std::uint32_t>& runs;
  bool current = false;
  void push(bool set, std::uint32_t n = 1) {
    if (n == 0) return;
    if (runs.empty()) runs.push_back(0);
    if (set != current) {
      runs.push_back(0);
      current = set;
    }
    runs.back() += n;
  }
};

struct Grid {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

Grid grid_of(const Detection& d, const FrameMapping& m) {
  Grid g;
  g.x0 = std::clamp(static_cast<int>(std::floor(d.x_min)), 0, m.frame_width);
  g.y0 = std::clamp(static_cast<int>(std::floor(d.y_min)), 0, m.frame_height);
  g.x1 = std::clamp(static_cast<int>(std::ceil(d.x_max)), g.x0, m.frame_width);
  g.y1 = std::clamp(static_cast<int>(std::ceil(d.y_max)), g.y0, m.frame_height);
  return g;
}

// Rows of cell values interpolated across at every pixel column: the
// bilinear mix is then one blend of two of these rows per pixel.
std::vector<double> column_blends(const std::vector<Tap>& cols, const std::vector<double>& cells,
                                  int c0, int rows) {
  const std::size_t w = cols.size();
  const int ncols = cols.back().i1 - c0 + 1;
  std::vector<double> out(static_cast<std::size_t>(rows) * w);
  for (int r = 0; r < rows; ++r) {
    const double* src = cells.data() + static_cast<std::size_t>(r) * ncols;
    double* dst = out.data() + static_cast<std::size_t>(r) * w;
    for (std::size_t x = 0; x < w; ++x)
      dst[x] = src[cols[x].i0 - c0] * (1 - cols[x].w1) + src[cols[x].i1 - c0] * cols[x].w1;
  }
  return out;
}

// First and one-past-last index of [first, last) whose centre lies in [lo, hi).
std::pair<int, int> centres_inside(int first, int last, double lo, double hi) {
  int a = first, b = last;
  while (a < last && !(a + 0.5 >= lo)) ++a;
  while (b > a && !(b - 1 + 0.5 < hi)) --b;
  return {a, b};
}

// The mask's pixels from the cell values under the box.
void fill_runs(const Detection& d, const Grid& g, const std::vector<Tap>& cols,
               const std::vector<Tap>& rows, const std::vector<double>& cells, int c0, int r0,
               double logit_threshold, Mask& mask) {
  const int r1 = rows.back().i1;
  const std::vector<double> blend = column_blends(cols, cells, c0, r1 - r0 + 1);
  const std::size_t w = cols.size();
  const auto [xa, xb] = centres_inside(g.x0, g.x1, d.x_min, d.x_max);
  const auto [ya, yb] = centres_inside(g.y0, g.y1, d.y_min, d.y_max);
  std::vector<std::uint8_t> row(w);
  RunWriter out{mask.runs};
  for (int y = g.y0; y < g.y1; ++y) {
    if (y < ya || y >= yb) {
      out.push(false, static_cast<std::uint32_t>(w));
      continue;
    }
    const Tap& ty = rows[static_cast<std::size_t>(y - g.y0)];
    const double* top = blend.data() + static_cast<std::size_t>(ty.i0 - r0) * w;
    const double* bottom = blend.data() + static_cast<std::size_t>(ty.i1 - r0) * w;
    for (std::size_t x = 0; x < w; ++x)
      row[x] = top[x] * (1 - ty.w1) + bottom[x] * ty.w1 > logit_threshold;
    out.push(false, static_cast<std::uint32_t>(xa - g.x0));
    for (int x = xa; x < xb; ++x) {
      const bool set = row[static_cast<std::size_t>(x - g.x0)] != 0;
      mask.area += set;
      out.push(set);
    }
    out.push(false, static_cast<std::uint32_t>(g.x1 - xb));
  }
}

// Pixels of [first, last) whose centre lies in [lo, hi).
std::uint64_t inside(int first, int last, double lo, double hi) {
  std::uint64_t n = 0;
  for (int i = first; i < last; ++i) n += i + 0.5 >= lo && i + 0.5 < hi;
  return n;
}

Mask one_mask(const SegmentTensors& s, const Detection& d, const FrameMapping& m,
              double logit_threshold) {
  const auto hd = strip_batch(*s.head, 3), pd = strip_batch(*s.prototypes, 4);
  const std::int64_t anchors = hd[1];
  const int ph = static_cast<int>(pd[1]), pw = static_cast<int>(pd[2]);
  if (d.anchor < 0 || d.anchor >= anchors)
    throw Error(ErrorKind::kStreamData, "decoder yolov8-seg: detection of anchor " +
                                            std::to_string(d.anchor) + " outside the head's " +
                                            std::to_string(anchors) + " anchors");
  const Grid g = grid_of(d, m);
  Mask mask{g.x0, g.y0, g.x1 - g.x0, g.y1 - g.y0, {}, 0, 0, false};
  if (mask.width == 0 || mask.height == 0) return mask;
  std::vector<double> coef(static_cast<std::size_t>(s.coefficients));
  for (int k = 0; k < s.coefficients; ++k) {
    coef[static_cast<std::size_t>(k)] =
        value_at(*s.head, static_cast<std::size_t>((4 + s.classes + k) * anchors + d.anchor));
    mask.invalid |= !std::isfinite(coef[static_cast<std::size_t>(k)]);
  }
  const auto cols = taps(g.x0, mask.width, m.scale_x, m.offset_x, double(pw) / m.input_width, pw);
  const auto rows = taps(g.y0, mask.height, m.scale_y, m.offset_y, double(ph) / m.input_height, ph);
  // Taps grow with the pixel, so the first and last bound the cells used.
  mask.box_pixels = inside(g.x0, g.x1, d.x_min, d.x_max) * inside(g.y0, g.y1, d.y_min, d.y_max);
  const int c0 = cols.front().i0, c1 = cols.back().i1, r0 = rows.front().i0, r1 = rows.back().i1;
  std::vector<double> cells;
  if (s.prototypes->dtype == DType::kFloat32)
    accumulate(static_cast<const float*>(s.prototypes->data), coef, ph, pw, r0, r1, c0, c1, cells);
  else
    accumulate(static_cast<const double*>(s.prototypes->data), coef, ph, pw, r0, r1, c0, c1, cells);
  for (double v : cells) mask.invalid |= !std::isfinite(v);
  if (mask.invalid) {
    mask.runs.assign(1, static_cast<std::uint32_t>(mask.width * mask.height));
    return mask;
  }
  fill_runs(d, g, cols, rows, cells, c0, r0, logit_threshold, mask);
  return mask;
}

double logit(double t) {
  if (!(t > 0)) return -std::numeric_limits<double>::infinity();
  if (!(t < 1)) return std::numeric_limits<double>::infinity();
  return std::log(t / (1 - t));
}

}  // namespace

SegmentTensors segment_tensors(const std::vector<TensorView>& outputs, std::size_t labels) {
  if (outputs.size() != 2) layout_error(outputs, "it needs exactly two outputs");
  for (const auto& t : outputs)
    if (!float_and_covered(t)) layout_error(outputs, "'" + t.name + "' is not a float tensor");
  if (outputs[0].dims.size() == outputs[1].dims.size())
    layout_error(outputs, "the prototypes have one dimension more than the head");
  SegmentTensors s;
  const bool first_is_head = outputs[0].dims.size() < outputs[1].dims.size();
  s.head = &outputs[first_is_head ? 0 : 1];
  s.prototypes = &outputs[first_is_head ? 1 : 0];
  const auto hd = strip_batch(*s.head, 3), pd = strip_batch(*s.prototypes, 4);
  if (hd.size() != 2 || pd.size() != 3)
    layout_error(outputs, "the head must be [1, channels, anchors], the prototypes [1, M, h, w]");
  if (pd[0] < 1 || pd[1] < 1 || pd[2] < 1) layout_error(outputs, "the prototypes are empty");
  const std::int64_t classes = hd[0] - 4 - pd[0];
  if (classes < 1)
    layout_error(outputs, "the head's " + std::to_string(hd[0]) +
                              " channels leave no class "
                              "score after 4 box values and " +
                              std::to_string(pd[0]) + " mask coefficients, one per prototype");
  if (labels > 0 && static_cast<std::size_t>(classes) != labels)
    layout_error(outputs, "the head's " + std::to_string(hd[0]) + " channels hold " +
                              std::to_string(classes) + " class scores after 4 box values and " +
                              std::to_string(pd[0]) +
                              " mask coefficients, one per prototype, but " +
                              std::to_string(labels) +
                              " labels are given: the head's coefficient "
                              "count differs from the prototypes' or the labels are not this "
                              "model's");
  s.classes = static_cast<int>(classes);
  s.coefficients = static_cast<int>(pd[0]);
  return s;
}

std::vector<Mask> decode_masks(const std::vector<TensorView>& outputs,
                               const std::vector<Detection>& detections, const FrameMapping& m,
                               double threshold, MaskCounts* counts, std::size_t max_runs) {
  const SegmentTensors s = segment_tensors(outputs);
  if (!(m.scale_x > 0) || !(m.scale_y > 0) || m.frame_width < 1 || m.frame_height < 1 ||
      m.input_width < 1 || m.input_height < 1)
    throw Error(ErrorKind::kStreamData, "invalid frame-to-model transform");
  if (!(threshold >= 0 && threshold <= 1))
    throw Error(ErrorKind::kInvalidArgument, "mask threshold must lie in 0..1");
  const double lt = logit(threshold);
  std::vector<Mask> out;
  out.reserve(detections.size());
  std::size_t runs = 0;
  for (const Detection& d : detections) {
    out.push_back(runs <= max_runs ? one_mask(s, d, m, lt) : Mask());
    Mask& k = out.back();
    runs += k.dropped ? 0 : std::max<std::size_t>(k.runs.size(), 1);
    if (runs > max_runs) {
      k = Mask{k.x, k.y, k.width, k.height, {}, 0, k.box_pixels, false, true};
      if (counts) counts->dropped++;
      continue;
    }
    if (!counts) continue;
    counts->invalid += k.invalid;
    counts->empty += k.area == 0;
    counts->full += k.area > 0 && k.area == k.box_pixels;
  }
  return out;
}

std::vector<std::uint8_t> mask_bitmap(const Mask& mask) {
  const std::size_t n = static_cast<std::size_t>(mask.width) * mask.height;
  std::vector<std::uint8_t> bits;
  bits.reserve(n);
  bool set = false;
  for (std::uint32_t r : mask.runs) {
    if (bits.size() + r > n) return {};
    bits.insert(bits.end(), r, set ? 1 : 0);
    set = !set;
  }
  if (bits.size() != n) return {};
  return bits;
}

}  // namespace torchinfer
