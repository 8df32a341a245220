// A camera's latest annotated frame as JPEG, encoded only when a client asks
// (GET /streams/{id}/snapshot.jpg): the server keeps the raw frame, so idle
// cameras cost no encoding. No GStreamer types: the glue hands the planes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchinfer::server {

enum class RawFormat { kYUY2, kI420, kNV12, kBGR, kRGB, kBGRx, kRGBx };

struct RawImage {
  RawFormat format = RawFormat::kI420;
  int width = 0, height = 0;
  const std::uint8_t* planes[3] = {nullptr, nullptr, nullptr};
  int strides[3] = {0, 0, 0};
};

// Throws Error(kInvalidArgument) for a size of 0 or missing planes. Odd
// sizes of 4:2:0/4:2:2 frames lose their last column/row.
std::vector<std::uint8_t> encode_jpeg(const RawImage& img, int quality = 80);

// Parses a GStreamer video format name (the caps' "format") into a
// RawFormat; false for one the encoder does not take.
bool raw_format_from_name(const std::string& name, RawFormat* out);

}  // namespace torchinfer::server
