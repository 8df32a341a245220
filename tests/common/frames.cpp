#include "frames.h"

#include <opencv2/imgproc.hpp>
#include <random>

namespace torchinfer::test {

cv::Mat make_rgb_image(int width, int height, unsigned seed) {
  std::mt19937 rng(seed);
  cv::Mat img(height, width, CV_8UC3);
  const double fx = 2.0 + rng() % 5, fy = 1.0 + rng() % 4;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const double u = static_cast<double>(x) / width, v = static_cast<double>(y) / height;
      img.at<cv::Vec3b>(y, x) =
          cv::Vec3b(cv::saturate_cast<uchar>(40 + 170 * u),
                    cv::saturate_cast<uchar>(128 + 90 * std::sin(fx * u + fy * v)),
                    cv::saturate_cast<uchar>(30 + 190 * v));
    }
  for (int i = 0; i < 6; ++i) {
    cv::Point c(rng() % std::max(1, width), rng() % std::max(1, height));
    const int r = 1 + rng() % std::max(1, std::min(width, height) / 4 + 1);
    cv::circle(img, c, r, cv::Scalar(rng() % 256, rng() % 256, rng() % 256), cv::FILLED);
  }
  // Camera optics never produce 1-pixel colour steps; without this, chroma
  // shared across a hard edge creates colours no camera would output.
  if (width >= 3 && height >= 3) cv::GaussianBlur(img, img, cv::Size(3, 3), 0.8);
  return img;
}

namespace {

cv::Vec3d yuv601(const cv::Vec3b& p) {
  const double r = p[0], g = p[1], b = p[2];
  return {16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255.0,
          128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255.0,
          128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255.0};
}

uchar sat(double v) {
  return cv::saturate_cast<uchar>(v);
}

bool is_yuv(PixelFormat f) {
  switch (f) {
    case PixelFormat::kYUY2:
    case PixelFormat::kUYVY:
    case PixelFormat::kNV12:
    case PixelFormat::kNV21:
    case PixelFormat::kI420:
    case PixelFormat::kYV12:
      return true;
    default:
      return false;
  }
}

// Packed formats: where r,g,b (or a junk byte) go, and bytes per pixel.
int packed_layout(PixelFormat f, int idx[4]) {
  auto set = [&](int a, int b, int c, int d) { idx[0] = a, idx[1] = b, idx[2] = c, idx[3] = d; };
  switch (f) {
    case PixelFormat::kRGB:
      set(0, 1, 2, -1);
      return 3;
    case PixelFormat::kBGR:
      set(2, 1, 0, -1);
      return 3;
    case PixelFormat::kRGBx:
    case PixelFormat::kRGBA:
      set(0, 1, 2, 3);
      return 4;
    case PixelFormat::kBGRx:
    case PixelFormat::kBGRA:
      set(2, 1, 0, 3);
      return 4;
    case PixelFormat::kxRGB:
    case PixelFormat::kARGB:
      set(1, 2, 3, 0);
      return 4;
    case PixelFormat::kxBGR:
    case PixelFormat::kABGR:
      set(3, 2, 1, 0);
      return 4;
    default:
      return 0;
  }
}

}  // namespace

namespace {

// Bayer and 16-bit mono: one plane of w samples per row.
OwnedFrame make_camera_frame(const cv::Mat& rgb, PixelFormat format, int stride) {
  OwnedFrame f;
  const int w = rgb.cols, h = rgb.rows;
  const PixelLayout& L = layout_of(format);
  const int row_bytes = w * L.plane_bpp[0];
  const int s = std::max(stride, row_bytes) + (std::max(stride, row_bytes) & 1);
  f.bytes.assign(static_cast<std::size_t>(s) * h + 64, 0xAB);
  for (int y = 0; y < h; ++y) {
    std::uint8_t* d = f.bytes.data() + static_cast<std::size_t>(y) * s;
    for (int x = 0; x < w; ++x) {
      const cv::Vec3b p = rgb.at<cv::Vec3b>(y, x);
      if (L.kind == PixelLayout::kBayer) {
        // The site's own colour, as the sensor's colour filter keeps it.
        const int red_row = L.c[0].row, red_col = L.c[0].offset;
        const bool rr = (y & 1) == red_row, rc = (x & 1) == red_col;
        d[x] = rr && rc ? p[0] : !rr && !rc ? p[2] : p[1];
      } else {  // GRAY16_LE: BT.601 luma at full 16-bit scale
        const int v = std::lround((0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]) * 257.0);
        d[2 * x] = static_cast<std::uint8_t>(v & 0xFF);
        d[2 * x + 1] = static_cast<std::uint8_t>(v >> 8);
      }
    }
  }
  f.view.format = format;
  f.view.width = w;
  f.view.height = h;
  f.view.planes[0] = f.bytes.data();
  f.view.strides[0] = s;
  return f;
}

}  // namespace

OwnedFrame make_frame(const cv::Mat& rgb, PixelFormat format, int stride) {
  if (is_bayer(format) || format == PixelFormat::kGRAY16_LE)
    return make_camera_frame(rgb, format, stride);
  OwnedFrame f;
  const int w = rgb.cols, h = rgb.rows, cw = (w + 1) / 2, ch = (h + 1) / 2;
  auto px = [&](int y, int x) { return rgb.at<cv::Vec3b>(std::min(y, h - 1), std::min(x, w - 1)); };
  // Chroma of a 2x(rows) block, averaged like a camera's subsampling.
  auto chroma = [&](int y, int x, int rows) {
    cv::Vec3d s(0, 0, 0);
    for (int dy = 0; dy < rows; ++dy)
      for (int dx = 0; dx < 2; ++dx) s += yuv601(px(y + dy, x + dx));
    return s / (2.0 * rows);
  };
  int n_planes = 1, row_bytes[3] = {0, 0, 0}, rows[3] = {h, 0, 0};
  int idx[4];
  const int bpp = packed_layout(format, idx);
  switch (format) {
    case PixelFormat::kGRAY8:
      row_bytes[0] = w;
      break;
    case PixelFormat::kYUY2:
    case PixelFormat::kUYVY:
      row_bytes[0] = cw * 4;
      break;
    case PixelFormat::kNV12:
    case PixelFormat::kNV21:
      n_planes = 2, row_bytes[0] = w, row_bytes[1] = cw * 2, rows[1] = ch;
      break;
    case PixelFormat::kI420:
    case PixelFormat::kYV12:
      n_planes = 3, row_bytes[0] = w, row_bytes[1] = row_bytes[2] = cw, rows[1] = rows[2] = ch;
      break;
    default:
      row_bytes[0] = w * bpp;
      break;
  }
  int strides[3], offsets[3], total = 0;
  for (int p = 0; p < n_planes; ++p) {
    strides[p] = std::max(stride, row_bytes[p]);
    offsets[p] = total;
    total += strides[p] * rows[p] + 64;  // planes need not be adjacent
  }
  f.bytes.assign(total, 0xAB);  // padding holds junk on purpose
  auto plane = [&](int p, int y) {
    return f.bytes.data() + offsets[p] + static_cast<std::size_t>(y) * strides[p];
  };
  for (int y = 0; y < h; ++y) {
    std::uint8_t* d = plane(0, y);
    for (int x = 0; x < w; ++x) {
      const cv::Vec3b p = px(y, x);
      if (bpp) {
        for (int c = 0; c < 3; ++c) d[x * bpp + idx[c]] = p[c];
        if (idx[3] >= 0) d[x * bpp + idx[3]] = 77;
      } else if (format == PixelFormat::kGRAY8) {
        d[x] = sat(0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]);
      } else if (format == PixelFormat::kYUY2 || format == PixelFormat::kUYVY) {
        if (x % 2) continue;
        const cv::Vec3d c = chroma(y, x, 1);
        const uchar y0 = sat(yuv601(p)[0]), y1 = sat(yuv601(px(y, x + 1))[0]);
        std::uint8_t* o = d + 2 * x;
        if (format == PixelFormat::kYUY2)
          o[0] = y0, o[1] = sat(c[1]), o[2] = y1, o[3] = sat(c[2]);
        else
          o[0] = sat(c[1]), o[1] = y0, o[2] = sat(c[2]), o[3] = y1;
      } else {
        d[x] = sat(yuv601(p)[0]);
      }
    }
  }
  if (n_planes > 1) {
    for (int y = 0; y < ch; ++y)
      for (int x = 0; x < cw; ++x) {
        const cv::Vec3d c = chroma(2 * y, 2 * x, 2);
        const uchar u = sat(c[1]), v = sat(c[2]);
        switch (format) {
          case PixelFormat::kNV12:
            plane(1, y)[2 * x] = u, plane(1, y)[2 * x + 1] = v;
            break;
          case PixelFormat::kNV21:
            plane(1, y)[2 * x] = v, plane(1, y)[2 * x + 1] = u;
            break;
          case PixelFormat::kI420:
            plane(1, y)[x] = u, plane(2, y)[x] = v;
            break;
          default:
            plane(1, y)[x] = v, plane(2, y)[x] = u;
            break;  // YV12: V plane first
        }
      }
  }
  f.view.format = format;
  f.view.width = w;
  f.view.height = h;
  for (int p = 0; p < n_planes; ++p) {
    f.view.planes[p] = f.bytes.data() + offsets[p];
    f.view.strides[p] = strides[p];
  }
  return f;
}

cv::Mat reference_rgb(const FrameView& f) {
  cv::Mat rgb(f.height, f.width, CV_8UC3);
  const int w = f.width;
  auto at = [&](int p, int y, int x) {
    return f.planes[p][static_cast<std::size_t>(y) * f.strides[p] + x];
  };
  int idx[4];
  const int bpp = packed_layout(f.format, idx);
  for (int y = 0; y < f.height; ++y)
    for (int x = 0; x < w; ++x) {
      cv::Vec3b& o = rgb.at<cv::Vec3b>(y, x);
      if (bpp) {
        o = cv::Vec3b(at(0, y, x * bpp + idx[0]), at(0, y, x * bpp + idx[1]),
                      at(0, y, x * bpp + idx[2]));
        continue;
      }
      if (f.format == PixelFormat::kGRAY8) {
        o = cv::Vec3b::all(at(0, y, x));
        continue;
      }
      if (f.format == PixelFormat::kGRAY16_LE) {
        o = cv::Vec3b::all(sat((at(0, y, 2 * x) + 256 * at(0, y, 2 * x + 1)) / 257.0));
        continue;
      }
      double Y = 0, U = 0, V = 0;
      const int pair = (x / 2) * 4;
      switch (f.format) {
        case PixelFormat::kYUY2:
          Y = at(0, y, pair + (x % 2) * 2), U = at(0, y, pair + 1), V = at(0, y, pair + 3);
          break;
        case PixelFormat::kUYVY:
          Y = at(0, y, pair + 1 + (x % 2) * 2), U = at(0, y, pair), V = at(0, y, pair + 2);
          break;
        case PixelFormat::kNV12:
          Y = at(0, y, x), U = at(1, y / 2, x / 2 * 2), V = at(1, y / 2, x / 2 * 2 + 1);
          break;
        case PixelFormat::kNV21:
          Y = at(0, y, x), V = at(1, y / 2, x / 2 * 2), U = at(1, y / 2, x / 2 * 2 + 1);
          break;
        case PixelFormat::kI420:
          Y = at(0, y, x), U = at(1, y / 2, x / 2), V = at(2, y / 2, x / 2);
          break;
        default:
          Y = at(0, y, x), V = at(1, y / 2, x / 2), U = at(2, y / 2, x / 2);
          break;
      }
      // BT.601 limited range, the coefficients cv::cvtColor uses.
      const double c = 1.164383 * (Y - 16);
      o = cv::Vec3b(sat(c + 1.596027 * (V - 128)),
                    sat(c - 0.391762 * (U - 128) - 0.812968 * (V - 128)),
                    sat(c + 2.017232 * (U - 128)));
    }
  return rgb;
}

namespace {
int interpolation_for(ResizeMethod m, int src, int out) {
  if (m == ResizeMethod::kNearest) return cv::INTER_NEAREST;
  if (m == ResizeMethod::kLinear || out > src) return cv::INTER_LINEAR;
  return cv::INTER_AREA;
}
}  // namespace

std::vector<float> reference_preprocess(const FrameView& f, const PreprocessOptions& o) {
  return reference_preprocess(reference_rgb(f), f.format, o);
}

std::vector<float> reference_preprocess(const cv::Mat& full, PixelFormat format,
                                        const PreprocessOptions& o) {
  cv::Mat rgb = full;
  if (is_bayer(format)) {  // whole 2x2 cells, both corners even
    const int w = full.cols & ~1, h = full.rows & ~1;
    int x0 = 0, y0 = 0, x1 = w, y1 = h;
    if (o.crop.width > 0) {
      x0 = o.crop.x & ~1, y0 = o.crop.y & ~1;
      x1 = std::min(w, (o.crop.x + o.crop.width + 1) & ~1);
      y1 = std::min(h, (o.crop.y + o.crop.height + 1) & ~1);
    }
    rgb = full(cv::Rect(x0, y0, x1 - x0, y1 - y0));
  } else if (o.crop.width > 0) {
    const bool sub2 = is_yuv(format);
    const bool sub_y = format != PixelFormat::kYUY2 && format != PixelFormat::kUYVY && sub2;
    const int x0 = sub2 ? o.crop.x / 2 * 2 : o.crop.x, y0 = sub_y ? o.crop.y / 2 * 2 : o.crop.y;
    rgb = full(cv::Rect(x0, y0, std::min(full.cols, o.crop.x + o.crop.width) - x0,
                        std::min(full.rows, o.crop.y + o.crop.height) - y0));
  }
  int new_w = o.out_width, new_h = o.out_height;
  if (o.keep_aspect_ratio) {
    const double s = std::min(static_cast<double>(o.out_width) / rgb.cols,
                              static_cast<double>(o.out_height) / rgb.rows);
    new_w = std::max(1, static_cast<int>(std::lround(rgb.cols * s)));
    new_h = std::max(1, static_cast<int>(std::lround(rgb.rows * s)));
  }
  cv::Mat fl, wide, small;
  rgb.convertTo(fl, CV_32FC3);
  // Separable filters: one axis at a time, so each gets its own method.
  cv::resize(fl, wide, cv::Size(new_w, rgb.rows), 0, 0,
             interpolation_for(o.method, rgb.cols, new_w));
  cv::resize(wide, small, cv::Size(new_w, new_h), 0, 0,
             interpolation_for(o.method, rgb.rows, new_h));
  const int C = o.channels();
  std::vector<float> out(static_cast<std::size_t>(o.out_width) * o.out_height * C);
  const int off_x = (o.out_width - new_w) / 2, off_y = (o.out_height - new_h) / 2;
  for (int y = 0; y < o.out_height; ++y)
    for (int x = 0; x < o.out_width; ++x) {
      const bool inside = x >= off_x && x < off_x + new_w && y >= off_y && y < off_y + new_h;
      const cv::Vec3f p =
          inside ? small.at<cv::Vec3f>(y - off_y, x - off_x) : cv::Vec3f::all(o.pad_value);
      float* d = &out[(static_cast<std::size_t>(y) * o.out_width + x) * C];
      if (o.order == ChannelOrder::kGray) {
        d[0] = (0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2]) * o.alpha[0] + o.beta[0];
        continue;
      }
      for (int c = 0; c < 3; ++c)
        d[c] = (o.order == ChannelOrder::kRGB ? p[c] : p[2 - c]) * o.alpha[c] + o.beta[c];
    }
  return out;
}

OwnedFrame make_gray16(int width, int height, const std::function<int(int, int)>& value,
                       int stride) {
  if (stride == 0) stride = 2 * width + 6;
  OwnedFrame f;
  f.bytes.assign(static_cast<std::size_t>(stride) * height + 64, 0xCD);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const int v = value(x, y);
      f.bytes[y * stride + 2 * x] = static_cast<std::uint8_t>(v & 0xFF);
      f.bytes[y * stride + 2 * x + 1] = static_cast<std::uint8_t>(v >> 8);
    }
  f.view.format = PixelFormat::kGRAY16_LE;
  f.view.width = width, f.view.height = height;
  f.view.planes[0] = f.bytes.data();
  f.view.strides[0] = stride;
  return f;
}

}  // namespace torchinfer::test
