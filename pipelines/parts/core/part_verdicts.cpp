#include "parts/core/part_verdicts.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace torchinfer {

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

const char* rule_name(QaRule r) {
  return r == QaRule::kVote ? "vote" : "max";
}

void validate(const QaRules& r) {
  auto in01 = [](double v) { return v >= 0 && v <= 1; };
  if (!in01(r.defect_threshold)) throw std::invalid_argument("defect threshold must lie in 0..1");
  if (!in01(r.nested_cover) || r.nested_cover == 0)
    throw std::invalid_argument("nested cover must lie in (0, 1]");
  if (!(r.edge_margin >= 0)) throw std::invalid_argument("edge margin must be >= 0");
  if (r.part_classes.empty()) throw std::invalid_argument("no part classes");
  if (r.defect_classes.empty()) throw std::invalid_argument("no defect classes");
  if (!r.supervised && !r.anomaly) throw std::invalid_argument("no judge of the parts");
  if (r.require_code && !r.codes) throw std::invalid_argument("require code needs codes read");
  if (r.max_defect_area_mm2 &&
      (!(*r.max_defect_area_mm2 >= 0 && std::isfinite(*r.max_defect_area_mm2)) ||
       r.rule != QaRule::kMax || !r.supervised))
    throw std::invalid_argument(
        "the defect area limit needs a finite area >= 0 and the detector's defect masks as judge "
        "(no classifier)");
  for (const auto& c : r.part_classes)
    if (r.defect_classes.count(c))
      throw std::invalid_argument("class '" + c + "' is both a part and a defect class");
}

void attach_defect_boxes(std::vector<QaPart>& parts, const std::vector<QaDefectBox>& defects) {
  for (const QaDefectBox& d : defects) {
    QaPart* best = nullptr;
    double best_cover = -1;
    for (QaPart& p : parts) {
      if (!p.box.contains(d.box.center_x(), d.box.center_y())) continue;
      const double cover = intersection_area(p.box, d.box);
      if (cover > best_cover) {
        best = &p;
        best_cover = cover;
      }
    }
    if (!best) continue;
    auto [it, fresh] = best->evidence.emplace(d.label, d.confidence);
    if (!fresh) it->second = std::max(it->second, d.confidence);
    if (!d.area_mm2) continue;
    auto [a, added] = best->defect_area_mm2.emplace(d.label, *d.area_mm2);
    if (!added) a->second = std::max(a->second, *d.area_mm2);
  }
}

PartVerdicts::PartVerdicts(QaRules rules) : rules_(std::move(rules)) {
  validate(rules_);
}

std::vector<QaDecision> PartVerdicts::add_frame(const QaFrame& f) {
  std::vector<const QaPart*> parts;
  for (const auto& p : f.parts)
    if (rules_.part_classes.count(p.label)) parts.push_back(&p);
  // Most confident first: a nested box is the weaker of the two.
  std::stable_sort(parts.begin(), parts.end(),
                   [](const QaPart* a, const QaPart* b) { return a->confidence > b->confidence; });
  std::vector<const QaPart*> primary;
  std::vector<QaDecision> out;
  for (const QaPart* p : parts) {
    const bool nested = std::any_of(primary.begin(), primary.end(), [&](const QaPart* k) {
      return intersection_area(k->box, p->box) >= rules_.nested_cover * p->box.area();
    });
    // A decided part still hides the boxes nested in it (a leaving bracket
    // half boxed again), but gives no more evidence.
    if (decided_.count(p->id)) {
      if (!nested) primary.push_back(p);
      continue;
    }
    bool fresh = false;
    Part& t = seen_part(*p, f, fresh);
    if (nested) continue;
    primary.push_back(p);
    add_primary_view(t, *p, f, fresh, out);
  }
  gate_and_ends(f, out);
  for (auto it = open_.begin(); it != open_.end();)
    it = decided_.count(it->first) ? open_.erase(it) : std::next(it);
  return out;
}

PartVerdicts::Part& PartVerdicts::seen_part(const QaPart& p, const QaFrame& f, bool& fresh) {
  auto [it, added] = open_.try_emplace(p.id);
  fresh = added;
  Part& t = it->second;
  if (fresh) {
    t.d.part = p.id;
    t.d.label = p.label;
    t.d.rule = rules_.rule;
    t.d.first_pts = f.pts;
    t.d.first_frame = f.index;
  }
  t.d.last_pts = f.pts;
  t.d.last_frame = f.index;
  t.d.frames_seen++;
  if (rules_.codes && p.code && !t.d.code) {
    t.d.code = p.code;
    t.d.code->frame = f.index;
  }
  return t;
}

void PartVerdicts::add_primary_view(Part& t, const QaPart& p, const QaFrame& f, bool fresh,
                                    std::vector<QaDecision>& out) {
  t.ever_primary = true;
  const Box& b = p.box;
  const double m = rules_.edge_margin;
  const bool cut_left = b.x_min < m, cut_top = b.y_min < m;
  const bool cut_right = b.x_max > f.width - m, cut_bottom = b.y_max > f.height - m;
  const double cx = b.center_x(), cy = b.center_y();
  if (fresh) {
    t.first_cx = cx;
    t.first_cy = cy;
  }
  if (cut_left || cut_top || cut_right || cut_bottom) {
    // Leaving: cut by an edge it has travelled towards (half its size at
    // least since first seen). A part still entering can be seen whole
    // for a frame and cut again when the detector's box jitters.
    const double hw = b.width() / 2, hh = b.height() / 2;
    const bool leaving =
        (cut_left && t.first_cx - cx >= hw) || (cut_right && cx - t.first_cx >= hw) ||
        (cut_top && t.first_cy - cy >= hh) || (cut_bottom && cy - t.first_cy >= hh);
    if (t.was_whole && leaving && !rules_.at_gate) decide(t, "left", out);
    return;
  }
  add_whole_view(t, p, f.index);
}

void PartVerdicts::add_whole_view(Part& t, const QaPart& p, std::int64_t frame) {
  t.was_whole = true;
  t.d.frames_whole++;
  const bool supervised = rules_.supervised && p.judged;
  const bool anomaly = rules_.anomaly && p.anomaly;
  if (!supervised && !anomaly) return;
  t.d.frames_judged++;
  if (anomaly) add_anomaly(t, *p.anomaly, frame);
  if (!supervised) return;
  t.supervised_views++;
  for (const auto& [label, c] : p.evidence) {
    auto [s, added] = t.sum.emplace(label, c);
    if (added) continue;
    s->second = rules_.rule == QaRule::kVote ? s->second + c : std::max(s->second, c);
  }
  for (const auto& [label, a] : p.defect_area_mm2) {
    if (rules_.defect_area_median) t.area_views[label].push_back(a);
    auto [s, added] = t.d.defect_area_mm2.emplace(label, a);
    if (!added) s->second = std::max(s->second, a);
  }
}

namespace {

// The median of `areas` padded with zeros to `views` values (the views
// without the defect); of an even count, the mean of the middle two.
double median_area(std::vector<double> areas, int views) {
  areas.resize(std::max<std::size_t>(areas.size(), static_cast<std::size_t>(views)), 0.0);
  std::sort(areas.begin(), areas.end());
  const std::size_t n = areas.size();
  return n % 2 ? areas[n / 2] : (areas[n / 2 - 1] + areas[n / 2]) / 2;
}

}  // namespace

// Crossings first: a track that crosses and ends on one frame was at the gate.
void PartVerdicts::gate_and_ends(const QaFrame& f, std::vector<QaDecision>& out) {
  if (rules_.at_gate)
    for (const QaCrossing& c : f.crossed) {
      auto it = open_.find(c.id);
      if (it == open_.end() || decided_.count(c.id)) continue;
      it->second.d.direction = c.forward ? "forward" : "backward";
      decide(it->second, "gate", out);
    }
  for (int id : f.ended) {
    auto it = open_.find(id);
    if (it == open_.end() || decided_.count(id)) continue;
    if (rules_.at_gate)
      drop_uncrossed(it->second);
    else
      decide(it->second, "ended", out);
  }
}

void PartVerdicts::drop_uncrossed(Part& p) {
  decided_.insert(p.d.part);
  if (!p.ever_primary) {
    counts_.duplicates++;
    duplicate_ids_.insert(p.d.part);
    return;
  }
  counts_.not_at_gate++;
}

void PartVerdicts::add_anomaly(Part& t, const QaAnomalyView& v, std::int64_t frame) {
  t.anomaly_views.emplace_back(frame, v);
}

// The median (mean of the middle two for an even count): a part's score
// that a single odd view neither raises nor lowers.
void PartVerdicts::decide_anomaly(Part& p) {
  if (!rules_.anomaly || p.anomaly_views.empty()) return;
  QaAnomalyVerdict a;
  for (const auto& [frame, v] : p.anomaly_views) a.view_scores.push_back(v.score);
  std::vector<double> s = a.view_scores;
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  a.views = static_cast<int>(n);
  a.score = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  a.threshold = p.anomaly_views.back().second.threshold;
  a.anomalous = a.score >= a.threshold;
  for (const auto& [frame, v] : p.anomaly_views)
    if (v.score == s[n / 2]) {
      a.view_frame = frame;
      a.view = v;
      break;
    }
  p.d.anomaly = std::move(a);
}

// The largest mask of a defect class found (defect_threshold) and larger
// than the limit rejects, as one defect "defect_area".
void PartVerdicts::decide_defect_area(Part& p) const {
  QaDecision& d = p.d;
  if (rules_.defect_area_median)
    for (auto& [label, area] : d.defect_area_mm2)
      area = median_area(p.area_views[label], p.supervised_views);
  double worst = -1;
  for (const auto& [label, area] : d.defect_area_mm2) {
    const auto s = d.scores.find(label);
    if (!rules_.defect_classes.count(label) || s == d.scores.end() ||
        s->second < rules_.defect_threshold || !(area > *rules_.max_defect_area_mm2))
      continue;
    worst = std::max(worst, area);
  }
  if (worst >= 0) d.defects.emplace_back("defect_area", worst);
}

std::vector<QaDecision> PartVerdicts::flush() {
  std::vector<QaDecision> out;
  for (auto& [id, p] : open_)
    if (rules_.at_gate)
      drop_uncrossed(p);
    else
      decide(p, "eos", out);
  open_.clear();
  return out;
}

void PartVerdicts::decide(Part& p, const std::string& reason, std::vector<QaDecision>& out) {
  decided_.insert(p.d.part);
  if (!p.ever_primary) {
    counts_.duplicates++;
    duplicate_ids_.insert(p.d.part);
    return;
  }
  QaDecision& d = p.d;
  d.reason = reason;
  for (const auto& [label, s] : p.sum)
    d.scores[label] = rules_.rule == QaRule::kVote ? s / p.supervised_views : s;
  // The winner: any label for a vote, defect classes only for kMax (it has
  // no "good" label). Ties go to the first label in name order.
  for (const auto& [label, s] : d.scores) {
    if (rules_.rule == QaRule::kMax && !rules_.defect_classes.count(label)) continue;
    if (d.top.empty() || s > d.top_score) {
      d.top = label;
      d.top_score = s;
    }
  }
  if (rules_.rule == QaRule::kVote) {
    if (rules_.defect_classes.count(d.top)) d.defects.emplace_back(d.top, d.top_score);
  } else if (rules_.max_defect_area_mm2) {
    decide_defect_area(p);
  } else {
    for (const auto& [label, s] : d.scores)
      if (rules_.defect_classes.count(label) && s >= rules_.defect_threshold)
        d.defects.emplace_back(label, s);
    std::stable_sort(d.defects.begin(), d.defects.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  decide_anomaly(p);
  if (d.anomaly && d.anomaly->anomalous) d.defects.emplace_back("anomaly", d.anomaly->score);
  if (rules_.codes && !d.code) {
    counts_.without_code++;
    if (rules_.require_code && d.frames_judged > 0) d.defects.emplace_back("no_code", 1.0);
  }
  if (d.frames_judged == 0) {
    d.verdict = QaVerdict::kIncomplete;
    counts_.incomplete++;
  } else if (!d.defects.empty()) {
    d.verdict = QaVerdict::kReject;
    counts_.rejected++;
    for (const auto& f : d.defects) counts_.rejected_by_defect[f.first]++;
  } else {
    d.verdict = QaVerdict::kPass;
    counts_.passed++;
  }
  out.push_back(std::move(d));
}

}  // namespace torchinfer
