#include "evidence/core/jpeg_snapshot.h"

#include <algorithm>
#include <cstring>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/error.h"

namespace torchinfer::server {

bool raw_format_from_name(const std::string& name, RawFormat* out) {
  static const std::pair<const char*, RawFormat> kNames[] = {{"YUY2", RawFormat::kYUY2},
                                                             {"I420", RawFormat::kI420},
                                                             {"NV12", RawFormat::kNV12},
                                                             {"BGR", RawFormat::kBGR},
                                                             {"RGB", RawFormat::kRGB},
                                                             {"BGRx", RawFormat::kBGRx},
                                                             {"RGBx", RawFormat::kRGBx},
                                                             {"BGRA", RawFormat::kBGRx},
                                                             {"RGBA", RawFormat::kRGBx},
                                                             {"GRAY8", RawFormat::kGRAY8},
                                                             {"GRAY16_LE", RawFormat::kGRAY16LE},
                                                             {"bggr", RawFormat::kBayerBGGR},
                                                             {"gbrg", RawFormat::kBayerGBRG},
                                                             {"grbg", RawFormat::kBayerGRBG},
                                                             {"rggb", RawFormat::kBayerRGGB}};
  for (const auto& [n, f] : kNames)
    if (name == n) {
      *out = f;
      return true;
    }
  return false;
}

namespace {

// Rows of a plane into a contiguous block (OpenCV's 4:2:0 conversions want
// the planes back to back without padding).
void copy_rows(std::uint8_t* dst, const std::uint8_t* src, int stride, int row_bytes, int rows) {
  for (int y = 0; y < rows; ++y) std::memcpy(dst + y * row_bytes, src + y * stride, row_bytes);
}

// OpenCV names a Bayer pattern by its second row's second and third pixels,
// GStreamer by the top-left 2x2 cell: GStreamer's bggr is OpenCV's RG.
int bayer_code(RawFormat f) {
  switch (f) {
    case RawFormat::kBayerBGGR:
      return cv::COLOR_BayerRG2BGR;
    case RawFormat::kBayerGBRG:
      return cv::COLOR_BayerGR2BGR;
    case RawFormat::kBayerGRBG:
      return cv::COLOR_BayerGB2BGR;
    default:
      return cv::COLOR_BayerBG2BGR;  // rggb
  }
}

void draw_boxes(cv::Mat& bgr, const std::vector<SnapshotBox>& boxes) {
  const int thick = std::max(1, bgr.cols / 400);
  for (const auto& b : boxes) {
    const cv::Rect r(b.x, b.y, b.width, b.height);
    const cv::Scalar colour = b.alarm ? cv::Scalar(0, 0, 255) : cv::Scalar(0, 255, 0);
    cv::rectangle(bgr, r, colour, thick);
    cv::putText(bgr, b.label, cv::Point(r.x, std::max(r.y - 4, 12)), cv::FONT_HERSHEY_SIMPLEX,
                0.5 * thick, colour, thick);
  }
}

// I420 or NV12 packed into the one buffer cv::cvtColor takes.
void planar_yuv_to_bgr(const RawImage& img, int w, int h, cv::Mat& bgr) {
  const bool nv12 = img.format == RawFormat::kNV12;
  if (!img.planes[1] || (!nv12 && !img.planes[2]))
    throw Error(ErrorKind::kInvalidArgument, "snapshot: missing chroma planes");
  cv::Mat packed(h * 3 / 2, w, CV_8UC1);
  std::uint8_t* d = packed.data;
  copy_rows(d, img.planes[0], img.strides[0], w, h);
  if (nv12) {
    copy_rows(d + w * h, img.planes[1], img.strides[1], w, h / 2);
  } else {
    copy_rows(d + w * h, img.planes[1], img.strides[1], w / 2, h / 2);
    copy_rows(d + w * h + (w / 2) * (h / 2), img.planes[2], img.strides[2], w / 2, h / 2);
  }
  cv::cvtColor(packed, bgr, nv12 ? cv::COLOR_YUV2BGR_NV12 : cv::COLOR_YUV2BGR_I420);
}

// 16-bit grey scaled from its significant bits to 8.
void gray16_to_bgr(const RawImage& img, int w, int h, cv::Mat& bgr) {
  if (img.bits < 8 || img.bits > 16)
    throw Error(ErrorKind::kInvalidArgument, "snapshot: bits must be 8 to 16");
  cv::Mat grey;
  auto* p0 = const_cast<std::uint8_t*>(img.planes[0]);
  cv::Mat(h, w, CV_16UC1, p0, img.strides[0]).convertTo(grey, CV_8U, 255.0 / ((1 << img.bits) - 1));
  cv::cvtColor(grey, bgr, cv::COLOR_GRAY2BGR);
}

// The frame as BGR: a view of the camera's own buffer for BGR, else a
// conversion.
cv::Mat to_bgr(const RawImage& img) {
  if (img.width <= 0 || img.height <= 0 || !img.planes[0] || img.strides[0] <= 0)
    throw Error(ErrorKind::kInvalidArgument, "snapshot: empty frame");
  const bool subsampled = img.format == RawFormat::kYUY2 || img.format == RawFormat::kI420 ||
                          img.format == RawFormat::kNV12;
  const int w = subsampled ? img.width & ~1 : img.width;
  const int h = subsampled ? img.height & ~1 : img.height;
  if (w == 0 || h == 0) throw Error(ErrorKind::kInvalidArgument, "snapshot: frame too small");
  cv::Mat bgr;
  auto* p0 = const_cast<std::uint8_t*>(img.planes[0]);
  switch (img.format) {
    case RawFormat::kYUY2:
      cv::cvtColor(cv::Mat(h, w, CV_8UC2, p0, img.strides[0]), bgr, cv::COLOR_YUV2BGR_YUY2);
      break;
    case RawFormat::kI420:
    case RawFormat::kNV12:
      planar_yuv_to_bgr(img, w, h, bgr);
      break;
    case RawFormat::kBGR:
      bgr = cv::Mat(h, w, CV_8UC3, p0, img.strides[0]);
      break;
    case RawFormat::kRGB:
      cv::cvtColor(cv::Mat(h, w, CV_8UC3, p0, img.strides[0]), bgr, cv::COLOR_RGB2BGR);
      break;
    case RawFormat::kBGRx:
      cv::cvtColor(cv::Mat(h, w, CV_8UC4, p0, img.strides[0]), bgr, cv::COLOR_BGRA2BGR);
      break;
    case RawFormat::kRGBx:
      cv::cvtColor(cv::Mat(h, w, CV_8UC4, p0, img.strides[0]), bgr, cv::COLOR_RGBA2BGR);
      break;
    case RawFormat::kGRAY8:
      cv::cvtColor(cv::Mat(h, w, CV_8UC1, p0, img.strides[0]), bgr, cv::COLOR_GRAY2BGR);
      break;
    case RawFormat::kGRAY16LE:
      gray16_to_bgr(img, w, h, bgr);
      break;
    case RawFormat::kBayerBGGR:
    case RawFormat::kBayerGBRG:
    case RawFormat::kBayerGRBG:
    case RawFormat::kBayerRGGB:
      cv::cvtColor(cv::Mat(h, w, CV_8UC1, p0, img.strides[0]), bgr, bayer_code(img.format));
      break;
  }
  return bgr;
}

std::vector<std::uint8_t> jpeg_of(const cv::Mat& bgr, int quality) {
  std::vector<std::uint8_t> out;
  if (!cv::imencode(".jpg", bgr, out, {cv::IMWRITE_JPEG_QUALITY, quality}))
    throw Error(ErrorKind::kRuntime, "snapshot: JPEG encoding failed");
  return out;
}

}  // namespace

std::vector<std::uint8_t> encode_jpeg(const RawImage& img, int quality) {
  cv::Mat bgr = to_bgr(img);
  const auto* p0 = img.planes[0];
  if (!img.boxes.empty()) {
    if (bgr.data == p0) bgr = bgr.clone();  // never draw into the camera's frame
    draw_boxes(bgr, img.boxes);
  }
  return jpeg_of(bgr, quality);
}

std::vector<std::uint8_t> encode_jpeg_region(const RawImage& img, const SnapshotBox& region,
                                             int quality) {
  const cv::Mat bgr = to_bgr(img);
  const cv::Rect r = cv::Rect(region.x, region.y, region.width, region.height) &
                     cv::Rect(0, 0, bgr.cols, bgr.rows);
  if (r.empty()) throw Error(ErrorKind::kInvalidArgument, "crop: the box is outside the frame");
  return jpeg_of(bgr(r).clone(), quality);
}

}  // namespace torchinfer::server
