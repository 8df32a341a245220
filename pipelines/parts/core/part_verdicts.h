// QA-line decisions: one verdict per tracked part (torchtrack's object id),
// from the per-frame evidence on it, given when the part leaves.
//
// Rules (pipelines/README.md has the operator's version):
// - Parts are observations of a part class carrying a track id. Ids come
//   from torchtrack, so this class does no matching of its own.
// - A part is "whole" in a frame when its box keeps edge_margin pixels from
//   every frame edge. Evidence counts only from frames where it is whole and
//   judged (the frame has a result of its own for it), so a part is judged on
//   views where the camera sees all of it, each view once.
// - A part box covered for nested_cover of its area by a more confident part
//   box of the same frame is a partial duplicate (the detector boxing a
//   feature of a part, e.g. half of a bracket): no evidence; a track that is
//   never anything else is dropped as a duplicate, not a part.
// - Aggregation (QaRule):
//   kVote (a classifier on the part crop): each judged frame gives its top-1
//     label and confidence; a label's score is the mean, over judged frames,
//     of its confidence (0 on frames where it was not top-1): a
//     confidence-weighted vote. The part is rejected when the winning label
//     is a defect class; one bad view among many does not reject.
//   kMax (defect boxes of the detector, no classifier): each judged frame
//     gives the best confidence of each defect class found on the part; a
//     label's score is its maximum; reject when a defect class reaches
//     defect_threshold. Small defects are found in some views only, so one
//     confident view is the evidence.
// - A part is decided once: when torchtrack ends its track; when it was whole
//   and is then cut by a frame edge it has travelled towards, by at least
//   half its size since first seen (it is leaving the view; a part still
//   entering is sometimes boxed whole for a frame, then cut again); or at
//   the end of the stream. Later observations of a decided id are ignored.
// - Anomaly (an anomaly model on the part crop, QaRules::anomaly): each
//   judged whole view gives a score; the part's score is the median over
//   its views (one odd view does not decide, as with the vote), anomalous
//   iff the median reaches the model's decision threshold; the median view
//   (its map peak, its regions) says where the part looks wrong. Beside a
//   supervised judge (QaRules::supervised) the part is rejected when either
//   says defective: the anomaly model finds what nobody labelled, the
//   classifier the defects it was trained on; a pass needs both.
// - At a gate (QaRules::at_gate, the app's --gate): a part is decided only
//   when its track crosses the gate line (QaFrame::crossed, from
//   torchanalytics), with the evidence of the frames up to that one; not
//   when it leaves the view. A track that ends, or is still open at the end
//   of the stream, without having crossed is not decided: it is counted in
//   QaCounts::not_at_gate (or as a duplicate), never silently lost.
// - Codes (QaRules::codes: torchcodes reads each part's DataMatrix/QR/1D
//   code on its ROIs): a part's code is the first one read on any view of
//   its track, whole or not (the code names the part; it is not evidence).
//   With require_code a judged part without one is rejected, its defect
//   "no_code" (confidence 1: a rule, not a model's score); parts decided
//   without a code are counted either way (QaCounts::without_code).
// - Defect area (kMax with QaRules::max_defect_area_mm2, a segmentation
//   detector's masks): the defects that reject are then not the defect
//   classes reaching defect_threshold but those of them whose largest mask,
//   over the part's judged whole views, is larger than max_defect_area_mm2
//   (QaDecision::defect_area_mm2); one defect "defect_area" with the
//   largest such area rejects the part. Smaller defects pass.
//   With defect_area_median a class's area is instead the median over the
//   part's judged whole views (0 on a view without it: a false mask on a
//   view or two does not reject, as models/demo/eval_defect_seg.py judges).
// - Verdict: "incomplete" if never judged whole; else reject / pass.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/box.h"

namespace torchinfer {

enum class QaRule { kVote, kMax };

struct QaRules {
  std::set<std::string> part_classes{"bracket", "washer"};
  std::set<std::string> defect_classes{"scratch", "spot", "missing_hole", "chip"};
  QaRule rule = QaRule::kVote;
  double defect_threshold = 0.5;  // kMax only
  bool supervised = true;         // classifier votes or defect boxes judge (per `rule`)
  bool anomaly = false;           // an anomaly model judges the crops too
  double nested_cover = 0.7;
  double edge_margin = 2;
  bool at_gate = false;  // decide at the gate crossing only (see the rules above)

  bool codes = false;         // parts carry the code torchcodes read (see the rules above)
  bool require_code = false;  // codes only: a judged part without a code is rejected
  // kMax: reject on defect masks larger than this (mm², see the rules above).
  std::optional<double> max_defect_area_mm2;
  bool defect_area_median = false;  // the area rule on the median view, not the largest
};

// Throws std::invalid_argument on rules that cannot work (thresholds outside
// 0..1, a class both part and defect, no part or defect classes).
void validate(const QaRules& rules);

enum class QaVerdict { kPass, kReject, kIncomplete };
const char* verdict_name(QaVerdict v);
const char* rule_name(QaRule r);

// An anomaly model's result on one view of a part.
struct QaAnomalyView {
  double score = 0;                 // decision units: normalised 0..1, or raw
  double threshold = 0.5;           // anomalous iff score >= threshold
  double peak_x = -1, peak_y = -1;  // the map's highest cell, frame pixels; -1: no map
  std::vector<Box> regions;         // anomalous areas of the map, frame pixels, largest first
};

// A code read on a part (torchcodes' "code" param on its ROI).
struct QaCode {
  std::string format;  // zxing-cpp's name: "DataMatrix", "QRCode", "Code128", ...
  std::string text;
  std::int64_t frame = -1;  // the frame (QaFrame::index) it was first seen on
};

// One tracked part box on one frame.
struct QaPart {
  int id = 0;  // torchtrack object id
  std::string label;
  double confidence = 0;
  Box box;
  // The frame has a result of its own for this part: evidence holds it
  // (empty map = nothing found). False for reused or predicted boxes.
  bool judged = false;
  std::map<std::string, double> evidence;  // label -> confidence on this frame
  // The anomaly model's result of this frame's own (not reused) for it.
  std::optional<QaAnomalyView> anomaly;
  std::optional<QaCode> code;  // QaRules::codes: the code on this view's ROI
  // label -> largest mask area (mm²) of the defect boxes given to it
  // (attach_defect_boxes; boxes with a mask only).
  std::map<std::string, double> defect_area_mm2;
};

// A track crossing the gate line on this frame (torchanalytics' direction).
struct QaCrossing {
  int id = 0;
  bool forward = true;
};

struct QaFrame {
  std::int64_t pts = -1;  // ns, -1 unknown
  std::int64_t index = 0;
  int width = 0, height = 0;
  std::vector<QaPart> parts;        // other classes are ignored
  std::vector<int> ended;           // ids whose track ended on this frame
  std::vector<QaCrossing> crossed;  // at_gate: tracks that crossed the gate on this frame
};

// A part's anomaly verdict: the median of its whole views' scores.
struct QaAnomalyVerdict {
  int views = 0;
  double score = 0;  // median of `view_scores`
  double threshold = 0.5;
  bool anomalous = false;
  std::vector<double> view_scores;  // in frame order
  // The median view: the first whose score is the upper middle one (a
  // typical view, not an outlier such as a part just entering the view).
  std::int64_t view_frame = -1;
  QaAnomalyView view;  // its score, map peak and regions
};

struct QaDecision {
  int part = 0;  // the track id
  std::string label;
  QaVerdict verdict = QaVerdict::kIncomplete;
  QaRule rule = QaRule::kVote;
  std::string reason;                    // "ended", "left", "eos", "gate"
  std::string direction;                 // "gate": "forward" or "backward"
  std::map<std::string, double> scores;  // per label, per the rule
  std::string top;  // winning label (kVote) or best defect (kMax); empty if none
  double top_score = 0;
  std::vector<std::pair<std::string, double>> defects;  // the defects that reject, best first
  std::int64_t first_pts = -1, last_pts = -1;
  std::int64_t first_frame = 0, last_frame = 0;
  int frames_seen = 0, frames_whole = 0, frames_judged = 0;
  std::optional<QaAnomalyVerdict> anomaly;  // QaRules::anomaly and a view judged
  std::optional<QaCode> code;               // QaRules::codes: the first code read on the track
  // max_defect_area_mm2: per defect class, its largest mask over the judged
  // whole views (mm²; with defect_area_median, the median over them).
  std::map<std::string, double> defect_area_mm2;
};

struct QaCounts {
  int passed = 0, rejected = 0, incomplete = 0, duplicates = 0;
  int not_at_gate = 0;  // at_gate: tracks that ended or were open at the end without crossing

  int without_code = 0;  // codes: parts decided (pass, reject, incomplete) without a code
  std::map<std::string, int> rejected_by_defect;  // "anomaly": rejected by the anomaly model
};

// A defect box of the detector (no classifier): evidence for the part box
// holding its centre, the one covering most of it when several do.
struct QaDefectBox {
  std::string label;
  double confidence = 0;
  Box box;
  std::optional<double> area_mm2;  // its mask's area, when it has one and a calibration
};
// Adds to each part's evidence the best confidence per defect class among
// the boxes given to it, and to defect_area_mm2 the largest mask area per
// class. Boxes whose centre lies in no part are dropped.
void attach_defect_boxes(std::vector<QaPart>& parts, const std::vector<QaDefectBox>& defects);

class PartVerdicts {
 public:
  explicit PartVerdicts(QaRules rules);

  // One frame; returns the decisions of the parts that left on it.
  std::vector<QaDecision> add_frame(const QaFrame& frame);
  // End of stream: decides every open part.
  std::vector<QaDecision> flush();

  const QaCounts& counts() const { return counts_; }
  // Tracks dropped as duplicates (only ever nested in another part's box).
  const std::set<int>& duplicate_ids() const { return duplicate_ids_; }
  const QaRules& rules() const { return rules_; }

 private:
  struct Part {
    QaDecision d;
    bool was_whole = false, ever_primary = false;
    double first_cx = 0, first_cy = 0;  // box centre when first seen
    std::map<std::string, double> sum;  // kVote: summed confidences; kMax: max
    int supervised_views = 0;           // views the supervised judge gave evidence on
    std::vector<std::pair<std::int64_t, QaAnomalyView>> anomaly_views;  // frame, view
    std::map<std::string, std::vector<double>> area_views;  // defect_area_median: per class
  };
  void decide(Part& p, const std::string& reason, std::vector<QaDecision>& out);
  void drop_uncrossed(Part& p);
  void gate_and_ends(const QaFrame& f, std::vector<QaDecision>& out);
  // The open record of part p (fresh: made on this frame), its sightings
  // counted.
  Part& seen_part(const QaPart& p, const QaFrame& f, bool& fresh);
  // A view of p not nested in another part: a cut box may mean it left,
  // a whole one adds its evidence.
  void add_primary_view(Part& t, const QaPart& p, const QaFrame& f, bool fresh,
                        std::vector<QaDecision>& out);
  void add_whole_view(Part& t, const QaPart& p, std::int64_t frame);
  void add_anomaly(Part& t, const QaAnomalyView& v, std::int64_t frame);
  void decide_anomaly(Part& p);
  void decide_defect_area(Part& p) const;

  QaRules rules_;
  std::map<int, Part> open_;
  std::set<int> decided_, duplicate_ids_;
  QaCounts counts_;
};

}  // namespace torchinfer
