// torchinfer-qa-line --plc and torchinfer-server's per-camera "plc": every
// decided part to the PLC (docs/line-io.md).
// The part's last sighting (box centre, frame time) and its verdict go to
// the belt scheduler; the Modbus output fires its pulse when the part
// reaches the ejector (or, in queue mode, writes it into the PLC's queue).
// Runs on the streaming thread but never waits on the network.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lineio/belt_scheduler.h"
#include "lineio/modbus_output.h"
#include "lineio/plc_settings.h"
#include "parts/core/part_verdicts.h"

namespace torchinfer::qa {

class QaPlc {
 public:
  // Throws std::invalid_argument with the reason when it cannot start.
  // part_classes: their index is the part's class register. `app` starts
  // every message ("qa-line", "torchinfer-server: stream s1"); `exit_note`
  // ends the incomplete-output error (the QA app's exit status).
  QaPlc(const PlcOptions& o, std::vector<std::string> part_classes, std::string app = "qa-line",
        std::string exit_note = "; exit status 1");
  // Each part's place in this frame; frame_ns on the steady clock.
  void see(const QaFrame& f, std::int64_t frame_ns);
  // Schedules the part's pulse; the decision line's "plc" object.
  nlohmann::ordered_json decided(const QaDecision& d, std::int64_t now_ns);
  // End of stream: waits until the parts still on the belt had their
  // pulses (bounded), prints the counts; the summary's "plc" object.
  // `failed` is set when a pulse or a write was lost.
  nlohmann::ordered_json finish(bool* failed);

  // The output's and the scheduler's counters now; any thread (the server's
  // status and /metrics while the camera runs, or after finish()).
  struct Figures {
    LineStats line;
    SchedulerCounts scheduled;
    std::uint64_t unseen = 0;
  };
  Figures figures() const;

 private:
  PlcOptions opt_;
  std::unique_ptr<ModbusOutput> out_;
  BeltScheduler sched_;
  std::map<int, PartSighting> last_seen_;  // track id -> its newest sighting
  std::uint64_t unseen_ = 0;               // decisions of parts never seen (none expected)
  std::vector<std::string> classes_;
  std::string app_, exit_note_;
  // decided() and figures(): the scheduler's counts; finish(): out_ going.
  mutable std::mutex mu_;
  LineStats final_;  // the output's last counters, once it is gone
};

}  // namespace torchinfer::qa
