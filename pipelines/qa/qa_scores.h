// Scores of a QA-line run against the clip's truth (--truth): detection
// recall/precision per frame (IoU >= 0.5, same class, as the detection demo),
// tracking (MOTA, IDF1, id switches, count error: pipelines/eval/mot_metrics.h) on
// the part classes, and per-part verdict accuracy (pipelines/eval/verdict_score.h).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "eval/mot_metrics.h"
#include "eval/truth_file.h"
#include "eval/verdict_score.h"
#include "parts/qa_frames.h"

namespace torchinfer::qa {

// Area under the ROC curve of `scores` against `positive` (Mann-Whitney:
// the share of positive-negative pairs the scores order right, ties half);
// -1 when either class is empty or the two lists differ in length.
double auroc(const std::vector<double>& scores, const std::vector<bool>& positive);

// The anomaly model's figures on the truth parts judged whole, each through
// the track the verdict score paired with it: part-level AUROC (the median
// score of each part's views), view-level AUROC (every view, labelled by
// its part), accuracy of the anomaly verdict alone against `defective`, and
// for defective parts the share whose median view has its map peak inside
// one of the part's truth defect boxes on that frame.
nlohmann::ordered_json anomaly_figures(const TruthClip& truth,
                                       const std::map<int, long long>& track_of_part,
                                       const std::map<long long, QaAnomalyVerdict>& anomaly);

class Scorer {
 public:
  // Throws torchinfer::Error naming the file when the truth is unusable.
  Scorer(const std::string& truth_path, std::set<std::string> part_classes);

  // Whether the truth is this clip's, told before scoring anything: empty
  // if so, else why not, naming the truth file and the fix. `clip`: the
  // clip's path (its `video` must be the same file or name); `f`: the next
  // frame (its size, and no more frames than the truth has); `frames`: the
  // whole clip's count once it ended (not when stopped early).
  std::string other_clip(const std::string& clip) const;
  std::string other_frame(const FrameResults& f) const;
  std::string other_length(std::int64_t frames) const;

  void add(const FrameResults& f);  // in frame order
  // `verdicts`: part (track) id -> "pass"/"reject"/"incomplete". Tracking is
  // scored twice: "tracking" on the parts the app judges (without the tracks
  // in `duplicates`, boxes only ever nested in another part's), and
  // "tracking_all" on every torchtrack track of a part class. Frames the run
  // did not see (stopped early) count as empty: missed. `wrong` gets a line
  // per part judged wrong or not at all.
  // `anomaly` (--anomaly): track id -> the part's anomaly verdict; adds
  // "anomaly" figures (anomaly_figures below).
  nlohmann::ordered_json finish(const std::map<long long, std::string>& verdicts,
                                const std::set<int>& duplicates, std::vector<std::string>* wrong,
                                const std::map<long long, QaAnomalyVerdict>& anomaly = {});

 private:
  std::string path_;
  TruthClip truth_;
  std::set<std::string> part_classes_;
  std::vector<std::vector<TrackedBox>> tracks_;
  int true_pos_ = 0, false_pos_ = 0, false_neg_ = 0;
};

}  // namespace torchinfer::qa
