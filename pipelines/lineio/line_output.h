// What a decision does to the line: pulses on the PLC's outputs, the last
// part's registers, a queue of parts for the PLC's shift register. One
// interface so another protocol can come beside Modbus TCP; an
// implementation never blocks the caller (own thread, bounded queue) and
// counts every write it could not make (docs/line-io.md).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "lineio/belt_clock.h"
#include "lineio/belt_scheduler.h"

namespace torchinfer {

// Verdict codes in the registers: 0 none yet, 1 pass, 2 reject, 3 late.
enum class LineVerdictCode : std::uint16_t { none = 0, pass = 1, reject = 2, late = 3 };

// The last decided part, for the PLC/HMI.
struct LinePartRecord {
  long long part_id = 0;
  int class_id = -1;  // the part's label index; -1 unknown
  LineVerdictCode verdict = LineVerdictCode::none;
  double score = 0;  // the verdict's score, 0..1
};

// One entry of the shift-register queue: the (wrapped) encoder count at
// which the part reaches the ejector, and its verdict.
struct LineQueueEntry {
  long long part_id = 0;
  std::int64_t ejector_count = 0;
  LineVerdictCode verdict = LineVerdictCode::none;
};

enum class LineState { connecting, connected, reconnecting, stopped };
const char* line_state_name(LineState s);

struct LineStats {
  LineState state = LineState::connecting;
  std::uint64_t pulses_reject = 0, pulses_pass = 0, pulses_recheck = 0;
  std::uint64_t pulses_lost = 0;    // due while the PLC was unreachable, or the write failed
  std::uint64_t pulses_merged = 0;  // came while the same output was still on
  std::uint64_t writes = 0, write_failures = 0;
  std::uint64_t queue_overflow = 0;  // commands refused: the queue was full
  std::uint64_t reconnects = 0;      // connections made after a loss
  std::uint64_t encoder_reads = 0, encoder_failures = 0;
  std::uint64_t encoder_slow = 0;
  std::uint64_t encoder_resets = 0;  // the counter went back (a PLC restart): pulses re-based    //
                                     // readings left out: round trip far longer than usual
  std::int64_t last_encoder_ns = 0;  // steady clock of the last encoder reading, 0: none
  std::uint64_t pending_pulses = 0;
  std::uint64_t queued_ahead = 0;  // queue mode: entries whose part has not reached the ejector
  // Synchronised pulses: the most counts past its moment one went out.
  double max_overshoot_counts = 0;
};

class LineOutput {
 public:
  virtual ~LineOutput() = default;
  // Each returns at once; false when the queue was full (counted).
  virtual bool pulse(const PulsePlan& p) = 0;
  virtual bool publish(const LinePartRecord& r) = 0;
  virtual bool enqueue(const LineQueueEntry& e) = 0;
  // The belt as the output sees it (encoder readings, or the set speed).
  virtual const BeltClock& belt() const = 0;
  virtual LineStats stats() const = 0;
  // Waits (at most timeout_ns) until every queued command is done, every
  // pending pulse has fired and the belt has carried every part written to
  // the PLC's queue past the ejector; returns what is still pending then.
  // For the end of a stream: the parts still on the belt get their pulses
  // (and the heartbeat goes on until they have).
  virtual std::size_t drain(std::int64_t timeout_ns) = 0;
};

std::int64_t steady_now_ns();

}  // namespace torchinfer
