// A camera's code reading ("codes" in its config, server/codes_spec.h;
// docs/server.md "Codes"): torchcodes after the camera's tracking (or its
// torchnms), so a tracked part's code is read once and rides on its later
// boxes. The codes read show in GET /streams/{id} and the element's
// counters and the streaming thread's time in it on /metrics.
//
// Threads: frames on the camera's streaming thread; status and figures
// from the main loop.
#pragma once

#include <gst/gst.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/core/metrics_text.h"
#include "server/core/server_config.h"

namespace torchinfer::server {

class CameraCodes {
 public:
  // torchcodes, set from the spec, added to `pipeline` and appended to
  // `chain` (not yet linked); null with `why` set when it cannot be made.
  static std::unique_ptr<CameraCodes> attach(const StreamSpec& spec, GstElement* pipeline,
                                             std::vector<GstElement*>& chain, std::string* why);
  explicit CameraCodes(GstElement* codes);
  ~CameraCodes();
  CameraCodes(const CameraCodes&) = delete;
  CameraCodes& operator=(const CameraCodes&) = delete;

  // "codes": the element's counters, the codes of the latest frame that
  // had any, and the last distinct codes read.
  void status(nlohmann::json& j) const;
  void figures(StreamFigures& f) const;

 private:
  static GstPadProbeReturn on_in(GstPad* pad, GstPadProbeInfo* info, gpointer user);
  static GstPadProbeReturn on_out(GstPad* pad, GstPadProbeInfo* info, gpointer user);
  void collect(GstBuffer* buf);

  GstElement* codes_;            // a reference of ours
  std::int64_t entered_ns_ = 0;  // the streaming thread's
  std::atomic<std::uint64_t> busy_ns_{0};
  mutable std::mutex mu_;
  nlohmann::json latest_ = nlohmann::json::array();  // the latest frame's codes
  std::deque<nlohmann::json> recent_;                // distinct codes, newest last
};

}  // namespace torchinfer::server
