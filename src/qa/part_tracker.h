// QA-line decisions: follow parts along the belt from frame to frame and
// decide, once per part, pass or reject from the defects seen on it.
//
// Rules (pipelines/README.md has the operator's version):
// - Parts are the detections of a part class with confidence >= part_threshold.
//   Each frame, they are matched to the open tracks greedily, best IoU first,
//   at IoU >= match_iou (class-agnostic: a part misclassified for one frame
//   stays one part; the track's class is the one with the highest summed
//   confidence). An unmatched part opens a new track. Parts do not overlap
//   on a belt, so a part box covered for nested_cover of its area by a more
//   confident one is a partial duplicate (a detector's view of a feature of
//   the part) and is ignored.
// - A part is "whole" in a frame when its box keeps edge_margin pixels from
//   every frame edge. Evidence comes only from frames where it is whole, so a
//   part is judged on frames where the camera sees all of it.
// - A defect (a defect-class detection) belongs to the part box that holds its
//   centre (the one covering most of the defect when several do). Each track
//   keeps the highest confidence per defect class over its whole frames.
// - A track not matched for more than max_missed frames has left: it is
//   closed and decided. At the end of the stream every open track is.
// - Verdict: "incomplete" if never whole (cut by the start or end of the
//   stream, or never fully in the camera's view); else "reject" if any defect
//   class reached defect_threshold, else "pass". Tracks matched in fewer than
//   min_frames frames are dropped as spurious (no decision, counted apart).
//
// Only frames that were inferred should be fed (torchinfer marks reused
// results inferred = FALSE); the tracker counts every frame it is given.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace torchinfer {

struct QaBox {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // frame pixels
};

struct QaDetection {
  std::string label;
  double confidence = 0;
  QaBox box;
};

struct QaRules {
  std::set<std::string> part_classes{"bracket", "washer"};
  std::set<std::string> defect_classes{"scratch", "spot", "missing_hole", "chip"};
  double part_threshold = 0.5;
  double defect_threshold = 0.5;
  double match_iou = 0.3;
  double nested_cover = 0.7;
  int max_missed = 10;
  int min_frames = 3;
  double edge_margin = 2;
};

enum class QaVerdict { kPass, kReject, kIncomplete };
const char* verdict_name(QaVerdict v);

struct QaDecision {
  int part = 0;  // numbered from 0 in the order decided (spurious tracks skipped)
  std::string label;
  QaVerdict verdict = QaVerdict::kIncomplete;
  std::map<std::string, double> max_defect;    // per defect class seen while whole
  std::int64_t first_pts = -1, last_pts = -1;  // ns, -1 = unknown
  std::int64_t first_frame = 0, last_frame = 0;
  int frames_seen = 0, frames_whole = 0;

  // Defect classes at or above the threshold, most confident first.
  std::vector<std::pair<std::string, double>> defects(double threshold) const;
};

struct QaCounts {
  int passed = 0, rejected = 0, incomplete = 0, spurious = 0;
  std::map<std::string, int> rejected_by_defect;  // rejected parts showing each class
};

// Throws std::invalid_argument on rules that cannot work (thresholds outside
// 0..1, a class both part and defect, no part classes, ...).
void validate(const QaRules& rules);

class PartTracker {
 public:
  explicit PartTracker(QaRules rules);

  // One analysed frame: its detections (any order), PTS (ns, -1 unknown),
  // index and size. Returns the decisions of the parts that left.
  std::vector<QaDecision> add_frame(const std::vector<QaDetection>& detections, std::int64_t pts,
                                    std::int64_t frame, int width, int height);
  // End of stream: decides every open track.
  std::vector<QaDecision> flush();

  const QaCounts& counts() const { return counts_; }
  const QaRules& rules() const { return rules_; }

 private:
  struct Track {
    QaDecision d;
    QaBox box;
    int missed = 0;
    std::map<std::string, double> class_votes;
  };
  std::vector<QaDecision> close_if(bool all);
  void decide(Track& t, std::vector<QaDecision>& out);

  QaRules rules_;
  std::vector<Track> tracks_;
  int next_id_ = 0;
  QaCounts counts_;
};

}  // namespace torchinfer
