#include "server/jpeg_snapshot.h"

#include <cstring>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "common/error.h"

namespace torchinfer::server {

bool raw_format_from_name(const std::string& name, RawFormat* out) {
  static const std::pair<const char*, RawFormat> kNames[] = {
      {"YUY2", RawFormat::kYUY2}, {"I420", RawFormat::kI420}, {"NV12", RawFormat::kNV12},
      {"BGR", RawFormat::kBGR},   {"RGB", RawFormat::kRGB},   {"BGRx", RawFormat::kBGRx},
      {"RGBx", RawFormat::kRGBx}, {"BGRA", RawFormat::kBGRx}, {"RGBA", RawFormat::kRGBx}};
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

}  // namespace

std::vector<std::uint8_t> encode_jpeg(const RawImage& img, int quality) {
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
    case RawFormat::kNV12: {
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
      break;
    }
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
  }
  std::vector<std::uint8_t> out;
  if (!cv::imencode(".jpg", bgr, out, {cv::IMWRITE_JPEG_QUALITY, quality}))
    throw Error(ErrorKind::kRuntime, "snapshot: JPEG encoding failed");
  return out;
}

}  // namespace torchinfer::server
