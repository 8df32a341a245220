#include "qa_scores.h"

#include <glib.h>
#include <glib/gstdio.h>

#include <algorithm>
#include <utility>

namespace torchinfer::qa {

Scorer::Scorer(const std::string& truth_path, std::set<std::string> part_classes)
    : path_(truth_path),
      truth_(read_truth_clip(truth_path)),
      part_classes_(std::move(part_classes)) {}

namespace {

bool same_file(const std::string& a, const std::string& b) {
  GStatBuf sa, sb;
  return g_stat(a.c_str(), &sa) == 0 && g_stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

std::string base_name(const std::string& path) {
  gchar* b = g_path_get_basename(path.c_str());
  std::string s = b;
  g_free(b);
  return s;
}

}  // namespace

std::string Scorer::other_clip(const std::string& clip) const {
  gchar* dir = g_path_get_dirname(path_.c_str());
  gchar* video = g_build_filename(dir, truth_.video.c_str(), nullptr);
  const std::string resolved = video;
  g_free(dir);
  g_free(video);
  // A copy of the clip under its own name is still the clip.
  if (same_file(resolved, clip) || base_name(truth_.video) == base_name(clip)) return {};
  return "truth file '" + path_ + "' is the truth of video '" + truth_.video + "' (" + resolved +
         "), not of the clip '" + clip + "'; give the clip's own truth file";
}

std::string Scorer::other_frame(const FrameResults& f) const {
  const std::size_t n = tracks_.size();
  if (n >= truth_.frames.size())
    return "truth file '" + path_ + "' has " + std::to_string(truth_.num_frames) +
           " frames, the clip has more; give the clip's own truth file";
  if (f.has_detector && (f.frame.width != truth_.width || f.frame.height != truth_.height))
    return "truth file '" + path_ + "' is for " + std::to_string(truth_.width) + "x" +
           std::to_string(truth_.height) + " frames, the clip's are " +
           std::to_string(f.frame.width) + "x" + std::to_string(f.frame.height) +
           "; give the clip's own truth file";
  return {};
}

std::string Scorer::other_length(std::int64_t frames) const {
  if (frames == truth_.num_frames) return {};
  return "the clip ended after " + std::to_string(frames) + " frames, truth file '" + path_ +
         "' has " + std::to_string(truth_.num_frames) + "; give the clip's own truth file";
}

void Scorer::add(const FrameResults& f) {
  const std::size_t n = tracks_.size();
  tracks_.emplace_back();
  for (const ScoredBox& b : f.boxes)
    if (b.id >= 0)
      tracks_.back().push_back({b.id, b.label, {b.box.x0, b.box.y0, b.box.x1, b.box.y1}});
  if (n >= truth_.frames.size()) return;
  // Greedy, most confident first, VOC style: a detection of an object marked
  // ignore (mostly out of view) counts for nothing.
  const auto& truth = truth_.frames[n];
  std::vector<bool> used(truth.size(), false);
  for (const ScoredBox& d : f.boxes) {
    int best = -1;
    double best_iou = 0.5;
    const EvalBox db{d.box.x0, d.box.y0, d.box.x1, d.box.y1};
    for (std::size_t t = 0; t < truth.size(); ++t) {
      const double v = iou(db, truth[t].box);
      if (!used[t] && truth[t].label == d.label && v >= best_iou) {
        best = static_cast<int>(t);
        best_iou = v;
      }
    }
    if (best < 0) {
      false_pos_++;
    } else if (!truth[best].ignore) {
      used[best] = true;
      true_pos_++;
    }
  }
  for (std::size_t t = 0; t < truth.size(); ++t) false_neg_ += !used[t] && !truth[t].ignore;
}

namespace {

nlohmann::ordered_json tracking_json(const MotResult& m) {
  return {{"mota", m.mota},
          {"idf1", m.idf1},
          {"id_switches", m.id_switches},
          {"misses", m.misses},
          {"false_positives", m.false_positives},
          {"truth_boxes", m.truth_boxes},
          {"truth_parts", m.truth_ids},
          {"tracks", m.track_ids},
          {"count_error", m.count_error}};
}

}  // namespace

nlohmann::ordered_json Scorer::finish(const std::map<long long, std::string>& verdicts,
                                      const std::set<int>& duplicates,
                                      std::vector<std::string>* wrong) {
  tracks_.resize(truth_.frames.size());
  MotOptions o;
  o.labels = part_classes_;
  const MotResult all = evaluate_mot(truth_.frames, tracks_, o);
  auto parts = tracks_;
  for (auto& f : parts)
    f.erase(std::remove_if(f.begin(), f.end(),
                           [&](const TrackBox& b) { return duplicates.count(int(b.id)) > 0; }),
            f.end());
  const MotResult mot = evaluate_mot(truth_.frames, parts, o);
  const VerdictScore v = score_verdicts(truth_.parts, verdicts, mot);
  if (wrong) *wrong = v.wrong;
  nlohmann::ordered_json j;
  const int objects = true_pos_ + false_neg_, reported = true_pos_ + false_pos_;
  j["detection"] = {{"recall", objects ? double(true_pos_) / objects : 0.0},
                    {"precision", reported ? double(true_pos_) / reported : 0.0},
                    {"true_positives", true_pos_},
                    {"false_positives", false_pos_},
                    {"false_negatives", false_neg_}};
  j["tracking"] = tracking_json(mot);
  j["tracking_all"] = tracking_json(all);
  j["verdicts"] = {{"accuracy", v.accuracy},
                   {"judged", v.judged},
                   {"correct", v.correct},
                   {"missing", v.missing},
                   {"extra", v.extra}};
  return j;
}

}  // namespace torchinfer::qa
