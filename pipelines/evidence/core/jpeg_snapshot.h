// A camera's latest annotated frame as JPEG, encoded only when a client asks
// (GET /streams/{id}/snapshot.jpg): the server keeps the raw frame, so idle
// cameras cost no encoding. No GStreamer types: the glue hands the planes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torchinfer::server {

// Machine-vision cameras' frames (Bayer, 8/16-bit mono) are not drawn on
// in the pipeline (no full-resolution conversion there): they are
// demosaicked here, at the snapshot rate, and their boxes drawn here.
enum class RawFormat {
  kYUY2,
  kI420,
  kNV12,
  kBGR,
  kRGB,
  kBGRx,
  kRGBx,
  kGRAY8,
  kGRAY16LE,
  kBayerBGGR,
  kBayerGBRG,
  kBayerGRBG,
  kBayerRGGB
};

// A detection to draw, in frame pixels.
struct SnapshotBox {
  int x = 0, y = 0, width = 0, height = 0;
  std::string label;
  bool alarm = false;  // drawn red (an evidence reject), else green
};

struct RawImage {
  RawFormat format = RawFormat::kI420;
  int width = 0, height = 0;
  const std::uint8_t* planes[3] = {nullptr, nullptr, nullptr};
  int strides[3] = {0, 0, 0};
  int bits = 16;  // kGRAY16LE: significant bits per sample (2^bits - 1 is white)
  std::vector<SnapshotBox> boxes;
};

// Throws Error(kInvalidArgument) for a size of 0 or missing planes. Odd
// sizes of 4:2:0/4:2:2 frames lose their last column/row.
std::vector<std::uint8_t> encode_jpeg(const RawImage& img, int quality = 80);

// The part of the frame inside `region` (cut to the frame; img.boxes not
// drawn), e.g. an event's crop. Throws Error(kInvalidArgument) when no pixel
// of the region is in the frame.
std::vector<std::uint8_t> encode_jpeg_region(const RawImage& img, const SnapshotBox& region,
                                             int quality = 80);

// Parses a GStreamer video format name (the caps' "format") into a
// RawFormat, or a video/x-bayer order ("bggr", "gbrg", "grbg", "rggb");
// false for one the encoder does not take.
bool raw_format_from_name(const std::string& name, RawFormat* out);

}  // namespace torchinfer::server
