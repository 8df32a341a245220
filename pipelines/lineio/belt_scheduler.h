// Position-synchronised rejects (docs/line-io.md): where a decided part is
// on the belt, when its pulse must go out so that the ejector acts as the
// part reaches it, and whether the verdict came too late for that. Pure
// logic on a BeltClock: no sockets, no threads, deterministic.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <set>
#include <vector>

#include "lineio/belt_clock.h"

namespace torchinfer {

enum class LineCoil { reject, pass, recheck };
const char* line_coil_name(LineCoil c);

// From image to belt (docs/line-io.md, "Calibration").
struct BeltCalibration {
  double units_per_px = 1.0;     // belt units (e.g. mm) per pixel along the belt's direction
  double ref_px = 0.0;           // the reference line, in pixels along the belt's direction
  double counts_per_unit = 1.0;  // encoder counts per belt unit (set-speed mode: the same scale)
};

struct EjectorConfig {
  double distance_units = 0;  // D: reference line -> ejector, belt units
  std::int64_t lead_ns = 0;   // the actuator's lead: the output goes out this early
  // A late part (its pulse moment had passed when its verdict came): true
  // fires the recheck output (or the reject) at once; false fires nothing.
  bool reject_late = true;
  bool pass_pulses = true;   // a passed part gets a pulse on the pass output
  bool has_recheck = false;  // late parts go to the recheck output, not the reject
  // Decided track ids remembered to refuse a second decision (the oldest
  // are forgotten past this; track ids only grow, so that is safe).
  std::size_t remembered_ids = 65536;
};

// Where a part was seen: its box centre along the belt's direction (after
// the direction is applied: growing downstream) in the frame at frame_ns
// (steady clock).
struct PartSighting {
  long long track_id = 0;
  double along_px = 0;
  std::int64_t frame_ns = 0;
};

// One pulse to send. Position-synchronised: when the belt, `lead_ns` ahead,
// reaches target_count. Time-based (the fixed-delay rule, or a late part
// fired at once): at at_ns.
struct PulsePlan {
  long long track_id = 0;
  LineCoil coil = LineCoil::reject;
  double target_count = 0;  // the belt count at which the part is at the ejector
  std::int64_t lead_ns = 0;
  std::optional<std::int64_t> at_ns;
  bool late = false;
};

enum class DecisionOutcome { scheduled, late, late_unfired, duplicate, no_encoder };

struct DecisionResult {
  DecisionOutcome outcome = DecisionOutcome::scheduled;
  double target_count = 0;  // where the part reaches the ejector (not for duplicate/no_encoder)
  std::optional<PulsePlan> pulse;
};

struct SchedulerCounts {
  std::uint64_t decided = 0, late = 0, duplicates = 0, no_encoder = 0;
};

class BeltScheduler {
 public:
  BeltScheduler(BeltCalibration cal, EjectorConfig ejector);
  // The part's verdict, known at now_ns. One decision per track id: a
  // second one is refused (duplicate), nothing fired.
  DecisionResult decide(const PartSighting& seen, bool reject, std::int64_t now_ns,
                        const BeltClock& belt);
  // The belt count at which a part seen so reaches the ejector.
  double target_count(const PartSighting& seen, const BeltClock& belt) const;
  const SchedulerCounts& counts() const { return counts_; }

 private:
  bool remember(long long id);

  BeltCalibration cal_;
  EjectorConfig ej_;
  SchedulerCounts counts_;
  std::set<long long> ids_;
  std::deque<long long> id_order_;
};

// The pulses waiting for their moment, owned by the output's thread.
class PulseQueue {
 public:
  void add(const PulsePlan& p) { pending_.push_back(p); }
  // Takes out, in target order, the pulses due at now_ns: time-based ones
  // whose time has come, synchronised ones whose target the belt reaches
  // within their lead.
  std::vector<PulsePlan> take_due(std::int64_t now_ns, const BeltClock& belt);
  // When the next pulse is due as the belt moves now (INT64_MAX: none, or
  // the belt stands).
  std::int64_t next_due_ns(std::int64_t now_ns, const BeltClock& belt) const;
  std::size_t size() const { return pending_.size(); }
  // The belt's counts moved by `offset` (the encoder restarted): the
  // synchronised pulses' targets move with them.
  void shift(double offset);

 private:
  std::vector<PulsePlan> pending_;
};

}  // namespace torchinfer
