// The settings of a machine-vision camera (an aravis:// stream): which
// camera, its pixel format and the GenICam features the server sets before
// acquisition. Checked like every other field of the configuration (hostile
// input, errors naming the field); applied by pipelines/server/aravis_source.
// No Aravis or GStreamer here.
#pragma once

#include <optional>
#include <string>

namespace torchinfer::server {

enum class TriggerMode {
  kFreeRun,   // the camera sends at its own frame rate
  kSoftware,  // one frame per POST /streams/{id}/trigger (TriggerSoftware)
  kHardware,  // one frame per edge on an input line (TriggerSource=<line>)
};
const char* to_string(TriggerMode m);

// A GenICam pixel format (PixelFormat feature) the analysis takes as it
// comes off the wire, and the GStreamer caps of those bytes.
struct PixelFormatInfo {
  const char* genicam;  // "BayerRG8"
  const char* caps;     // "video/x-bayer,format=rggb"
  int bits;             // significant bits per sample (torchinfer's input-bits for GRAY16_LE)
};
// Null for a format torchinfer cannot take without a conversion.
const PixelFormatInfo* find_pixel_format(const std::string& genicam);
// "BayerBG8, BayerGB8, ..." for messages and docs.
std::string pixel_format_names();

struct CameraSettings {
  // As arv-tool-0.8 lists it ("Basler-21234567", "Aravis-Fake-GV01") or
  // the camera's IP address.
  std::string name;
  // Empty: the camera's current format (refused at start if not a known one).
  std::string pixel_format;
  std::optional<double> exposure_us, gain_db;
  // GVSP packet size in bytes: 1500 fits any Ethernet; jumbo frames
  // (8192-9000) need every NIC and switch on the path to allow them.
  int packet_size = 1500;
  TriggerMode trigger = TriggerMode::kFreeRun;
  std::string trigger_line;  // hardware only: "Line1", ...
};

// GenICam feature values: letters, digits and '_' only (they are passed to
// the camera as enumeration entries; nothing else is accepted).
bool valid_feature_value(const std::string& v);

}  // namespace torchinfer::server
