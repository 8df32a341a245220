#include "server/core/camera_settings.h"

#include <cctype>

namespace torchinfer::server {

namespace {

// GStreamer's names for the Bayer orders are the top-left 2x2 cell read row
// by row, as GenICam's are; 16-bit mono is little-endian on GigE Vision and
// USB3 Vision. Mono10/Mono12 (unpacked) are 16-bit words too.
constexpr PixelFormatInfo kFormats[] = {
    {"BayerBG8", "video/x-bayer,format=bggr", 8},   {"BayerGB8", "video/x-bayer,format=gbrg", 8},
    {"BayerGR8", "video/x-bayer,format=grbg", 8},   {"BayerRG8", "video/x-bayer,format=rggb", 8},
    {"Mono8", "video/x-raw,format=GRAY8", 8},       {"Mono10", "video/x-raw,format=GRAY16_LE", 10},
    {"Mono12", "video/x-raw,format=GRAY16_LE", 12}, {"Mono16", "video/x-raw,format=GRAY16_LE", 16},
    {"RGB8", "video/x-raw,format=RGB", 8},          {"BGR8", "video/x-raw,format=BGR", 8},
};

}  // namespace

const char* to_string(TriggerMode m) {
  switch (m) {
    case TriggerMode::kFreeRun:
      return "free-run";
    case TriggerMode::kSoftware:
      return "software";
    case TriggerMode::kHardware:
      return "hardware";
  }
  return "unknown";
}

const PixelFormatInfo* find_pixel_format(const std::string& genicam) {
  for (const auto& f : kFormats)
    if (genicam == f.genicam) return &f;
  return nullptr;
}

std::string pixel_format_names() {
  std::string out;
  for (const auto& f : kFormats) out += (out.empty() ? "" : ", ") + std::string(f.genicam);
  return out;
}

bool valid_feature_value(const std::string& v) {
  if (v.empty() || v.size() > 64) return false;
  for (unsigned char c : v)
    if (!std::isalnum(c) && c != '_') return false;
  return true;
}

}  // namespace torchinfer::server
