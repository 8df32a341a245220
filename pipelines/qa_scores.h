// Scores of a QA-line run against the clip's truth (--truth): detection
// recall/precision per frame (IoU >= 0.5, same class, as the detection demo),
// tracking (MOTA, IDF1, id switches, count error: src/eval/mot_metrics.h) on
// the part classes, and per-part verdict accuracy (src/eval/verdict_score.h).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "eval/mot_metrics.h"
#include "eval/truth_file.h"
#include "eval/verdict_score.h"
#include "qa_frames.h"

namespace torchinfer::qa {

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
  nlohmann::ordered_json finish(const std::map<long long, std::string>& verdicts,
                                const std::set<int>& duplicates, std::vector<std::string>* wrong);

 private:
  std::string path_;
  TruthClip truth_;
  std::set<std::string> part_classes_;
  std::vector<std::vector<TrackBox>> tracks_;
  int true_pos_ = 0, false_pos_ = 0, false_neg_ = 0;
};

}  // namespace torchinfer::qa
