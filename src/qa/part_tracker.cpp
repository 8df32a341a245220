#include "qa/part_tracker.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace torchinfer {

namespace {

double area(const QaBox& b) {
  return std::max(0.0, b.x1 - b.x0) * std::max(0.0, b.y1 - b.y0);
}

double intersection(const QaBox& a, const QaBox& b) {
  const double w = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
  const double h = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  return w > 0 && h > 0 ? w * h : 0;
}

double iou(const QaBox& a, const QaBox& b) {
  const double i = intersection(a, b);
  const double u = area(a) + area(b) - i;
  return u > 0 ? i / u : 0;
}

bool holds_centre(const QaBox& part, const QaBox& d) {
  const double cx = (d.x0 + d.x1) / 2, cy = (d.y0 + d.y1) / 2;
  return cx >= part.x0 && cx <= part.x1 && cy >= part.y0 && cy <= part.y1;
}

}  // namespace

const char* verdict_name(QaVerdict v) {
  switch (v) {
    case QaVerdict::kPass:
      return "pass";
    case QaVerdict::kReject:
      return "reject";
    case QaVerdict::kIncomplete:
      break;
  }
  return "incomplete";
}

std::vector<std::pair<std::string, double>> QaDecision::defects(double threshold) const {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [label, c] : max_defect)
    if (c >= threshold) out.emplace_back(label, c);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

void validate(const QaRules& r) {
  auto in01 = [](double v) { return v >= 0 && v <= 1; };
  if (!in01(r.defect_threshold)) throw std::invalid_argument("defect threshold must lie in 0..1");
  if (!in01(r.part_threshold)) throw std::invalid_argument("part threshold must lie in 0..1");
  if (!in01(r.match_iou) || r.match_iou == 0)
    throw std::invalid_argument("match IoU must lie in (0, 1]");
  if (!in01(r.nested_cover) || r.nested_cover == 0)
    throw std::invalid_argument("nested cover must lie in (0, 1]");
  if (r.max_missed < 0) throw std::invalid_argument("max missed frames must be >= 0");
  if (r.min_frames < 1) throw std::invalid_argument("min frames must be >= 1");
  if (!(r.edge_margin >= 0)) throw std::invalid_argument("edge margin must be >= 0");
  if (r.part_classes.empty()) throw std::invalid_argument("no part classes");
  if (r.defect_classes.empty()) throw std::invalid_argument("no defect classes");
  for (const auto& c : r.part_classes)
    if (r.defect_classes.count(c))
      throw std::invalid_argument("class '" + c + "' is both a part and a defect class");
}

PartTracker::PartTracker(QaRules rules) : rules_(std::move(rules)) {
  validate(rules_);
}

std::vector<QaDecision> PartTracker::add_frame(const std::vector<QaDetection>& detections,
                                               std::int64_t pts, std::int64_t frame, int width,
                                               int height) {
  std::vector<const QaDetection*> parts, defects;
  for (const auto& d : detections) {
    if (rules_.part_classes.count(d.label) && d.confidence >= rules_.part_threshold)
      parts.push_back(&d);
    else if (rules_.defect_classes.count(d.label))
      defects.push_back(&d);
  }
  std::stable_sort(parts.begin(), parts.end(), [](const QaDetection* a, const QaDetection* b) {
    return a->confidence > b->confidence;
  });
  std::vector<const QaDetection*> kept;
  for (const QaDetection* p : parts) {
    const bool nested = std::any_of(kept.begin(), kept.end(), [&](const QaDetection* k) {
      return intersection(k->box, p->box) >= rules_.nested_cover * area(p->box);
    });
    if (!nested) kept.push_back(p);
  }
  parts = std::move(kept);

  // Greedy association, best IoU first, each track and part used once.
  std::vector<std::tuple<double, std::size_t, std::size_t>> pairs;
  for (std::size_t t = 0; t < tracks_.size(); ++t)
    for (std::size_t p = 0; p < parts.size(); ++p) {
      const double v = iou(tracks_[t].box, parts[p]->box);
      if (v >= rules_.match_iou) pairs.emplace_back(v, t, p);
    }
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
  std::vector<int> track_of(parts.size(), -1);
  std::vector<bool> track_used(tracks_.size(), false);
  for (const auto& [v, t, p] : pairs) {
    if (track_used[t] || track_of[p] >= 0) continue;
    track_used[t] = true;
    track_of[p] = static_cast<int>(t);
  }
  for (std::size_t t = 0; t < tracks_.size(); ++t)
    if (!track_used[t]) tracks_[t].missed++;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    if (track_of[p] >= 0) continue;
    Track t;
    t.d.first_pts = pts;
    t.d.first_frame = frame;
    track_of[p] = static_cast<int>(tracks_.size());
    tracks_.push_back(std::move(t));
  }

  // Each defect goes to the part box holding its centre, the one covering
  // most of it when boxes overlap.
  std::vector<std::vector<const QaDetection*>> defects_of(parts.size());
  for (const QaDetection* d : defects) {
    int best = -1;
    double best_cover = -1;
    for (std::size_t p = 0; p < parts.size(); ++p) {
      if (!holds_centre(parts[p]->box, d->box)) continue;
      const double cover = intersection(parts[p]->box, d->box);
      if (cover > best_cover) {
        best = static_cast<int>(p);
        best_cover = cover;
      }
    }
    if (best >= 0) defects_of[best].push_back(d);
  }

  for (std::size_t p = 0; p < parts.size(); ++p) {
    Track& t = tracks_[track_of[p]];
    const QaBox& b = parts[p]->box;
    t.box = b;
    t.missed = 0;
    t.class_votes[parts[p]->label] += parts[p]->confidence;
    t.d.last_pts = pts;
    t.d.last_frame = frame;
    t.d.frames_seen++;
    const double m = rules_.edge_margin;
    const bool whole = b.x0 >= m && b.y0 >= m && b.x1 <= width - m && b.y1 <= height - m;
    if (!whole) continue;
    t.d.frames_whole++;
    for (const QaDetection* d : defects_of[p]) {
      auto [it, fresh] = t.d.max_defect.emplace(d->label, d->confidence);
      if (!fresh) it->second = std::max(it->second, d->confidence);
    }
  }
  return close_if(false);
}

std::vector<QaDecision> PartTracker::flush() {
  return close_if(true);
}

std::vector<QaDecision> PartTracker::close_if(bool all) {
  std::vector<QaDecision> out;
  std::vector<Track> open;
  for (Track& t : tracks_) {
    if (all || t.missed > rules_.max_missed)
      decide(t, out);
    else
      open.push_back(std::move(t));
  }
  tracks_ = std::move(open);
  return out;
}

void PartTracker::decide(Track& t, std::vector<QaDecision>& out) {
  if (t.d.frames_seen < rules_.min_frames) {
    counts_.spurious++;
    return;
  }
  auto best = std::max_element(t.class_votes.begin(), t.class_votes.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  t.d.label = best->first;
  t.d.part = next_id_++;
  const auto found = t.d.defects(rules_.defect_threshold);
  if (t.d.frames_whole == 0) {
    t.d.verdict = QaVerdict::kIncomplete;
    counts_.incomplete++;
  } else if (!found.empty()) {
    t.d.verdict = QaVerdict::kReject;
    counts_.rejected++;
    for (const auto& f : found) counts_.rejected_by_defect[f.first]++;
  } else {
    t.d.verdict = QaVerdict::kPass;
    counts_.passed++;
  }
  out.push_back(std::move(t.d));
}

}  // namespace torchinfer
