// Multi-object tracking by detection, SORT-style: each track is a
// constant-velocity Kalman filter of its box (box_filter.h); every frame with
// detections, tracks are predicted one frame on and matched to the
// detections of their own label by an optimal assignment on IoU
// (assignment.h); a pair below iou_threshold is no match.
//
// Rules:
// - A track is born tentative from an unmatched detection, with no id. It is
//   confirmed, and takes the next id (1, 2, ... per tracker, never reused),
//   once it has been matched min_hits frames in a row (counting its first);
//   a tentative track that misses a frame is dropped. Ids go to confirmed
//   tracks only, so the ids a user sees have no gaps.
// - A confirmed track survives up to max_age detection frames in a row
//   without a match (an occlusion); it ends on the next miss. predict()
//   frames do not count: they carry no detections, so nothing can be missed.
// - A track keeps the label it was born with: detections of another label
//   never match it.
// - Reported each frame: confirmed tracks that the frame's detections
//   matched (update), or that were matched at the last update (predict), so a
//   coasting track (currently unseen) is not drawn from its guess alone.
// Everything is deterministic: same input, same ids.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "track/box_filter.h"

namespace torchinfer {

struct TrackerOptions {
  int max_age = 30;            // detection frames a confirmed track may be unseen (>= 0)
  int min_hits = 3;            // matched frames in a row to confirm (>= 1)
  double iou_threshold = 0.3;  // least IoU for a match (0 < t <= 1)
};

struct TrackDetection {
  Box box;  // pixels: the Kalman noise values assume them
  std::string label;
  int label_id = -1;
  double confidence = 0;
};

struct TrackedObject {
  int id = 0;
  Box box;  // the detection's box, or the prediction when predicted
  std::string label;
  int label_id = -1;
  double confidence = 0;  // of the latest matched detection
  bool predicted = false;
  int age = 0;         // frames since the track was born, 1 on its first
  int detection = -1;  // index into update()'s detections; -1 when predicted
};

struct TrackEvent {
  int id = 0;
  std::string label;
  int label_id = -1;
  int age = 0;
};

struct TrackStep {
  std::vector<TrackedObject> objects;  // update: in detection order; predict: by id
  std::vector<TrackEvent> started;     // confirmed on this frame, by id
  std::vector<TrackEvent> ended;       // ended on this frame, by id
};

class SortTracker {
 public:
  // Throws Error(kInvalidArgument) for options out of range.
  explicit SortTracker(const TrackerOptions& options = {});

  // A frame with detections.
  TrackStep update(const std::vector<TrackDetection>& detections);
  // A frame without detections (not inferred): every track moves on by its
  // velocity; the boxes reported are the predictions.
  TrackStep predict();
  // A frame on which nothing moved (torchinfer's inference-gate=motion found
  // it still): not a step in time for the tracks. Nothing is predicted,
  // missed or ended; the tracks that predict() would report are reported at
  // the box of their latest detection, not marked predicted (age still
  // counts the frame).
  TrackStep hold();
  // Ends every confirmed track (end of stream); ids keep counting.
  std::vector<TrackEvent> finish();

  std::size_t live_tracks() const { return tracks_.size(); }

 private:
  struct Track {
    BoxFilter filter;
    Box predicted;
    std::string label;
    int label_id = -1;
    double confidence = 0;
    int id = 0;  // 0 while tentative
    int hits = 0;
    int misses = 0;  // detection frames in a row without a match
    int age = 0;
    Box seen;  // the latest matched detection's box (hold())
  };
  static TrackEvent event(const Track& t);
  // The track each detection matched (index into tracks_), or -1.
  std::vector<int> match(const std::vector<TrackDetection>& detections) const;
  // The matched tracks corrected by their detections and confirmed once they
  // have min_hits; returns which tracks matched.
  std::vector<bool> correct_matched(const std::vector<TrackDetection>& detections,
                                    const std::vector<int>& track_of, TrackStep& step);
  // Unmatched tracks aged (and dropped or ended), unmatched detections born
  // as tracks; track_of follows the tracks to their new places.
  void keep_and_add(const std::vector<TrackDetection>& detections, const std::vector<bool>& matched,
                    std::vector<int>& track_of, TrackStep& step);

  TrackerOptions options_;
  std::vector<Track> tracks_;  // in birth order
  int next_id_ = 1;
};

}  // namespace torchinfer
