// torchinfer-qa-line's state (qa_line.cpp) and its outputs: the decision
// lines (file or stdout, and MQTT), the annotated video's file, the truth.
#pragma once

#include <gst/gst.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "export/mqtt_publisher.h"
#include "parts/core/decision_json.h"
#include "parts/core/part_verdicts.h"
#include "parts/qa_frames.h"
#include "parts/qa_plc.h"
#include "qa/qa_annotate.h"
#include "qa/qa_evidence.h"
#include "qa/qa_gate.h"
#include "qa/qa_options.h"
#include "qa/qa_plc_options.h"
#include "qa/qa_scores.h"

namespace torchinfer::qa::line {

struct App {
  qa::Options opt;
  torchinfer::QaRules rules;
  qa::ReadRules read;
  std::unique_ptr<torchinfer::PartVerdicts> verdicts;
  std::unique_ptr<qa::Scorer> scorer;
  std::unique_ptr<torchinfer::MqttPublisher> mqtt;  // --mqtt-host: each line also published
  std::uint64_t mqtt_messages = 0;
  qa::Annotator annotator;
  std::map<long long, std::string> verdict_of;  // part id -> verdict, for the scores
  std::map<long long, torchinfer::QaAnomalyVerdict> anomaly_of;  // part id -> anomaly verdict
  std::vector<double> detector_ms;              // forward() time of each inferred frame
  std::map<std::string, std::int64_t> invalid;  // results with NaN/inf outputs, by model
  std::unique_ptr<qa::QaEvidence> evidence;     // --evidence
  qa::PlcOptions plc_opt;                       // --plc (pipelines/parts/qa_plc.h)
  std::unique_ptr<qa::QaPlc> plc;
  qa::GateCounts gate;  // --gate: what torchanalytics counted, the verdicts at it
  FILE* out = stdout;
  int video_fd = -1;  // --out: the annotated video, for the pipeline's fdsink
  torchinfer::QaRunInfo info;
  GstElement* pipeline = nullptr;
  GMainLoop* loop = nullptr;
  int rc = 0;
  int signals = 0;
  // Set on the streaming thread when a decision could not be written: the
  // run stops and exits 1, since a lost pass/reject line is a lost decision.
  std::atomic<bool> write_failed{false};
  std::string write_error;
  // Set on the streaming thread when the clip is not the truth's (--truth):
  // the run stops, nothing is scored, exit 2.
  std::atomic<bool> truth_mismatch{false};
  // Set on the streaming thread when --gate does not fit the frame: exit 2.
  std::atomic<bool> gate_outside{false};
};

// Stops the run from a streaming thread: through the bus, since the main
// loop may not run yet (a quit then would be lost).
void stop_from_stream(App& app, const char* why);
// Writes one decision line (and publishes it with --mqtt-host); a failure
// stops the run (App::write_failed).
void write_line(App& app, const std::string& line);
// --truth: read and checked against --clip; false after saying why.
bool open_truth(App& app);
// --mqtt-host; false after saying why.
bool open_mqtt(App& app);
// The files the run reads and writes: exit status 1 if one cannot be used.
int open_files(App& app);
// Whether the run is scored: the truth is this clip's (else app.rc = 2).
bool truth_fits(App& app);
// Lines the broker never got: exit status 1.
void close_mqtt(App& app);
// Decision lines that were lost: exit status 1.
void close_output(App& app);

}  // namespace torchinfer::qa::line
