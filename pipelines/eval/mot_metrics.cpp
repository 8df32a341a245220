#include "eval/mot_metrics.h"

#include <algorithm>
#include <string>

#include "common/error.h"
#include "track/assignment.h"

namespace torchinfer {

namespace {

// A pair that cannot match costs more than any set of valid pairs, so the
// assignment first maximises the number of matches, then their total IoU.
constexpr double kNoMatch = 1e9;

// Hungarian matching of rows (truth) to columns (tracks) at IoU >= min_iou.
// Returns per row the matched column or -1.
std::vector<int> match_boxes(const std::vector<const Box*>& rows,
                             const std::vector<const Box*>& cols, double min_iou) {
  std::vector<int> out(rows.size(), -1);
  if (rows.empty() || cols.empty()) return out;
  std::vector<std::vector<double>> cost(rows.size(), std::vector<double>(cols.size()));
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const double v = iou(*rows[r], *cols[c]);
      cost[r][c] = v >= min_iou ? 1.0 - v : kNoMatch;
    }
  const std::vector<int> a = min_cost_assignment(cost);
  for (std::size_t r = 0; r < rows.size(); ++r)
    if (a[r] >= 0 && cost[r][a[r]] < kNoMatch) out[r] = a[r];
  return out;
}

bool kept(const std::set<std::string>& labels, const std::string& label) {
  return labels.empty() || labels.count(label) > 0;
}

// What the frames leave for the summary after the last one.
struct Tally {
  std::map<int, long long> last_match;               // truth id -> track it was last matched to
  std::map<std::pair<int, long long>, int> overlap;  // frames with IoU >= min_iou
  std::map<std::pair<long long, int>, int> matched_frames;
  std::map<int, int> truth_len;
  double iou_sum = 0;
};

// One frame's boxes of the kept labels, each id once (Error otherwise);
// `what` names the side in the error.
template <typename B>
std::vector<const B*> frame_boxes(const std::vector<B>& boxes, const MotOptions& options,
                                  const std::string& where, const char* what) {
  std::vector<const B*> out;
  std::set<long long> seen;
  for (const B& b : boxes) {
    if (!kept(options.labels, b.label)) continue;
    if (!seen.insert(b.id).second)
      throw Error(ErrorKind::kInvalidArgument,
                  where + what + " id " + std::to_string(b.id) + " appears twice");
    out.push_back(&b);
  }
  return out;
}

// Track boxes on ignored truth leave the evaluation.
void drop_on_ignored(const std::vector<const TruthBox*>& all_truth,
                     std::vector<const TrackedBox*>& hyps, double min_iou) {
  if (std::none_of(all_truth.begin(), all_truth.end(), [](const TruthBox* t) { return t->ignore; }))
    return;
  std::vector<const Box*> rows, cols;
  for (const TruthBox* t : all_truth) rows.push_back(&t->box);
  for (const TrackedBox* h : hyps) cols.push_back(&h->box);
  const std::vector<int> m = match_boxes(rows, cols, min_iou);
  std::vector<bool> drop(hyps.size(), false);
  for (std::size_t r = 0; r < all_truth.size(); ++r)
    if (all_truth[r]->ignore && m[r] >= 0) drop[m[r]] = true;
  std::vector<const TrackedBox*> rest;
  for (std::size_t c = 0; c < hyps.size(); ++c)
    if (!drop[c]) rest.push_back(hyps[c]);
  hyps.swap(rest);
}

// CLEAR-MOT: keep last correspondences that still hold, Hungarian for the
// rest. Returns per object the matched track box or -1; counts switches.
std::vector<int> clear_mot_match(const std::vector<const TruthBox*>& objs,
                                 const std::vector<const TrackedBox*>& hyps, double min_iou,
                                 const std::map<int, long long>& last_match, int& id_switches) {
  std::vector<int> match(objs.size(), -1);
  std::vector<bool> hyp_used(hyps.size(), false);
  for (std::size_t r = 0; r < objs.size(); ++r) {
    const auto last = last_match.find(objs[r]->id);
    if (last == last_match.end()) continue;
    for (std::size_t c = 0; c < hyps.size(); ++c)
      if (!hyp_used[c] && hyps[c]->id == last->second &&
          iou(objs[r]->box, hyps[c]->box) >= min_iou) {
        match[r] = static_cast<int>(c);
        hyp_used[c] = true;
        break;
      }
  }
  std::vector<int> free_rows, free_cols;
  std::vector<const Box*> rows, cols;
  for (std::size_t r = 0; r < objs.size(); ++r)
    if (match[r] < 0) {
      free_rows.push_back(static_cast<int>(r));
      rows.push_back(&objs[r]->box);
    }
  for (std::size_t c = 0; c < hyps.size(); ++c)
    if (!hyp_used[c]) {
      free_cols.push_back(static_cast<int>(c));
      cols.push_back(&hyps[c]->box);
    }
  const std::vector<int> m = match_boxes(rows, cols, min_iou);
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (m[i] < 0) continue;
    const int r = free_rows[i], c = free_cols[m[i]];
    match[r] = c;
    const auto last = last_match.find(objs[r]->id);
    if (last != last_match.end() && last->second != hyps[c]->id) ++id_switches;
  }
  return match;
}

// Frame f scored into res and tally.
void score_frame(const std::vector<TruthBox>& truth, const std::vector<TrackedBox>& tracks,
                 std::size_t f, const MotOptions& options, Tally& tally, MotResult& res) {
  const std::string where = "tracking evaluation: frame " + std::to_string(f) + ": ";
  const std::vector<const TruthBox*> all_truth = frame_boxes(truth, options, where, "truth");
  std::vector<const TrackedBox*> hyps = frame_boxes(tracks, options, where, "track");
  drop_on_ignored(all_truth, hyps, options.min_iou);
  std::vector<const TruthBox*> objs;
  for (const TruthBox* t : all_truth)
    if (!t->ignore) objs.push_back(t);

  res.truth_boxes += static_cast<int>(objs.size());
  res.track_boxes += static_cast<int>(hyps.size());
  for (const TruthBox* t : objs) ++tally.truth_len[t->id];
  for (const TrackedBox* h : hyps) ++res.track_frames[h->id];
  for (const TruthBox* t : objs)
    for (const TrackedBox* h : hyps)
      if (iou(t->box, h->box) >= options.min_iou) ++tally.overlap[{t->id, h->id}];

  const std::vector<int> match =
      clear_mot_match(objs, hyps, options.min_iou, tally.last_match, res.id_switches);
  int frame_matches = 0;
  for (std::size_t r = 0; r < objs.size(); ++r) {
    if (match[r] < 0) continue;
    const TrackedBox* h = hyps[match[r]];
    tally.last_match[objs[r]->id] = h->id;
    tally.iou_sum += iou(objs[r]->box, h->box);
    ++tally.matched_frames[{h->id, objs[r]->id}];
    ++frame_matches;
  }
  res.matches += frame_matches;
  res.misses += static_cast<int>(objs.size()) - frame_matches;
  res.false_positives += static_cast<int>(hyps.size()) - frame_matches;
}

// IDF1: the truth-id to track-id assignment with the most overlapping frames.
void identity_scores(const Tally& tally, MotResult& res) {
  std::vector<int> truth_ids;
  for (const auto& [id, n] : tally.truth_len) truth_ids.push_back(id);
  std::vector<long long> track_ids;
  for (const auto& [id, n] : res.track_frames) track_ids.push_back(id);
  if (!truth_ids.empty() && !track_ids.empty()) {
    std::vector<std::vector<double>> cost(truth_ids.size(),
                                          std::vector<double>(track_ids.size(), 0.0));
    for (std::size_t r = 0; r < truth_ids.size(); ++r)
      for (std::size_t c = 0; c < track_ids.size(); ++c) {
        const auto it = tally.overlap.find({truth_ids[r], track_ids[c]});
        if (it != tally.overlap.end()) cost[r][c] = -static_cast<double>(it->second);
      }
    const std::vector<int> a = min_cost_assignment(cost);
    for (std::size_t r = 0; r < truth_ids.size(); ++r) {
      if (a[r] < 0 || cost[r][a[r]] >= 0) continue;
      res.idtp += static_cast<int>(-cost[r][a[r]]);
      res.track_to_truth[track_ids[a[r]]] = truth_ids[r];
    }
  }
  res.idfn = res.truth_boxes - res.idtp;
  res.idfp = res.track_boxes - res.idtp;
  if (res.truth_boxes + res.track_boxes > 0)
    res.idf1 = 2.0 * res.idtp / (res.truth_boxes + res.track_boxes);
  if (res.track_boxes > 0) res.idp = static_cast<double>(res.idtp) / res.track_boxes;
  if (res.truth_boxes > 0) res.idr = static_cast<double>(res.idtp) / res.truth_boxes;
  res.truth_ids = static_cast<int>(truth_ids.size());
  res.track_ids = static_cast<int>(track_ids.size());
}

void track_majorities(const Tally& tally, MotResult& res) {
  for (const auto& [pair, n] : tally.matched_frames) {
    const auto [track, object] = pair;
    const auto it = res.track_majority.find(track);
    // Ties go to the lower truth id: the map visits truth ids in order.
    if (it == res.track_majority.end() || n > tally.matched_frames.at({track, it->second}))
      res.track_majority[track] = object;
  }
}

}  // namespace

MotResult evaluate_mot(const std::vector<std::vector<TruthBox>>& truth,
                       const std::vector<std::vector<TrackedBox>>& tracks,
                       const MotOptions& options) {
  if (truth.size() != tracks.size())
    throw Error(ErrorKind::kInvalidArgument,
                "tracking evaluation: truth has " + std::to_string(truth.size()) +
                    " frames, the tracks " + std::to_string(tracks.size()));
  if (!(options.min_iou > 0.0 && options.min_iou <= 1.0))
    throw Error(ErrorKind::kInvalidArgument, "tracking evaluation: min_iou must be in (0, 1]");

  MotResult res;
  res.frames = static_cast<int>(truth.size());
  Tally tally;
  for (std::size_t f = 0; f < truth.size(); ++f)
    score_frame(truth[f], tracks[f], f, options, tally, res);

  if (res.truth_boxes > 0)
    res.mota = 1.0 - static_cast<double>(res.misses + res.false_positives + res.id_switches) /
                         res.truth_boxes;
  if (res.matches > 0) res.motp = tally.iou_sum / res.matches;
  identity_scores(tally, res);
  track_majorities(tally, res);
  res.count_error = res.track_ids - res.truth_ids;
  return res;
}

}  // namespace torchinfer
