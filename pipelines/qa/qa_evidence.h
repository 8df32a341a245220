// torchinfer-qa-line --evidence DIR: for every rejected part, a JPEG of the
// frame where the part was best seen, its crop, and a clip from pre_s before
// to post_s after the decision (pipelines/evidence/evidence_recorder.h, on a
// tee after "analysed"). The decision line names the files; losses (disk
// full, folder gone, frames dropped before the encoder) are counted, warned
// about and make the exit status 3 — decisions never wait for evidence.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <opencv2/core/types.hpp>
#include <set>
#include <string>
#include <vector>

#include "evidence/evidence_recorder.h"
#include "parts/core/part_verdicts.h"
#include "qa/qa_options.h"

namespace torchinfer::qa {

// Exit status of a run that decided every part but lost evidence.
constexpr int kEvidenceLostExit = 3;

class QaEvidence {
 public:
  // The store in o.evidence_dir. A folder that cannot be used does not stop
  // the line: a WARNING now, every reject's files counted as lost, exit 3.
  explicit QaEvidence(const Options& o);
  ~QaEvidence();
  QaEvidence(const QaEvidence&) = delete;
  QaEvidence& operator=(const QaEvidence&) = delete;

  // The recorder's branch on the pipeline's evidence tee; false + why.
  bool attach(GstElement* pipeline, std::string* why);
  // Each analysed frame, on the streaming thread: a copy of the frame is
  // kept for every part whose view here is its best so far (whole, judged,
  // the defect seen most confidently, then the part box's confidence).
  void add_frame(GstBuffer* buf, GstPad* pad, const QaFrame& frame, const QaRules& rules);
  // A decision, on the frame last given to add_frame (the clip's event is
  // that frame's running time): for a reject, the event is recorded
  // and the files' paths returned ({"snapshot","crop","clip"}, with the
  // snapshot's frame number and the crop's box in it); otherwise null. The
  // part's kept frame is released either way.
  nlohmann::ordered_json decided(const QaDecision& d);
  // Tracks that ended on a frame, after its decisions: what is still kept
  // for them (a duplicate, never decided) goes.
  void tracks_ended(const std::vector<int>& ids);
  // At the end: pending clips written, the writer drained.
  void finish();
  // The summary's "evidence" object (counters, losses, ring and copy costs).
  nlohmann::ordered_json summary() const;
  // Prints what was lost (a WARNING with counts); true if anything was.
  bool report_losses() const;

 private:
  struct Best {
    GstBuffer* frame = nullptr;  // a copy of nobody's pool
    std::int64_t index = -1;     // its frame number in the stream
    cv::Rect box;
    bool whole = false, judged = false;
    double defect = 0, confidence = 0;
  };
  void release(int part);

  std::string dir_, open_error_;
  double pre_s_ = 2, post_s_ = 1;
  std::unique_ptr<EvidenceRecorder> recorder_;
  GstVideoInfo info_{};
  std::int64_t now_ = -1;  // running time of the last frame given to add_frame
  bool have_info_ = false;
  std::map<int, Best> best_;  // open parts
  std::set<int> decided_;     // decided ids whose track goes on: nothing kept for them
  std::uint64_t rejects_ = 0, unrecorded_ = 0;  // rejects; those with no store to go to
  std::uint64_t copies_ = 0, copy_bytes_ = 0;
  double copy_ms_ = 0;
  std::size_t kept_peak_bytes_ = 0, kept_bytes_ = 0;
};

}  // namespace torchinfer::qa
