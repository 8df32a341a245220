#include "track/sort_tracker.h"

#include <algorithm>

#include "common/error.h"
#include "track/assignment.h"

namespace torchinfer {

SortTracker::SortTracker(const TrackerOptions& options) : options_(options) {
  if (options.max_age < 0)
    throw Error(ErrorKind::kInvalidArgument,
                "tracker max-age must be >= 0, got " + std::to_string(options.max_age));
  if (options.min_hits < 1)
    throw Error(ErrorKind::kInvalidArgument,
                "tracker min-hits must be >= 1, got " + std::to_string(options.min_hits));
  if (!(options.iou_threshold > 0 && options.iou_threshold <= 1))
    throw Error(ErrorKind::kInvalidArgument, "tracker iou-threshold must be in (0, 1], got " +
                                                 std::to_string(options.iou_threshold));
}

TrackEvent SortTracker::event(const Track& t) {
  return {t.id, t.label, t.label_id, t.age};
}

// Pairs that cannot match (other label, IoU under the threshold) all cost
// 1, as much as no overlap: the assignment then maximises the summed IoU
// of the pairs that can.
std::vector<int> SortTracker::match(const std::vector<TrackDetection>& detections) const {
  std::vector<int> track_of(detections.size(), -1);
  if (tracks_.empty() || detections.empty()) return track_of;
  std::vector<std::vector<double>> cost(tracks_.size(),
                                        std::vector<double>(detections.size(), 1.0));
  for (std::size_t t = 0; t < tracks_.size(); ++t)
    for (std::size_t d = 0; d < detections.size(); ++d) {
      if (detections[d].label != tracks_[t].label) continue;
      const double overlap = iou(tracks_[t].predicted, detections[d].box);
      if (overlap >= options_.iou_threshold) cost[t][d] = 1.0 - overlap;
    }
  const std::vector<int> assigned = min_cost_assignment(cost);
  for (std::size_t t = 0; t < tracks_.size(); ++t) {
    const int d = assigned[t];
    if (d >= 0 && detections[d].label == tracks_[t].label &&
        iou(tracks_[t].predicted, detections[d].box) >= options_.iou_threshold)
      track_of[d] = static_cast<int>(t);
  }
  return track_of;
}

std::vector<bool> SortTracker::correct_matched(const std::vector<TrackDetection>& detections,
                                               const std::vector<int>& track_of, TrackStep& step) {
  std::vector<bool> matched(tracks_.size(), false);
  for (std::size_t d = 0; d < detections.size(); ++d) {
    if (track_of[d] < 0) continue;
    Track& t = tracks_[track_of[d]];
    matched[track_of[d]] = true;
    t.filter.correct(detections[d].box);
    t.seen = detections[d].box;
    t.label_id = detections[d].label_id;
    t.confidence = detections[d].confidence;
    ++t.hits;
    t.misses = 0;
  }
  // Confirmations in birth order, so ids follow the order objects appeared.
  for (Track& t : tracks_)
    if (t.id == 0 && t.hits >= options_.min_hits) {
      t.id = next_id_++;
      step.started.push_back(event(t));
    }
  return matched;
}

void SortTracker::keep_and_add(const std::vector<TrackDetection>& detections,
                               const std::vector<bool>& matched, std::vector<int>& track_of,
                               TrackStep& step) {
  std::vector<Track> kept;
  kept.reserve(tracks_.size() + detections.size());
  std::vector<int> new_index(tracks_.size(), -1);
  for (std::size_t i = 0; i < tracks_.size(); ++i) {
    Track& t = tracks_[i];
    if (!matched[i]) {
      ++t.misses;
      if (t.id == 0) continue;  // tentative: one miss and it was noise
      if (t.misses > options_.max_age) {
        step.ended.push_back(event(t));
        continue;
      }
    }
    new_index[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(t));
  }
  for (std::size_t d = 0; d < detections.size(); ++d) {
    if (track_of[d] >= 0) {
      track_of[d] = new_index[track_of[d]];
      continue;
    }
    const TrackDetection& det = detections[d];
    Track t{
        BoxFilter(det.box), det.box, det.label, det.label_id, det.confidence, 0, 1, 0, 1, det.box};
    if (t.hits >= options_.min_hits) {
      t.id = next_id_++;
      step.started.push_back(event(t));
    }
    track_of[d] = static_cast<int>(kept.size());
    kept.push_back(std::move(t));
  }
  tracks_ = std::move(kept);
}

TrackStep SortTracker::update(const std::vector<TrackDetection>& detections) {
  for (Track& t : tracks_) {
    t.predicted = t.filter.predict();
    ++t.age;
  }
  std::vector<int> track_of = match(detections);
  TrackStep step;
  const std::vector<bool> matched = correct_matched(detections, track_of, step);
  keep_and_add(detections, matched, track_of, step);
  for (std::size_t d = 0; d < detections.size(); ++d) {
    const Track& t = tracks_[track_of[d]];
    if (t.id == 0) continue;
    step.objects.push_back({t.id, detections[d].box, t.label, t.label_id, t.confidence, false,
                            t.age, static_cast<int>(d)});
  }
  std::sort(step.ended.begin(), step.ended.end(),
            [](const TrackEvent& a, const TrackEvent& b) { return a.id < b.id; });
  return step;
}

TrackStep SortTracker::predict() {
  TrackStep step;
  for (Track& t : tracks_) {
    t.predicted = t.filter.predict();
    ++t.age;
    if (t.id != 0 && t.misses == 0)
      step.objects.push_back(
          {t.id, t.predicted, t.label, t.label_id, t.confidence, true, t.age, -1});
  }
  std::sort(step.objects.begin(), step.objects.end(),
            [](const TrackedObject& a, const TrackedObject& b) { return a.id < b.id; });
  return step;
}

TrackStep SortTracker::hold() {
  TrackStep step;
  for (Track& t : tracks_) {
    ++t.age;
    if (t.id != 0 && t.misses == 0)
      step.objects.push_back({t.id, t.seen, t.label, t.label_id, t.confidence, false, t.age, -1});
  }
  std::sort(step.objects.begin(), step.objects.end(),
            [](const TrackedObject& a, const TrackedObject& b) { return a.id < b.id; });
  return step;
}

std::vector<TrackEvent> SortTracker::finish() {
  std::vector<TrackEvent> ended;
  for (const Track& t : tracks_)
    if (t.id != 0) ended.push_back(event(t));
  tracks_.clear();
  std::sort(ended.begin(), ended.end(),
            [](const TrackEvent& a, const TrackEvent& b) { return a.id < b.id; });
  return ended;
}

}  // namespace torchinfer
