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
  // Camera optics never produce 1-pixel colour steps; without this, 4:2:2
  // chroma shared across a hard edge creates colours no camera would output.
  if (width >= 3 && height >= 3) cv::GaussianBlur(img, img, cv::Size(3, 3), 0.8);
  return img;
}

namespace {
void rgb_to_yuv601(const cv::Vec3b& p, double& y, double& u, double& v) {
  const double r = p[0], g = p[1], b = p[2];
  y = 16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255.0;
  u = 128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255.0;
  v = 128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255.0;
}
}  // namespace

OwnedFrame make_frame(const cv::Mat& rgb, PixelFormat format, int stride) {
  OwnedFrame f;
  const int w = rgb.cols, h = rgb.rows;
  int bpp = 3, row = 0;
  switch (format) {
    case PixelFormat::kGRAY8:
      bpp = 1;
      break;
    case PixelFormat::kRGB:
    case PixelFormat::kBGR:
      bpp = 3;
      break;
    case PixelFormat::kYUY2:
    case PixelFormat::kUYVY:
      bpp = 2;
      break;
    default:
      bpp = 4;
      break;
  }
  row =
      (format == PixelFormat::kYUY2 || format == PixelFormat::kUYVY) ? ((w + 1) / 2) * 4 : w * bpp;
  if (stride < row) stride = row;
  f.bytes.assign(static_cast<std::size_t>(stride) * h, 0xAB);  // padding holds junk on purpose
  for (int y = 0; y < h; ++y) {
    std::uint8_t* d = f.bytes.data() + static_cast<std::size_t>(y) * stride;
    for (int x = 0; x < w; ++x) {
      const cv::Vec3b p = rgb.at<cv::Vec3b>(y, x);
      switch (format) {
        case PixelFormat::kRGB:
          d[3 * x] = p[0], d[3 * x + 1] = p[1], d[3 * x + 2] = p[2];
          break;
        case PixelFormat::kBGR:
          d[3 * x] = p[2], d[3 * x + 1] = p[1], d[3 * x + 2] = p[0];
          break;
        case PixelFormat::kRGBx:
        case PixelFormat::kRGBA:
          d[4 * x] = p[0], d[4 * x + 1] = p[1], d[4 * x + 2] = p[2], d[4 * x + 3] = 77;
          break;
        case PixelFormat::kBGRx:
        case PixelFormat::kBGRA:
          d[4 * x] = p[2], d[4 * x + 1] = p[1], d[4 * x + 2] = p[0], d[4 * x + 3] = 77;
          break;
        case PixelFormat::kxRGB:
        case PixelFormat::kARGB:
          d[4 * x] = 77, d[4 * x + 1] = p[0], d[4 * x + 2] = p[1], d[4 * x + 3] = p[2];
          break;
        case PixelFormat::kxBGR:
        case PixelFormat::kABGR:
          d[4 * x] = 77, d[4 * x + 1] = p[2], d[4 * x + 2] = p[1], d[4 * x + 3] = p[0];
          break;
        case PixelFormat::kGRAY8:
          d[x] = cv::saturate_cast<uchar>(0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2]);
          break;
        case PixelFormat::kYUY2:
        case PixelFormat::kUYVY: {
          if (x % 2) break;
          const cv::Vec3b q = rgb.at<cv::Vec3b>(y, std::min(x + 1, w - 1));
          double y0, u0, v0, y1, u1, v1;
          rgb_to_yuv601(p, y0, u0, v0);
          rgb_to_yuv601(q, y1, u1, v1);
          const uchar Y0 = cv::saturate_cast<uchar>(y0), Y1 = cv::saturate_cast<uchar>(y1);
          const uchar U = cv::saturate_cast<uchar>((u0 + u1) / 2),
                      V = cv::saturate_cast<uchar>((v0 + v1) / 2);
          std::uint8_t* o = d + 2 * x;
          if (format == PixelFormat::kYUY2)
            o[0] = Y0, o[1] = U, o[2] = Y1, o[3] = V;
          else
            o[0] = U, o[1] = Y0, o[2] = V, o[3] = Y1;
          break;
        }
      }
    }
  }
  f.view.format = format;
  f.view.width = w;
  f.view.height = h;
  f.view.planes[0] = f.bytes.data();
  f.view.strides[0] = stride;
  return f;
}

std::vector<float> reference_preprocess(const OwnedFrame& f, int out_w, int out_h,
                                        int interpolation, bool rgb_order, const float alpha[3],
                                        const float beta[3]) {
  const FrameView& v = f.view;
  cv::Mat rgb;
  auto* data = const_cast<std::uint8_t*>(v.planes[0]);
  switch (v.format) {
    case PixelFormat::kRGB:
      rgb = cv::Mat(v.height, v.width, CV_8UC3, data, v.strides[0]).clone();
      break;
    case PixelFormat::kBGR:
      cv::cvtColor(cv::Mat(v.height, v.width, CV_8UC3, data, v.strides[0]), rgb, cv::COLOR_BGR2RGB);
      break;
    case PixelFormat::kRGBx:
    case PixelFormat::kRGBA:
      cv::cvtColor(cv::Mat(v.height, v.width, CV_8UC4, data, v.strides[0]), rgb,
                   cv::COLOR_RGBA2RGB);
      break;
    case PixelFormat::kBGRx:
    case PixelFormat::kBGRA:
      cv::cvtColor(cv::Mat(v.height, v.width, CV_8UC4, data, v.strides[0]), rgb,
                   cv::COLOR_BGRA2RGB);
      break;
    case PixelFormat::kGRAY8:
      cv::cvtColor(cv::Mat(v.height, v.width, CV_8UC1, data, v.strides[0]), rgb,
                   cv::COLOR_GRAY2RGB);
      break;
    case PixelFormat::kYUY2:
      cv::cvtColor(cv::Mat(v.height, v.width, CV_8UC2, data, v.strides[0]), rgb,
                   cv::COLOR_YUV2RGB_YUY2);
      break;
    case PixelFormat::kUYVY:
      cv::cvtColor(cv::Mat(v.height, v.width, CV_8UC2, data, v.strides[0]), rgb,
                   cv::COLOR_YUV2RGB_UYVY);
      break;
    default: {
      // xRGB family: drop the leading byte.
      cv::Mat four(v.height, v.width, CV_8UC4, data, v.strides[0]);
      rgb.create(v.height, v.width, CV_8UC3);
      const bool bgr = v.format == PixelFormat::kxBGR || v.format == PixelFormat::kABGR;
      for (int y = 0; y < v.height; ++y)
        for (int x = 0; x < v.width; ++x) {
          const cv::Vec4b p = four.at<cv::Vec4b>(y, x);
          rgb.at<cv::Vec3b>(y, x) = bgr ? cv::Vec3b(p[3], p[2], p[1]) : cv::Vec3b(p[1], p[2], p[3]);
        }
    }
  }
  cv::Mat small;
  cv::resize(rgb, small, cv::Size(out_w, out_h), 0, 0, interpolation);
  std::vector<float> out(static_cast<std::size_t>(out_w) * out_h * 3);
  for (int y = 0; y < out_h; ++y)
    for (int x = 0; x < out_w; ++x) {
      const cv::Vec3b p = small.at<cv::Vec3b>(y, x);
      float* d = &out[(static_cast<std::size_t>(y) * out_w + x) * 3];
      for (int c = 0; c < 3; ++c) d[c] = (rgb_order ? p[c] : p[2 - c]) * alpha[c] + beta[c];
    }
  return out;
}

}  // namespace torchinfer::test
