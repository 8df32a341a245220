#include "qa/qa_scores.h"

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
    if (b.id >= 0) tracks_.back().push_back({b.id, b.label, b.box});
  if (n >= truth_.frames.size()) return;
  // Greedy, most confident first, VOC style: a detection of an object marked
  // ignore (mostly out of view) counts for nothing.
  const auto& truth = truth_.frames[n];
  std::vector<bool> used(truth.size(), false);
  for (const ScoredBox& d : f.boxes) {
    int best = -1;
    double best_iou = 0.5;
    for (std::size_t t = 0; t < truth.size(); ++t) {
      const double v = iou(d.box, truth[t].box);
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

double auroc(const std::vector<double>& scores, const std::vector<bool>& positive) {
  if (scores.size() != positive.size()) return -1;
  double pairs = 0, right = 0;
  for (std::size_t i = 0; i < scores.size(); ++i)
    for (std::size_t j = 0; j < scores.size(); ++j) {
      if (!positive[i] || positive[j]) continue;
      pairs++;
      right += scores[i] > scores[j] ? 1 : scores[i] == scores[j] ? 0.5 : 0;
    }
  return pairs > 0 ? right / pairs : -1;
}

namespace {

// The median view's map peak lies in a truth defect box of the part there.
bool peak_in_defect(const TruthClip& truth, int part, const std::set<std::string>& part_labels,
                    const QaAnomalyVerdict& a) {
  const QaAnomalyView& v = a.view;
  if (a.view_frame < 0 || a.view_frame >= static_cast<std::int64_t>(truth.frames.size()) ||
      v.peak_x < 0)
    return false;
  for (const TruthBox& b : truth.frames[a.view_frame])
    if (b.id == part && !part_labels.count(b.label) && v.peak_x >= b.box.x_min &&
        v.peak_x <= b.box.x_max && v.peak_y >= b.box.y_min && v.peak_y <= b.box.y_max)
      return true;
  return false;
}

}  // namespace

nlohmann::ordered_json anomaly_figures(const TruthClip& truth,
                                       const std::map<int, long long>& track_of_part,
                                       const std::map<long long, QaAnomalyVerdict>& anomaly) {
  std::set<std::string> part_labels;
  for (const TruthPart& p : truth.parts) part_labels.insert(p.label);
  std::vector<double> part_scores, view_scores;
  std::vector<bool> part_bad, view_bad;
  int correct = 0, defective = 0, peaks_inside = 0;
  for (const TruthPart& p : truth.parts) {
    const auto t = track_of_part.find(p.id);
    const auto a = t == track_of_part.end() ? anomaly.end() : anomaly.find(t->second);
    if (a == anomaly.end()) continue;
    part_scores.push_back(a->second.score);
    part_bad.push_back(p.defective);
    for (double v : a->second.view_scores) {
      view_scores.push_back(v);
      view_bad.push_back(p.defective);
    }
    correct += a->second.anomalous == p.defective;
    if (!p.defective) continue;
    defective++;
    peaks_inside += peak_in_defect(truth, p.id, part_labels, a->second);
  }
  const int parts = static_cast<int>(part_scores.size());
  return {
      {"parts", parts},
      {"views", view_scores.size()},
      {"part_auroc", auroc(part_scores, part_bad)},
      {"view_auroc", auroc(view_scores, view_bad)},
      {"correct", correct},
      {"accuracy", parts ? static_cast<double>(correct) / parts : 0.0},
      {"defective_parts", defective},
      {"peak_in_defect", peaks_inside},
      {"peak_in_defect_share", defective ? static_cast<double>(peaks_inside) / defective : 0.0}};
}

nlohmann::ordered_json Scorer::finish(const std::map<long long, std::string>& verdicts,
                                      const std::set<int>& duplicates,
                                      std::vector<std::string>* wrong,
                                      const std::map<long long, QaAnomalyVerdict>& anomaly) {
  tracks_.resize(truth_.frames.size());
  MotOptions o;
  o.labels = part_classes_;
  const MotResult all = evaluate_mot(truth_.frames, tracks_, o);
  auto parts = tracks_;
  for (auto& f : parts)
    f.erase(std::remove_if(f.begin(), f.end(),
                           [&](const TrackedBox& b) { return duplicates.count(int(b.id)) > 0; }),
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
  if (!anomaly.empty()) j["anomaly"] = anomaly_figures(truth_, v.track_of_part, anomaly);
  return j;
}

}  // namespace torchinfer::qa
