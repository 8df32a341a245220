// Multi-object tracking scores against ground truth: CLEAR-MOT (MOTA, MOTP,
// id switches) and the identity scores IDF1/IDP/IDR, for the demos that
// print how well a tracker followed the parts of a clip with known truth.
//
// Definitions (those of py-motmetrics and the MOT benchmarks):
// - A truth box and a track box can match when IoU >= min_iou. Per frame, a
//   truth object still matched (IoU >= min_iou) to the track it was matched
//   to last keeps it (CLEAR-MOT's correspondence rule); the rest are matched
//   by the Hungarian method, most matches first, then highest total IoU.
// - Id switch: a truth object matched to a different track than the last
//   time it was matched. Misses: truth boxes without a match; false
//   positives: track boxes without one.
//   MOTA = 1 - (misses + false positives + id switches) / truth boxes.
//   MOTP = mean IoU of the matched pairs (1 = perfect; py-motmetrics reports
//   1 - this).
// - IDF1: one global one-to-one assignment of truth ids to track ids that
//   maximises the frames in which the pair overlaps with IoU >= min_iou
//   (IDTP); IDF1 = 2 IDTP / (truth boxes + track boxes).
// - Truth boxes marked ignore (mostly out of view) count nowhere: each frame,
//   the track boxes that the Hungarian method pairs with them (IoU >=
//   min_iou, matched over all truth boxes at once) are removed before
//   scoring, like MOT17's distractors, so a tracker is neither rewarded nor
//   punished there.
// - `labels`, when not empty, keeps only boxes with those labels on both
//   sides (e.g. the part classes, leaving out the defects inside parts);
//   matching itself is class-agnostic, as the QA tracker's is.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/box.h"

namespace torchinfer {

struct TruthBox {
  int id = 0;  // the physical object
  std::string label;
  Box box;
  bool ignore = false;
};

struct TrackedBox {
  long long id = 0;  // the tracker's id
  std::string label;
  Box box;
};

struct MotOptions {
  double min_iou = 0.5;
  std::set<std::string> labels;  // empty: every label
};

struct MotResult {
  int frames = 0;
  int truth_boxes = 0;  // not ignored
  int track_boxes = 0;  // left after removing those on ignored truth
  int matches = 0, misses = 0, false_positives = 0, id_switches = 0;
  double mota = 0, motp = 0;  // motp: 0 when nothing matched
  int idtp = 0, idfp = 0, idfn = 0;
  double idf1 = 0, idp = 0, idr = 0;
  int truth_ids = 0;                        // distinct truth ids with a box not ignored
  int track_ids = 0;                        // distinct track ids with a box left after removal
  int count_error = 0;                      // track_ids - truth_ids
  std::map<long long, int> track_to_truth;  // the IDF1 assignment
  std::map<long long, int> track_majority;  // the truth id each track matched most often
  std::map<long long, int> track_frames;    // frames each track id is scored in
};

// truth[f] and tracks[f] are the boxes of frame f; both must have the same
// number of frames (Error kInvalidArgument otherwise, or for min_iou outside
// (0, 1]).
MotResult evaluate_mot(const std::vector<std::vector<TruthBox>>& truth,
                       const std::vector<std::vector<TrackedBox>>& tracks,
                       const MotOptions& options = {});

}  // namespace torchinfer
