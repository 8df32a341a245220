// The Prometheus text exposition (format 0.0.4, written by prometheus-cpp:
// server/exposition.h) of a server's figures:
// per-stream and per-model counters, gauges and latency summaries, and the
// process's CPU, memory and descriptors under the standard process_* names.
// The glue gathers a MetricsSnapshot; rendering is pure and tested here
// (and the output is checked with `promtool check metrics`).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analytics/analytics.h"
#include "common/stream_stats.h"

namespace torchinfer::server {

struct StreamFigures {
  std::string id, model, state;
  // torchinfer's counters, read at one moment: frames_in = frames_inferred +
  // frames_skipped + frames_dropped + frames_in_flight (common/stream_stats.h).
  std::uint64_t frames_in = 0, frames_inferred = 0, frames_skipped = 0, frames_dropped = 0,
                frames_in_flight = 0;
  std::uint64_t frames_in_flight_limit = 0;                     // the most frames_in_flight can be
  std::array<std::uint64_t, kSkipReasons> frames_skipped_by{};  // indexed by SkipReason
  std::uint64_t frames_out = 0;  // at the end of the pipeline (after torchinfer)
  // Inferred frames whose result cannot be trusted: outputs with NaN or
  // infinity, and GRAY16 input clamped to white (input-bits too low).
  std::uint64_t frames_invalid = 0, frames_saturated = 0;
  double fps = 0;
  double latency_p50_s = 0, latency_p99_s = 0, latency_sum_s = 0;
  std::uint64_t latency_count = 0;
  std::uint64_t reconnects = 0, disconnects = 0, errors = 0;
  std::map<std::string, std::uint64_t> detections;  // per class label
  // MQTT ("mqtt_topic" set only): torchpublish's message counters.
  bool mqtt = false;
  std::uint64_t mqtt_published = 0, mqtt_failed = 0, mqtt_dropped = 0;
  // The RTSP re-stream ("restream": true only).
  bool restream = false;
  int restream_clients = 0;
  std::uint64_t restream_frames_sent = 0, restream_frames_dropped = 0;
  // A machine-vision camera (aravis://) only: frames the camera sent, and
  // those that never reached torchinfer (server/frame_loss.h), Aravis'
  // packet statistics and the software triggers sent.
  bool camera = false;
  std::uint64_t camera_frames_received = 0, camera_frames_incomplete = 0, camera_frames_missing = 0,
                camera_frames_overflow = 0;
  std::uint64_t camera_packets_missing = 0, camera_packets_resent = 0, camera_triggers = 0,
                camera_trigger_failures = 0;
  // Over the camera's health window (server/camera_health.h): the share of
  // frames lost, and seconds without a complete frame while one is expected.
  double camera_lost_ratio = 0, camera_since_frame_s = 0;
  // Evidence ("evidence" set only): the store's counters (the recorder's
  // losses folded into write failures) and the encoded ring's memory.
  bool evidence = false;
  std::uint64_t evidence_events = 0, evidence_snapshots = 0, evidence_crops = 0, evidence_clips = 0,
                evidence_write_failures = 0, evidence_pruned = 0, evidence_bytes = 0,
                evidence_ring_bytes = 0;
  // Frames the ring never got (its queue was behind the encoder) or lost
  // early (ring_max_bytes), and clips shorter than asked because of them.
  std::uint64_t evidence_ring_dropped = 0, evidence_ring_evicted = 0, evidence_clips_short = 0;
  // torchanalytics ("track": true): the counts of the stream's lines and
  // zones, as on its latest frame.
  std::vector<LineCounts> lines;
  std::vector<ZoneCounts> zones;
  // "parts": decided parts by verdict; "plc": the PLC output's counters
  // (lineio/line_output.h), rendered by server/line_metrics.h.
  bool parts = false, plc = false, plc_connected = false;
  std::map<std::string, std::uint64_t> parts_decided;  // "pass", "reject", "incomplete"
  std::map<std::string, std::uint64_t> plc_pulses;     // by output: reject, pass, recheck
  std::uint64_t plc_pulses_lost = 0, plc_late_parts = 0, plc_write_failures = 0;
  double plc_encoder_age_s = -1;  // since the last encoder reading; -1: none (or no encoder)
  // "codes": torchcodes' counters and the streaming thread's time in it.
  bool codes = false;
  std::uint64_t codes_read = 0, codes_failed = 0, codes_tried = 0, codes_late = 0;
  double codes_read_seconds = 0;
};

struct ModelFigures {
  std::string id;
  double load_seconds = 0;
  std::uint64_t frames_inferred = 0;  // every stream's since start, removed ones included
  int streams = 0;
  bool loaded = false;
};

struct ProcessFigures {
  double cpu_seconds = 0, start_time_seconds = 0;
  std::uint64_t resident_bytes = 0, virtual_bytes = 0, open_fds = 0, max_fds = 0;
  int threads = 0;
};

struct MetricsSnapshot {
  std::vector<StreamFigures> streams;
  std::vector<ModelFigures> models;
  ProcessFigures process;
  std::uint64_t streams_added = 0, streams_removed = 0;
  int streams_stopping = 0;  // removed, still shutting down
  int max_streams = 0;
  std::map<std::string, std::uint64_t> http_requests;  // by status code
};

std::string render_prometheus(const MetricsSnapshot& m);

// The process's own figures from /proc/self (Linux).
ProcessFigures read_process_figures();

}  // namespace torchinfer::server
