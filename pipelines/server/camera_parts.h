// A camera's part verdicts and their way to the PLC ("parts" and "plc" in
// its config, server/line_spec.h; docs/server.md "Parts and the PLC"). The
// same code as torchinfer-qa-line's: the frame's parts read off the
// metadata (qa_frames.h), one verdict per track (parts/core/part_verdicts.h), each
// decided part to the belt scheduler and the Modbus output (qa_plc.h).
//
//   ... ! torchtrack ! torchanalytics [! torchinfer name=classify (roi-list
//   on the part classes)] ! (probe: parts, verdicts, PLC) ! ...
//
// Threads: frames on the camera's streaming thread (never waiting on the
// network: the output has its own thread); status and figures from the
// main loop; finish() on the server's stopper thread, where waiting for
// the belt is allowed.
#pragma once

#include <gst/gst.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "parts/core/part_verdicts.h"
#include "parts/qa_frames.h"
#include "parts/qa_plc.h"
#include "server/core/metrics_text.h"
#include "server/core/server_config.h"

namespace torchinfer::server {

class CameraParts {
 public:
  // Makes the camera's parts: the classifier (`classifier`, when the spec
  // names one) added to `pipeline` and appended to `chain` (not yet
  // linked), the frames watched where the chain then ends, the PLC output
  // started. Null with `why` set when it cannot.
  static std::unique_ptr<CameraParts> attach(const StreamSpec& spec, const ModelSpec& detector,
                                             const ModelSpec& classifier, GstElement* pipeline,
                                             std::vector<GstElement*>& chain, std::string* why);
  CameraParts(const StreamSpec& spec, const ModelSpec& detector, GstElement* pipeline);
  ~CameraParts();
  CameraParts(const CameraParts&) = delete;
  CameraParts& operator=(const CameraParts&) = delete;

  // The camera stops (after its pipeline did): every open part is decided
  // and, with a PLC, the parts still between the camera and the ejector get
  // their pulses on schedule before this returns (bounded: qa_plc.h). Once.
  void finish();
  // {"parts": {...}, "plc": {...}} members for GET /streams/{id}.
  void status(nlohmann::json& j) const;
  void figures(StreamFigures& f) const;

 private:
  static GstPadProbeReturn on_frame(GstPad* pad, GstPadProbeInfo* info, gpointer user);
  void frame(GstBuffer* buf);
  void flush();
  void report(const std::vector<QaDecision>& decisions);  // under mu_
  std::int64_t frame_time(GstBuffer* buf) const;

  const std::string id_;
  const bool live_;       // not a file: frames carry their capture time
  GstElement* pipeline_;  // the camera's (its base time), not ours
  qa::ReadRules read_;
  mutable std::mutex mu_;  // everything below
  PartVerdicts verdicts_;
  std::unique_ptr<qa::QaPlc> plc_;
  std::int64_t frames_ = 0;
  std::map<std::string, std::uint64_t> decided_;  // by verdict
  std::deque<nlohmann::json> recent_;             // the latest decisions, newest last
  bool flushed_ = false, finished_ = false;
  nlohmann::json plc_summary_;  // finish()'s, once done
};

}  // namespace torchinfer::server
