// The QA line's verdicts drawn on the annotated video (after torchoverlay
// drew the `#id label` boxes with the classifier's reading of the frame):
// under each part, its verdict once decided. Keeps a snapshot: the frame
// showing the most verdicts.
#pragma once

#include <gst/gst.h>

#include <map>
#include <mutex>
#include <opencv2/core.hpp>
#include <set>
#include <string>
#include <vector>

#include "parts/core/part_verdicts.h"

namespace torchinfer::qa {

class Annotator {
 public:
  // The analysed frame about to be drawn (same streaming thread, in order).
  void set_parts(const std::vector<QaPart>& parts);
  void decided(const QaDecision& d);
  // Pad probe on BGR video: draws the texts on the buffer.
  static GstPadProbeReturn probe(GstPad* pad, GstPadProbeInfo* info, gpointer self);
  // False if there is no snapshot (`why` empty) or it cannot be written
  // (`why` says so; a FIFO nobody reads fails at once).
  bool write_snapshot(const std::string& path, std::string* why) const;

 private:
  struct Text {
    Box box;
    std::string text;
    int state;  // 1 pass, 2 reject/incomplete
  };
  GstPadProbeReturn draw(GstPad* pad, GstPadProbeInfo* info);

  mutable std::mutex mu_;
  std::vector<Text> current_;
  std::map<int, std::pair<std::string, int>> verdicts_;  // part id -> text, state
  int snapshot_score_ = -1;
  cv::Mat snapshot_;
};

}  // namespace torchinfer::qa
