// The ground truth of a demo clip with tracked parts (models/demo/
// line.truth.json, written by make_detection_clip.py): the physical parts
// with their QA verdicts, and per frame every box with the id of the part it
// belongs to. Read for the tracking and verdict scores of the two-stage demo.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "eval/mot_metrics.h"

namespace torchinfer {

struct TruthPart {
  int id = 0;
  std::string kind;   // bracket_rect, bracket_l, washer
  std::string label;  // the detector class: bracket, washer
  bool defective = false;
  std::vector<std::string> defects;
  // "pass" / "reject"; empty when the part is never entirely in view (a QA
  // app does not judge it).
  std::string verdict;
  std::optional<int> first_full, last_full;
};

struct TruthClip {
  std::string video;  // relative to the truth file
  int width = 0, height = 0, num_frames = 0;
  double fps = 0;
  std::vector<std::string> classes;
  std::vector<TruthPart> parts;               // in id order; ids are 0..n-1
  std::vector<std::vector<TruthBox>> frames;  // boxes of frame f (id = part id)
};

// Reads and checks the file: bounded size and depth (common/json_file.h),
// every field's type and range, ids that exist, a verdict consistent with
// "defective" and first_full. Throws Error(kNotFound) for a missing file,
// Error(kConfigInvalid) "<truth file 'path'>: <field path>: <what is wrong>"
// otherwise.
TruthClip read_truth_clip(const std::string& path);

}  // namespace torchinfer
