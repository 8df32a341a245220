#include "parts/qa_plc.h"

#include <gst/gst.h>

#include <algorithm>
#include <stdexcept>

namespace torchinfer::qa {

namespace {

// Tracks never decided (duplicates) would otherwise stay: keep the newest.
constexpr std::size_t kMaxSightings = 4096;

ModbusOptions with_log(ModbusOptions m, const std::string& app) {
  m.log = [app](const std::string& s) { g_printerr("%s: %s\n", app.c_str(), s.c_str()); };
  return m;
}

LineVerdictCode code(QaVerdict v) {
  return v == QaVerdict::kPass ? LineVerdictCode::pass : LineVerdictCode::reject;
}

const char* outcome_name(DecisionOutcome o) {
  switch (o) {
    case DecisionOutcome::scheduled:
      return "scheduled";
    case DecisionOutcome::late:
      return "late";
    case DecisionOutcome::late_unfired:
      return "late-unfired";
    case DecisionOutcome::duplicate:
      return "duplicate";
    case DecisionOutcome::no_encoder:
      return "no-encoder";
  }
  return "?";
}

}  // namespace

QaPlc::QaPlc(const PlcOptions& o, std::vector<std::string> part_classes, std::string app,
             std::string exit_note)
    : opt_(o),
      out_(std::make_unique<ModbusOutput>(with_log(o.modbus, app))),
      sched_(o.calibration, o.ejector),
      classes_(std::move(part_classes)),
      app_(std::move(app)),
      exit_note_(std::move(exit_note)) {}

QaPlc::Figures QaPlc::figures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {out_ ? out_->stats() : final_, sched_.counts(), unseen_};
}

void QaPlc::see(const QaFrame& f, std::int64_t frame_ns) {
  for (const auto& p : f.parts) {
    const double cx = p.box.center_x(), cy = p.box.center_y();
    last_seen_[p.id] = {p.id, along_belt(opt_, cx, cy), frame_ns};
  }
  while (last_seen_.size() > kMaxSightings) last_seen_.erase(last_seen_.begin());
}

nlohmann::ordered_json QaPlc::decided(const QaDecision& d, std::int64_t now_ns) {
  auto it = last_seen_.find(d.part);
  if (it == last_seen_.end()) {
    std::lock_guard<std::mutex> lock(mu_);
    unseen_++;
    g_printerr("%s: warning: part #%d decided but never seen: no PLC output\n", app_.c_str(),
               d.part);
    return {{"outcome", "unseen"}};
  }
  const PartSighting seen = it->second;
  last_seen_.erase(it);
  // An incomplete part (never judged) is rejected: the safe side.
  const bool reject = d.verdict != QaVerdict::kPass;
  DecisionResult r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    r = sched_.decide(seen, reject, now_ns, out_->belt());
  }
  nlohmann::ordered_json j = {{"outcome", outcome_name(r.outcome)}};
  if (r.outcome == DecisionOutcome::duplicate || r.outcome == DecisionOutcome::no_encoder) {
    g_printerr("%s: warning: part #%d: no PLC output (%s)\n", app_.c_str(), d.part,
               outcome_name(r.outcome));
    return j;
  }
  j["ejector_count"] = r.target_count;
  const bool late = r.outcome != DecisionOutcome::scheduled;
  j["late"] = late;
  if (late)
    g_printerr("%s: warning: part #%d is late: its verdict came after its pulse moment; %s\n",
               app_.c_str(), d.part,
               r.pulse ? "fail-safe output fired" : "no output (reject-late false)");
  if (opt_.queue_mode && !late) {
    out_->enqueue(
        {d.part, static_cast<std::int64_t>(std::llround(r.target_count)), code(d.verdict)});
    j["queued"] = true;
  } else if (r.pulse) {
    out_->pulse(*r.pulse);
    j["coil"] = line_coil_name(r.pulse->coil);
  }
  const auto cls = std::find(classes_.begin(), classes_.end(), d.label);
  const int class_id = cls == classes_.end() ? -1 : static_cast<int>(cls - classes_.begin());
  out_->publish({d.part, class_id, late ? LineVerdictCode::late : code(d.verdict), d.top_score});
  return j;
}

nlohmann::ordered_json QaPlc::finish(bool* failed) {
  // The parts between the camera and the ejector still get their pulses:
  // wait for the belt to carry them there (twice the travel at the current
  // speed, 5 s to 2 min).
  const double speed = out_->belt().speed();
  const double travel_s =
      speed > 0 ? opt_.ejector.distance_units * opt_.calibration.counts_per_unit / speed : 60;
  const double wait_s = std::clamp(2 * travel_s + 2, 5.0, 120.0);
  const std::size_t undrained = out_->drain(static_cast<std::int64_t>(wait_s * 1e9));
  const LineStats s = out_->stats();
  const SchedulerCounts& c = sched_.counts();
  nlohmann::ordered_json j = {{"state", line_state_name(s.state)},
                              {"pulses_reject", s.pulses_reject},
                              {"pulses_pass", s.pulses_pass},
                              {"pulses_recheck", s.pulses_recheck},
                              {"pulses_lost", s.pulses_lost},
                              {"pulses_merged", s.pulses_merged},
                              {"late", c.late},
                              {"duplicates", c.duplicates},
                              {"no_encoder", c.no_encoder},
                              {"unseen", unseen_},
                              {"writes", s.writes},
                              {"write_failures", s.write_failures},
                              {"queue_overflow", s.queue_overflow},
                              {"reconnects", s.reconnects},
                              {"encoder_reads", s.encoder_reads},
                              {"encoder_failures", s.encoder_failures},
                              {"encoder_resets", s.encoder_resets},
                              {"undrained", undrained}};
  g_printerr(
      "%s: PLC: %s reject, %s pass, %s recheck pulses; %s late parts; %s lost pulses, "
      "%s of %s writes failed, %s reconnects, %s not sent at the end\n",
      app_.c_str(), j["pulses_reject"].dump().c_str(), j["pulses_pass"].dump().c_str(),
      j["pulses_recheck"].dump().c_str(), j["late"].dump().c_str(), j["pulses_lost"].dump().c_str(),
      j["write_failures"].dump().c_str(), j["writes"].dump().c_str(),
      j["reconnects"].dump().c_str(), j["undrained"].dump().c_str());
  *failed = s.pulses_lost + s.write_failures + s.queue_overflow + undrained + c.no_encoder +
                c.duplicates + unseen_ >
            0;
  if (*failed)
    g_printerr(
        "%s: error: PLC output incomplete (lost pulses, failed writes or parts "
        "without output)%s\n",
        app_.c_str(), exit_note_.c_str());
  std::unique_ptr<ModbusOutput> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    final_ = out_->stats();
    gone = std::move(out_);
  }
  gone.reset();  // outputs off, connection closed
  return j;
}

}  // namespace torchinfer::qa
