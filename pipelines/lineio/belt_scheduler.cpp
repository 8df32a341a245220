#include "lineio/belt_scheduler.h"

#include <algorithm>

namespace torchinfer {

const char* line_coil_name(LineCoil c) {
  switch (c) {
    case LineCoil::reject:
      return "reject";
    case LineCoil::pass:
      return "pass";
    case LineCoil::recheck:
      return "recheck";
  }
  return "?";
}

BeltScheduler::BeltScheduler(BeltCalibration cal, EjectorConfig ejector)
    : cal_(cal), ej_(ejector) {}

double BeltScheduler::target_count(const PartSighting& seen, const BeltClock& belt) const {
  // The belt count at which the part stood on the reference line, then D on.
  const double past_ref = (seen.along_px - cal_.ref_px) * cal_.units_per_px * cal_.counts_per_unit;
  const double at_ref = belt.position_at(seen.frame_ns) - past_ref;
  return at_ref + ej_.distance_units * cal_.counts_per_unit;
}

bool BeltScheduler::remember(long long id) {
  if (!ids_.insert(id).second) return false;
  id_order_.push_back(id);
  if (id_order_.size() > ej_.remembered_ids) {
    ids_.erase(id_order_.front());
    id_order_.pop_front();
  }
  return true;
}

DecisionResult BeltScheduler::decide(const PartSighting& seen, bool reject, std::int64_t now_ns,
                                     const BeltClock& belt) {
  DecisionResult r;
  if (!belt.ready()) {
    // No encoder reading yet: the part's place on the belt is unknown.
    counts_.no_encoder++;
    r.outcome = DecisionOutcome::no_encoder;
    return r;
  }
  if (!remember(seen.track_id)) {
    counts_.duplicates++;
    r.outcome = DecisionOutcome::duplicate;
    return r;
  }
  counts_.decided++;
  r.target_count = target_count(seen, belt);
  PulsePlan p;
  p.track_id = seen.track_id;
  p.target_count = r.target_count;
  p.lead_ns = ej_.lead_ns;
  // Late: the moment to send the output (the belt a lead ahead reaching the
  // ejector) has already passed.
  if (belt.position_at(now_ns + ej_.lead_ns) >= r.target_count) {
    counts_.late++;
    p.late = true;
    p.at_ns = now_ns;
    p.coil = ej_.has_recheck ? LineCoil::recheck : LineCoil::reject;
    r.outcome = ej_.reject_late ? DecisionOutcome::late : DecisionOutcome::late_unfired;
    if (ej_.reject_late) r.pulse = p;
    return r;
  }
  p.coil = reject ? LineCoil::reject : LineCoil::pass;
  if (reject || ej_.pass_pulses) r.pulse = p;
  return r;
}

std::vector<PulsePlan> PulseQueue::take_due(std::int64_t now_ns, const BeltClock& belt) {
  std::vector<PulsePlan> due;
  auto is_due = [&](const PulsePlan& p) {
    if (p.at_ns) return *p.at_ns <= now_ns;
    return belt.position_at(now_ns + p.lead_ns) >= p.target_count;
  };
  auto split = std::stable_partition(pending_.begin(), pending_.end(),
                                     [&](const PulsePlan& p) { return !is_due(p); });
  due.assign(split, pending_.end());
  pending_.erase(split, pending_.end());
  std::stable_sort(due.begin(), due.end(), [](const PulsePlan& a, const PulsePlan& b) {
    return a.target_count < b.target_count;
  });
  return due;
}

void PulseQueue::shift(double offset) {
  for (auto& p : pending_)
    if (!p.at_ns) p.target_count += offset;
}

std::int64_t PulseQueue::next_due_ns(std::int64_t now_ns, const BeltClock& belt) const {
  std::int64_t next = std::numeric_limits<std::int64_t>::max();
  for (const auto& p : pending_) {
    std::int64_t t = p.at_ns ? *p.at_ns : belt.time_at(p.target_count, now_ns + p.lead_ns);
    if (!p.at_ns && t != std::numeric_limits<std::int64_t>::max()) t -= p.lead_ns;
    next = std::min(next, t);
  }
  return next;
}

}  // namespace torchinfer
