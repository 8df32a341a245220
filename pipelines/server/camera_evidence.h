// A camera's evidence (docs/server.md, "Evidence"): the EvidenceRecorder's
// ring branch on a tee of the camera's raw video, and a probe after
// torchtrack that records an event for each new track of the camera's
// evidence classes (once per track). Its store also answers the REST
// endpoints (GET /streams/{id}/events, .../events/{n}/<file>).
//
// Held by shared_ptr: the asynchronous finish at the end of a stream may
// run after the camera is gone.
#pragma once

#include <gst/gst.h>

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "evidence/core/evidence_store.h"
#include "evidence/evidence_recorder.h"
#include "server/core/evidence_spec.h"
#include "server/core/metrics_text.h"

namespace torchinfer::server {

class CameraEvidence : public std::enable_shared_from_this<CameraEvidence> {
 public:
  CameraEvidence(std::string id, EvidenceSpec spec, std::shared_ptr<evidence::EvidenceStore> store);
  ~CameraEvidence();

  // The ring's branch from `tee`, the probe on the src pad of `after` (the
  // camera's torchanalytics, after torchtrack). False + why.
  bool attach(GstElement* pipeline, GstElement* tee, GstElement* after, std::string* why);
  // End of stream: pending clips written from what the ring holds. Off the
  // calling thread (it waits for the writer); idempotent.
  void finish_async(GstElement* pipeline);
  // After the pipeline went to NULL: waits for every file.
  void finish();

  void fill(StreamFigures& f) const;
  nlohmann::json status() const;
  const evidence::EvidenceStore& store() const { return *store_; }
  // One event as the REST API shows it: the record and its file URLs.
  nlohmann::json event_json(const evidence::EventRecord& e) const;

 private:
  static GstPadProbeReturn on_buffer(GstPad* pad, GstPadProbeInfo* info, gpointer self);
  void look(GstPad* pad, GstBuffer* buf);
  void look_crossings(GstPad* pad, GstBuffer* buf);
  void record(GstPad* pad, GstBuffer* buf, evidence::EventRecord e, const cv::Rect& box);
  // On the main loop once a second: a WARNING in the log when files were
  // lost since the last look (never silent, at most one line a second).
  void watch_losses();
  void warn_if_lost();

  const std::string id_;
  const EvidenceSpec spec_;
  std::shared_ptr<evidence::EvidenceStore> store_;
  std::unique_ptr<EvidenceRecorder> recorder_;
  std::mutex mu_;            // recorded_, finished_
  std::set<gint> recorded_;  // track ids with an event (the newest 4096)
  bool finished_ = false;
  std::uint64_t failures_told_ = 0;  // main loop only
};

}  // namespace torchinfer::server
