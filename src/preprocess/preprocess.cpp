#include "preprocess/preprocess.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "common/error.h"
#include "preprocess/bayer.h"
#include "preprocess/deskew.h"
#include "preprocess/lattice_rows.h"
#include "preprocess/resample.h"
#include "preprocess/row_output.h"
#include "preprocess/write_rows.h"

namespace torchinfer {
namespace {

using row_output::row_scale;
using row_output::RowScale;
using row_output::write_row;
using row_output::Writer;

Taps taps_for(ResizeMethod m, int src, int out) {
  switch (m) {
    case ResizeMethod::kNearest:
      return Taps::nearest(src, out);
    case ResizeMethod::kLinear:
      return Taps::linear(src, out);
    case ResizeMethod::kArea:
      return out <= src ? Taps::area(src, out) : Taps::linear(src, out);
  }
  return Taps::area(src, out);
}

// The frame region actually read, after cropping.
struct Region {
  int x, y, width, height;
};

inline int round_up_even(int v) {
  return v + (v & 1);
}

// Bayer: whole 2x2 cells only, so the region keeps the frame's colour phase
// and no cell is cut; an odd frame's last column or row is not read.
Region region_of(const Crop& crop, const PixelLayout& L, int width, int height) {
  const bool cells = L.kind == PixelLayout::kBayer;
  const int w = cells ? width & ~1 : width, h = cells ? height & ~1 : height;
  Region r{0, 0, w, h};
  if (crop.width > 0 && crop.height > 0) {
    int x0 = std::max(0, crop.x) / L.x_align * L.x_align;
    int y0 = std::max(0, crop.y) / L.y_align * L.y_align;
    int x1 = std::min(width, crop.x + crop.width), y1 = std::min(height, crop.y + crop.height);
    if (cells) x1 = std::min(w, round_up_even(x1)), y1 = std::min(h, round_up_even(y1));
    if (x1 <= x0 || y1 <= y0)
      throw Error(ErrorKind::kInvalidArgument, "crop region lies outside the " +
                                                   std::to_string(width) + "x" +
                                                   std::to_string(height) + " frame");
    r = {x0, y0, x1 - x0, y1 - y0};
  }
  return r;
}

// center_crop: the region cut to the output's aspect ratio around its
// centre, starting on the format's alignment (and whole Bayer cells), so the
// cut reads pixels exactly as a crop there would.
Region centre_cut(Region r, const PreprocessOptions& o, const PixelLayout& L) {
  const bool cells = L.kind == PixelLayout::kBayer;
  const double aspect = static_cast<double>(o.out_width) / o.out_height;
  auto cut = [cells](int& start, int& length, int align, double want) {
    int len = std::max(1, static_cast<int>(std::lround(want)));
    if (cells) len = std::max(2, len & ~1);
    if (len >= length) return;
    start = (start + (length - len) / 2) / align * align;
    length = len;
  };
  if (r.width > r.height * aspect)
    cut(r.x, r.width, L.x_align, r.height * aspect);
  else
    cut(r.y, r.height, L.y_align, r.width / aspect);
  return r;
}

// Where the resized region lands in the model input, and the transform.
struct Geometry {
  Region r;
  FrameTransform t;
  int new_w, new_h, off_x, off_y;
};

Geometry geometry(const PreprocessOptions& o, const Crop& crop, const PixelLayout& L, int width,
                  int height) {
  Geometry g;
  g.r = region_of(crop, L, width, height);
  if (o.center_crop && !o.keep_aspect_ratio) g.r = centre_cut(g.r, o, L);
  double sx = static_cast<double>(o.out_width) / g.r.width,
         sy = static_cast<double>(o.out_height) / g.r.height;
  g.new_w = o.out_width, g.new_h = o.out_height, g.off_x = 0, g.off_y = 0;
  if (o.keep_aspect_ratio) {
    const double s = std::min(sx, sy);
    g.new_w = std::max(1, static_cast<int>(std::lround(g.r.width * s)));
    g.new_h = std::max(1, static_cast<int>(std::lround(g.r.height * s)));
    // The exact per-axis scale of the resized area, so boxes map back exactly.
    sx = static_cast<double>(g.new_w) / g.r.width;
    sy = static_cast<double>(g.new_h) / g.r.height;
    g.off_x = (o.out_width - g.new_w) / 2;
    g.off_y = (o.out_height - g.new_h) / 2;
  }
  g.t = {sx, sy, g.off_x - g.r.x * sx, g.off_y - g.r.y * sy};
  return g;
}

// The frame's planes and the crop, checked as run() checks them.
Geometry checked_geometry(const PreprocessOptions& o, const FrameView& f, const Crop& crop) {
  if (f.width < 1 || f.height < 1) throw Error(ErrorKind::kStreamData, "empty frame");
  const PixelLayout& L = layout_of(f.format);
  if (L.kind == PixelLayout::kBayer && (f.width < 2 || f.height < 2))
    throw Error(ErrorKind::kStreamData,
                std::string(to_string(f.format)) + " Bayer frame " + std::to_string(f.width) + "x" +
                    std::to_string(f.height) + " is smaller than one 2x2 cell");
  for (int p = 0; p < L.n_planes; ++p) {
    const int pw = L.plane_half_w[p] ? (f.width + 1) / 2 : f.width;
    if (!f.planes[p]) throw Error(ErrorKind::kStreamData, "missing plane " + std::to_string(p));
    if (f.strides[p] < pw * L.plane_bpp[p])
      throw Error(ErrorKind::kStreamData,
                  "plane " + std::to_string(p) + " stride smaller than a row");
  }
  return geometry(o, crop, L, f.width, f.height);
}

}  // namespace

const char* to_string(ResizeMethod m) {
  switch (m) {
    case ResizeMethod::kArea:
      return "area";
    case ResizeMethod::kLinear:
      return "linear";
    case ResizeMethod::kNearest:
      return "nearest";
  }
  return "?";
}

PreprocessOptions PreprocessOptions::from_config(const ModelConfig& cfg) {
  PreprocessOptions o;
  o.out_width = cfg.input_width;
  o.out_height = cfg.input_height;
  o.order = cfg.channel_order;
  o.alpha = cfg.alpha;
  o.beta = cfg.beta;
  return o;
}

namespace {

// Resampling plans depend only on the frame geometry: rebuilt on a caps
// change, reused for every frame in between.
struct Plans {
  int key[6] = {-1, -1, -1, -1, -1, -1};
  Taps luma_x, chroma_x, full_y, half_y;
  DenseTaps dense0, dense12;  // horizontal: component 0, components 1 and 2
  bool lattice = false;       // Bayer: per-colour lattices (else row demosaicking)
  bool pick = false;          // every output value is one source sample: 1:1, or nearest
  Taps lattice_y[2];          // Bayer lattice: rows of parity 0 and 1
  std::vector<std::int16_t> lattice_yq[2];  // their weights in fixed point
  RowTaps lattice_x[2];                     // Bayer lattice: columns of parity 0 and 1
  std::vector<float> acc[3];                // per plane; Bayer bilinear: RGB
  std::vector<float> site[2][2];            // Bayer lattice: the column sums of [row][column] sites
  std::vector<float> row[4];                // one output row per component (+ Bayer's second G)
  std::vector<const std::uint8_t*> rows;
  std::vector<const std::uint16_t*> rows16;
  // Bayer bilinear: demosaicked RGB rows, source row y in slot y % slots.
  std::vector<std::uint8_t> ring;
  std::vector<int> ring_row;
};

// One tap of weight 1 per output: resampling only picks samples.
bool is_pick(const Taps& t) {
  for (int i = 0; i < t.size(); ++i)
    if (t.count(i) != 1 || t.w(i)[0] != 1.f) return false;
  return true;
}

bool use_lattice(const PreprocessOptions& o, const Geometry& g) {
  if (o.demosaic != Demosaic::kAuto) return o.demosaic == Demosaic::kLattice;
  return g.r.width >= 2 * g.new_w && g.r.height >= 2 * g.new_h;
}

void make_plans(Plans& s, const PreprocessOptions& o, const PixelLayout& L, const Geometry& g) {
  const Region& r = g.r;
  const bool bayer = L.kind == PixelLayout::kBayer;
  s.luma_x = taps_for(o.method, r.width, g.new_w);
  s.full_y = taps_for(o.method, r.height, g.new_h);
  // Each chroma sample stands for its 2 luma pixels (the convention of
  // every capture pipeline's colour conversion): resampling the chroma
  // plane with the luma weights folded onto it equals resampling the
  // converted image, so only rounding and clamping can differ. A Bayer
  // cell's samples stand for its 2x2 pixels the same way.
  s.chroma_x = s.luma_x.subsampled();
  s.half_y = s.full_y.subsampled();
  s.lattice = bayer && use_lattice(o, g);
  const bool bilinear = bayer && !s.lattice;
  const Taps& t12 = L.kind == PixelLayout::kYUV || bayer ? s.chroma_x : s.luma_x;
  s.pick =
      !bayer && is_pick(s.luma_x) && is_pick(s.full_y) && is_pick(s.chroma_x) && is_pick(s.half_y);
  s.dense0 = DenseTaps(s.luma_x, bilinear ? 3 : L.c[0].step);
  s.dense12 = DenseTaps(t12, L.c[1].step);
  for (int parity = 0; s.lattice && parity < 2; ++parity) {
    s.lattice_y[parity] = s.full_y.lattice(parity, r.height / 2);
    s.lattice_yq[parity] = fixed_point_weights(s.lattice_y[parity]);
    s.lattice_x[parity] = RowTaps(s.luma_x.lattice(parity, r.width / 2));
  }
  // Zero-padded taps may read past the row: keep that memory in bounds.
  const int slack =
      4 + std::max({s.dense0.taps * (bilinear ? 3 : L.c[0].step), s.dense12.taps * L.c[1].step,
                    s.lattice_x[0].taps, s.lattice_x[1].taps});
  const int cw = (r.width + 1) / 2;
  for (auto& a : s.acc) a.clear();
  if (bayer) {
    const int len = bilinear ? 3 * r.width : r.width;
    if (bilinear) s.acc[0].assign(static_cast<std::size_t>(len) + slack, 0.f);
    for (auto& row : s.site)
      for (auto& site : row)  // zeros past the cells: the taps' padding reads them
        site.assign(s.lattice ? static_cast<std::size_t>(r.width / 2) + slack : 0, 0.f);
    int most = 1;
    for (int i = 0; bilinear && i < s.full_y.size(); ++i) most = std::max(most, s.full_y.count(i));
    s.ring.assign(bilinear ? static_cast<std::size_t>(most + 1) * 3 * r.width : 0, 0);
    s.ring_row.assign(bilinear ? most + 1 : 0, -1);
  } else {
    for (int p = 0; p < L.n_planes; ++p) {
      const int pw = L.plane_half_w[p] ? cw : r.width;
      s.acc[p].assign(static_cast<std::size_t>(pw) * L.plane_bpp[p] / L.sample_bytes + slack, 0.f);
    }
  }
  for (auto& row : s.row) row.assign(g.new_w, 0.f);
}

// Vertical pass of output row oy over every plane, then the horizontal pass
// of each component into s.row (0..255 units; YUV: y, u, v).
template <typename T>
void pick_row(const std::uint8_t* row, const Component& c, const DenseTaps& t, float* out) {
  const T* src = reinterpret_cast<const T*>(row) + c.offset;
  for (int x = 0; x < t.n; ++x) out[x] = static_cast<float>(src[t.index[x]]);
}

// A frame already at the model's size (or nearest-neighbour resizing): each
// output value is one sample, read straight from its row. The sums would
// give the same bits (1.0 * v, plus zeros), at 14 % of a 224x224 RGB frame's
// CPU in the element.
void pick_planes(Plans& s, const PixelLayout& L, const FrameView& f,
                 const std::uint8_t* const* base, int oy) {
  for (int i = 0; i < (L.kind == PixelLayout::kGray ? 1 : 3); ++i) {
    const Component& c = L.c[i];
    const Taps& ty = L.plane_half_h[c.plane] ? s.half_y : s.full_y;
    const std::uint8_t* row =
        base[c.plane] + static_cast<std::size_t>(ty.first[oy]) * f.strides[c.plane];
    const DenseTaps& t = i == 0 ? s.dense0 : s.dense12;
    if (L.sample_bytes == 2)
      pick_row<std::uint16_t>(row, c, t, s.row[i].data());
    else
      pick_row<std::uint8_t>(row, c, t, s.row[i].data());
  }
}

void resample_planes(Plans& s, const PixelLayout& L, const FrameView& f, const Region& r,
                     const std::uint8_t* const* base, int oy) {
  if (s.pick) return pick_planes(s, L, f, base, oy);
  const int cw = (r.width + 1) / 2;
  for (int p = 0; p < L.n_planes; ++p) {
    const Taps& ty = L.plane_half_h[p] ? s.half_y : s.full_y;
    const int n = ty.count(oy);
    const int len = (L.plane_half_w[p] ? cw : r.width) * L.plane_bpp[p] / L.sample_bytes;
    if (L.sample_bytes == 2) {
      s.rows16.resize(n);
      for (int i = 0; i < n; ++i)
        s.rows16[i] = reinterpret_cast<const std::uint16_t*>(
            base[p] + static_cast<std::size_t>(ty.first[oy] + i) * f.strides[p]);
      accumulate_rows(s.rows16.data(), ty.w(oy), n, len, s.acc[p].data());
      continue;
    }
    s.rows.resize(n);
    for (int i = 0; i < n; ++i)
      s.rows[i] = base[p] + static_cast<std::size_t>(ty.first[oy] + i) * f.strides[p];
    accumulate_rows(s.rows.data(), ty.w(oy), n, len, s.acc[p].data());
  }
  const Component &c0 = L.c[0], &c1 = L.c[1], &c2 = L.c[2];
  resample_row(s.acc[c0.plane].data() + c0.offset, c0.step, s.dense0, s.row[0].data());
  if (L.kind != PixelLayout::kGray) {
    resample_row(s.acc[c1.plane].data() + c1.offset, c1.step, s.dense12, s.row[1].data());
    resample_row(s.acc[c2.plane].data() + c2.offset, c2.step, s.dense12, s.row[2].data());
  }
}

// Bayer, per-colour lattices: the sample rows of each parity are summed
// apart with that parity's vertical weights, split into their two column
// sites (s.site), then each colour site is resampled with its column
// parity's weights; the two G sites are averaged. Each colour is its
// samples' bilinear interpolation, area-resized, in one pass. R, G, B in
// s.row.
void resample_lattice(Plans& s, const PixelLayout& L, const FrameView& f, const Region& r,
                      const std::uint8_t* origin, int oy) {
  for (int parity = 0; parity < 2; ++parity) {
    const Taps& ty = s.lattice_y[parity];
    const int n = ty.count(oy);
    s.rows.resize(n);
    for (int i = 0; i < n; ++i)
      s.rows[i] = origin + static_cast<std::size_t>(2 * (ty.first[oy] + i) + parity) * f.strides[0];
    accumulate_cells(s.rows.data(), s.lattice_yq[parity].data() + ty.offset[oy], n, r.width / 2,
                     s.site[parity][0].data(), s.site[parity][1].data());
  }
  auto site = [&](int row, int col, std::vector<float>& out) {
    resample_row_taps(s.site[row][col].data(), s.lattice_x[col], out.data());
  };
  const Component &red = L.c[0], &green = L.c[1], &blue = L.c[2];
  site(red.row, red.offset, s.row[0]);
  site(green.row, green.offset, s.row[1]);
  site(1 - green.row, 1 - green.offset, s.row[3]);
  site(blue.row, blue.offset, s.row[2]);
  float* g = s.row[1].data();
  const float* g2 = s.row[3].data();
  for (std::size_t x = 0; x < s.row[1].size(); ++x) g[x] = 0.5f * (g[x] + g2[x]);
}

// Bayer, bilinear: the region rows output row oy reads are demosaicked
// (each once per frame, kept in the ring while later rows need them), then
// resampled as packed RGB. R, G, B in s.row.
void resample_bilinear(Plans& s, const PixelLayout& L, const FrameView& f, const Region& r,
                       const std::uint8_t* origin, int oy) {
  const BayerRegion b{origin, f.strides[0], r.width, r.height, L.c[0].row, L.c[0].offset};
  const std::size_t row_bytes = static_cast<std::size_t>(3) * r.width;
  const int slots = static_cast<int>(s.ring_row.size());
  const Taps& ty = s.full_y;
  const int n = ty.count(oy);
  s.rows.resize(n);
  for (int i = 0; i < n; ++i) {
    const int y = ty.first[oy] + i, slot = y % slots;
    std::uint8_t* dst = s.ring.data() + slot * row_bytes;
    if (s.ring_row[slot] != y) demosaic_bilinear_row(b, y, dst), s.ring_row[slot] = y;
    s.rows[i] = dst;
  }
  accumulate_rows(s.rows.data(), ty.w(oy), n, static_cast<int>(row_bytes), s.acc[0].data());
  for (int c = 0; c < 3; ++c) resample_row(s.acc[0].data() + c, 3, s.dense0, s.row[c].data());
}

// A packed 24-bit frame at the model's size, its bytes already in the
// model's channel order (RGB into an RGB model, BGR into a BGR one): each
// output row is its input row converted (convert_packed3).
bool plain_conversion(const Plans& s, const PixelLayout& L, ChannelOrder order, const Region& r,
                      int new_w, int new_h) {
  if (!s.pick || L.kind != PixelLayout::kRGB || L.plane_bpp[0] != 3 || r.width != new_w ||
      r.height != new_h)
    return false;
  const int red = L.c[0].offset, green = L.c[1].offset, blue = L.c[2].offset;
  if (order == ChannelOrder::kRGB) return red == 0 && green == 1 && blue == 2;
  return order == ChannelOrder::kBGR && blue == 0 && green == 1 && red == 2;
}

// The plans depend on the region's size, the output size, the format and
// the method only: made again when one of them changes, kept otherwise.
void keep_plans(Plans& s, const PreprocessOptions& o, const PixelLayout& L, const Geometry& g,
                const FrameView& f) {
  const Region& r = g.r;
  const int key[6] = {
      r.width, r.height, g.new_w, g.new_h, static_cast<int>(f.format), static_cast<int>(o.method)};
  if (!std::equal(key, key + 6, s.key)) {
    make_plans(s, o, L, g);
    std::copy(key, key + 6, s.key);
  }
  std::fill(s.ring_row.begin(), s.ring_row.end(), -1);  // a new frame
}

// A letterboxed frame: the rows [row_begin, row_end) take the pad value
// first, and the image rows are written over them.
template <typename Out>
void fill_pad(const PreprocessOptions& o, const Writer& w, Out* dst, int row_begin, int row_end) {
  const int C = o.channels();
  Out pad[3];
  w.put_gray(static_cast<float>(o.pad_value), pad);
  const std::size_t first = static_cast<std::size_t>(o.out_width) * row_begin;
  const std::size_t n = static_cast<std::size_t>(o.out_width) * row_end;
  for (std::size_t i = first; i < n; ++i)
    for (int c = 0; c < C; ++c) dst[i * C + c] = pad[c];
}

// Where the cropped region starts in each plane.
void region_origins(const PixelLayout& L, const FrameView& f, const Region& r,
                    const std::uint8_t* base[3]) {
  for (int p = 0; p < L.n_planes; ++p) {
    const int px = L.plane_half_w[p] ? r.x / 2 : r.x;
    const int py = L.plane_half_h[p] ? r.y / 2 : r.y;
    base[p] = f.planes[p] + static_cast<std::size_t>(py) * f.strides[p] +
              static_cast<std::size_t>(px) * L.plane_bpp[p];
  }
}

// Output row oy resampled into s.row, by the layout's own path.
inline void resample(Plans& s, const PixelLayout& L, const FrameView& f, const Region& r,
                     const std::uint8_t* const* base, int oy) {
  if (L.kind != PixelLayout::kBayer)
    resample_planes(s, L, f, r, base, oy);
  else if (s.lattice)
    resample_lattice(s, L, f, r, base[0], oy);
  else
    resample_bilinear(s, L, f, r, base[0], oy);
}

}  // namespace

struct Preprocessor::Scratch : Plans {};

Preprocessor::Preprocessor(const PreprocessOptions& options)
    : opts_(options), scratch_(std::make_unique<Scratch>()) {
  if (opts_.out_width < 1 || opts_.out_height < 1)
    throw Error(ErrorKind::kInvalidArgument, "model input size must be positive");
  if (opts_.pad_value < 0 || opts_.pad_value > 255)
    throw Error(ErrorKind::kInvalidArgument, "pad value must be within 0..255");
  if (opts_.crop.width < 0 || opts_.crop.height < 0 || opts_.crop.x < 0 || opts_.crop.y < 0)
    throw Error(ErrorKind::kInvalidArgument, "crop values must not be negative");
  if (opts_.input_bits < 8 || opts_.input_bits > 16)
    throw Error(ErrorKind::kInvalidArgument,
                "input-bits must be within 8..16 (significant bits of a GRAY16_LE sample), not " +
                    std::to_string(opts_.input_bits));
}

Preprocessor::~Preprocessor() = default;

FrameTransform Preprocessor::run(const FrameView& frame, float* dst) {
  if (opts_.output != OutputType::kFloat32)
    throw Error(ErrorKind::kInvalidArgument, "preprocessor writes bytes");
  return run_impl(frame, opts_.crop, dst, 0, opts_.out_height);
}

FrameTransform Preprocessor::run(const FrameView& frame, std::uint8_t* dst) {
  if (opts_.output != OutputType::kUInt8)
    throw Error(ErrorKind::kInvalidArgument, "preprocessor writes floats");
  return run_impl(frame, opts_.crop, dst, 0, opts_.out_height);
}

FrameTransform Preprocessor::run(const FrameView& frame, const Crop& crop, float* dst) {
  if (opts_.output != OutputType::kFloat32)
    throw Error(ErrorKind::kInvalidArgument, "preprocessor writes bytes");
  return run_impl(frame, crop, dst, 0, opts_.out_height);
}

FrameTransform Preprocessor::run(const FrameView& frame, const Crop& crop, std::uint8_t* dst) {
  if (opts_.output != OutputType::kUInt8)
    throw Error(ErrorKind::kInvalidArgument, "preprocessor writes floats");
  return run_impl(frame, crop, dst, 0, opts_.out_height);
}

void Preprocessor::check(const FrameView& frame, const Crop* crop) const {
  checked_geometry(opts_, frame, crop ? *crop : opts_.crop);
}

FrameTransform Preprocessor::run_band(const FrameView& frame, const Crop* crop, void* dst, int band,
                                      int bands) {
  if (bands < 1 || band < 0 || band >= bands)
    throw Error(ErrorKind::kInvalidArgument, "row band out of range");
  const int h = opts_.out_height;
  const int begin = static_cast<int>(static_cast<std::int64_t>(h) * band / bands);
  const int end = static_cast<int>(static_cast<std::int64_t>(h) * (band + 1) / bands);
  const Crop& c = crop ? *crop : opts_.crop;
  if (opts_.output == OutputType::kUInt8)
    return run_impl(frame, c, static_cast<std::uint8_t*>(dst), begin, end);
  return run_impl(frame, c, static_cast<float*>(dst), begin, end);
}

template <typename Out>
FrameTransform Preprocessor::run_impl(const FrameView& f, const Crop& crop, Out* dst, int row_begin,
                                      int row_end) {
  saturation_ = {};
  if (!dst) throw Error(ErrorKind::kInvalidArgument, "no output buffer");
  const PixelLayout& L = layout_of(f.format);
  const Geometry g = checked_geometry(opts_, f, crop);
  if (crop.rotated)
    return deskew_rows(opts_, f, *crop.rotated, dst, row_begin, row_end, saturation_);
  const Region& r = g.r;
  const int new_w = g.new_w, new_h = g.new_h, off_x = g.off_x, off_y = g.off_y;

  Plans& s = *scratch_;
  keep_plans(s, opts_, L, g, f);
  const int C = opts_.channels();
  const Writer w(opts_);
  if (new_w != opts_.out_width || new_h != opts_.out_height)
    fill_pad(opts_, w, dst, row_begin, row_end);
  const std::uint8_t* base[3] = {};
  region_origins(L, f, r, base);
  const RowScale m = row_scale(L, f, opts_.input_bits);
  const bool plain =
      std::is_same_v<Out, float> && plain_conversion(s, L, opts_.order, r, new_w, new_h);
  const int oy_end = std::min(new_h, row_end - off_y);
  for (int oy = std::max(0, row_begin - off_y); oy < oy_end; ++oy) {
    Out* d = dst + (static_cast<std::size_t>(oy + off_y) * opts_.out_width + off_x) * C;
    if (plain) {
      convert_packed3(base[0] + static_cast<std::size_t>(oy) * f.strides[0], opts_.alpha.data(),
                      opts_.beta.data(), new_w, reinterpret_cast<float*>(d));
      continue;
    }
    resample(s, L, f, r, base, oy);
    write_row(w, L, opts_.order, m, s.row[0].data(), s.row[1].data(), s.row[2].data(), new_w, C, d,
              saturation_);
  }
  return g.t;
}

}  // namespace torchinfer
