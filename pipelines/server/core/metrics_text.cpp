#include "server/core/metrics_text.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "server/core/exposition.h"
#include "server/core/stream_health.h"

namespace torchinfer::server {

namespace {

Labels stream_labels(const StreamFigures& s) {
  return {{"stream", s.id}, {"model", s.model}};
}

template <typename Get>
void stream_counter(Exposition& w, const MetricsSnapshot& m, const std::string& name,
                    const std::string& help, Get get) {
  w.family(name, "counter", help);
  for (const auto& s : m.streams)
    w.sample(name, stream_labels(s), static_cast<std::uint64_t>(get(s)));
}

template <typename Get>
void camera_counter(Exposition& w, const MetricsSnapshot& m, const std::string& name,
                    const std::string& help, Get get) {
  w.family(name, "counter", help);
  for (const auto& s : m.streams)
    if (s.camera) w.sample(name, stream_labels(s), static_cast<std::uint64_t>(get(s)));
}

template <typename Get>
void camera_gauge(Exposition& w, const MetricsSnapshot& m, const std::string& name,
                  const std::string& help, Get get) {
  w.family(name, "gauge", help);
  for (const auto& s : m.streams)
    if (s.camera) w.sample(name, stream_labels(s), static_cast<double>(get(s)));
}

// Machine-vision cameras' health (aravis:// streams only).
void render_camera_series(Exposition& w, const MetricsSnapshot& m) {
  camera_counter(w, m, "torchinfer_camera_frames_received_total",
                 "Complete frames received from the machine-vision camera.",
                 [](const StreamFigures& s) { return s.camera_frames_received; });
  w.family("torchinfer_camera_frames_lost_total", "counter",
           "Frames the camera sent that never reached torchinfer, by reason: incomplete "
           "(packets missing), missing (frame ids skipped), overflow (the analysis was behind).");
  for (const auto& s : m.streams)
    if (s.camera) {
      const std::pair<const char*, std::uint64_t> reasons[] = {
          {"incomplete", s.camera_frames_incomplete},
          {"missing", s.camera_frames_missing},
          {"overflow", s.camera_frames_overflow}};
      for (const auto& [reason, n] : reasons)
        w.sample("torchinfer_camera_frames_lost_total",
                 stream_labels(s) + Labels{{"reason", reason}}, n);
    }
  camera_counter(w, m, "torchinfer_camera_packets_missing_total",
                 "GVSP packets that never arrived (Aravis' stream statistics).",
                 [](const StreamFigures& s) { return s.camera_packets_missing; });
  camera_counter(w, m, "torchinfer_camera_packets_resent_total",
                 "GVSP packets the camera sent again on request.",
                 [](const StreamFigures& s) { return s.camera_packets_resent; });
  camera_counter(w, m, "torchinfer_camera_triggers_total",
                 "Software triggers the camera answered with a frame (POST /streams/{id}/trigger).",
                 [](const StreamFigures& s) { return s.camera_triggers; });
  camera_counter(w, m, "torchinfer_camera_trigger_failures_total",
                 "Software triggers the camera did not act on: not sent, no frame in time, or "
                 "dropped with a lost camera.",
                 [](const StreamFigures& s) { return s.camera_trigger_failures; });
  camera_gauge(w, m, "torchinfer_camera_lost_ratio",
               "Share of the camera's frames lost over the last 10 s (0 to 1).",
               [](const StreamFigures& s) { return s.camera_lost_ratio; });
  camera_gauge(w, m, "torchinfer_camera_seconds_since_frame",
               "Seconds without a complete frame while one is expected (free-run, or a "
               "software trigger waiting); 0 otherwise.",
               [](const StreamFigures& s) { return s.camera_since_frame_s; });
}

template <typename Get>
void evidence_series(Exposition& w, const MetricsSnapshot& m, const std::string& name,
                     const char* type, const std::string& help, Get get) {
  w.family(name, type, help);
  for (const auto& s : m.streams)
    if (s.evidence) w.sample(name, stream_labels(s), static_cast<std::uint64_t>(get(s)));
}

// Cameras with "evidence" only (docs/server.md, "Evidence").
void render_evidence_series(Exposition& w, const MetricsSnapshot& m) {
  evidence_series(w, m, "torchinfer_stream_evidence_events_total", "counter",
                  "Events the stream kept evidence of (new tracks of its evidence classes).",
                  [](const StreamFigures& s) { return s.evidence_events; });
  w.family("torchinfer_stream_evidence_files_total", "counter",
           "Evidence files written, by kind (snapshot, crop, clip).");
  for (const auto& s : m.streams)
    if (s.evidence)
      for (const auto& [kind, n] :
           {std::pair<const char*, std::uint64_t>{"snapshot", s.evidence_snapshots},
            {"crop", s.evidence_crops},
            {"clip", s.evidence_clips}})
        w.sample("torchinfer_stream_evidence_files_total",
                 stream_labels(s) + Labels{{"kind", kind}}, n);
  evidence_series(w, m, "torchinfer_stream_evidence_write_failures_total", "counter",
                  "Evidence files lost: not written (disk full, folder unwritable) or never "
                  "made (the recorder's encoder or writer was behind).",
                  [](const StreamFigures& s) { return s.evidence_write_failures; });
  evidence_series(w, m, "torchinfer_stream_evidence_pruned_total", "counter",
                  "Events whose files retention deleted (max_events, max_bytes).",
                  [](const StreamFigures& s) { return s.evidence_pruned; });
  evidence_series(w, m, "torchinfer_stream_evidence_bytes", "gauge",
                  "Bytes of the stream's evidence files on disk.",
                  [](const StreamFigures& s) { return s.evidence_bytes; });
  w.family("torchinfer_stream_evidence_ring_frames_lost_total", "counter",
           "Encoded frames the evidence ring lost, by reason: queue (the encoder was behind; "
           "the analysis never waits) or memory (ring_max_bytes pushed them out early). Clips "
           "around them come out shorter.");
  for (const auto& s : m.streams)
    if (s.evidence)
      for (const auto& [reason, n] :
           {std::pair<const char*, std::uint64_t>{"queue", s.evidence_ring_dropped},
            {"memory", s.evidence_ring_evicted}})
        w.sample("torchinfer_stream_evidence_ring_frames_lost_total",
                 stream_labels(s) + Labels{{"reason", reason}}, n);
  evidence_series(w, m, "torchinfer_stream_evidence_clips_short_total", "counter",
                  "Clips shorter than pre_s + post_s by more than a frame.",
                  [](const StreamFigures& s) { return s.evidence_clips_short; });
  evidence_series(w, m, "torchinfer_stream_evidence_ring_bytes", "gauge",
                  "Memory of the stream's ring of encoded frames (bounded by ring_max_bytes).",
                  [](const StreamFigures& s) { return s.evidence_ring_bytes; });
}

// torchanalytics' counts of the streams' lines and zones. A line or zone
// changed or removed by PUT /streams/{id}/analytics starts again from 0: a
// counter reset to Prometheus.
void render_analytics_series(Exposition& w, const MetricsSnapshot& m) {
  w.family("torchinfer_line_crossings_total", "counter",
           "Tracked objects that crossed the line, by direction (forward: from the left to the "
           "right of P1->P2) and class.");
  for (const auto& s : m.streams)
    for (const LineCounts& l : s.lines)
      for (const auto& [label, c] : l.by_class)
        for (const auto& [direction, n] :
             {std::pair<const char*, std::uint64_t>{"forward", c.forward},
              {"backward", c.backward}})
          w.sample("torchinfer_line_crossings_total",
                   stream_labels(s) +
                       Labels{{"line", l.name}, {"direction", direction}, {"class", label}},
                   n);
  const std::pair<const char*, const char*> zone_families[] = {
      {"torchinfer_zone_entries_total", "Tracked objects that entered the zone."},
      {"torchinfer_zone_exits_total", "Tracked objects that left the zone (or were lost in it)."}};
  for (const auto& [name, help] : zone_families) {
    w.family(name, "counter", help);
    const bool entries = std::string(name) == "torchinfer_zone_entries_total";
    for (const auto& s : m.streams)
      for (const ZoneCounts& z : s.zones)
        w.sample(name, stream_labels(s) + Labels{{"zone", z.name}}, entries ? z.entered : z.exited);
  }
  w.family("torchinfer_zone_objects", "gauge", "Tracked objects inside the zone now.");
  for (const auto& s : m.streams)
    for (const ZoneCounts& z : s.zones)
      w.sample("torchinfer_zone_objects", stream_labels(s) + Labels{{"zone", z.name}}, z.inside);
}

// The server's stream counts and each stream's state.
void render_server_series(Exposition& w, const MetricsSnapshot& m) {
  w.family("torchinfer_streams", "gauge", "Streams configured now.");
  w.sample("torchinfer_streams", {}, static_cast<std::uint64_t>(m.streams.size()));
  w.family("torchinfer_streams_max", "gauge", "Most streams the server accepts (max_streams).");
  w.sample("torchinfer_streams_max", {}, static_cast<std::uint64_t>(m.max_streams));
  w.family("torchinfer_streams_stopping", "gauge",
           "Removed streams still shutting down (draining into their outputs).");
  w.sample("torchinfer_streams_stopping", {}, static_cast<std::uint64_t>(m.streams_stopping));
  w.family("torchinfer_streams_added_total", "counter", "Streams added since start.");
  w.sample("torchinfer_streams_added_total", {}, m.streams_added);
  w.family("torchinfer_streams_removed_total", "counter", "Streams removed since start.");
  w.sample("torchinfer_streams_removed_total", {}, m.streams_removed);

  w.family("torchinfer_stream_state", "gauge",
           "1 for the state the stream is in (starting, running, reconnecting, ended, failed, "
           "stopping, degraded, stalled), 0 for the others.");
  for (const auto& s : m.streams)
    for (int i = 0; i < kStreamStateCount; ++i) {
      const std::string st = to_string(static_cast<StreamState>(i));
      w.sample("torchinfer_stream_state", stream_labels(s) + Labels{{"state", st}},
               static_cast<std::uint64_t>(s.state == st));
    }
}

// torchinfer's frame accounting and latency per stream.
void render_frame_series(Exposition& w, const MetricsSnapshot& m) {
  stream_counter(w, m, "torchinfer_stream_frames_in_total", "Frames that entered torchinfer.",
                 [](const StreamFigures& s) { return s.frames_in; });
  stream_counter(w, m, "torchinfer_stream_frames_inferred_total",
                 "Frames that got an inference of their own.",
                 [](const StreamFigures& s) { return s.frames_inferred; });
  w.family("torchinfer_stream_frames_skipped_total", "counter",
           "Frames that left torchinfer without an inference of their own, by reason "
           "(interval, busy, no-regions, failed).");
  for (const auto& s : m.streams)
    for (std::size_t r = 0; r < kSkipReasons; ++r)
      w.sample("torchinfer_stream_frames_skipped_total",
               stream_labels(s) + Labels{{"reason", to_string(static_cast<SkipReason>(r))}},
               s.frames_skipped_by[r]);
  stream_counter(w, m, "torchinfer_stream_frames_dropped_total",
                 "Frames that entered torchinfer and never left (flushed by a seek or stop, "
                 "discarded after downstream stopped, refused by a full queue when live).",
                 [](const StreamFigures& s) { return s.frames_dropped; });
  w.family("torchinfer_stream_frames_in_flight", "gauge",
           "Frames inside torchinfer now (queued, in a batch, or waiting for queue space): in = "
           "inferred + skipped + dropped + in flight.");
  for (const auto& s : m.streams)
    w.sample("torchinfer_stream_frames_in_flight", stream_labels(s), s.frames_in_flight);
  stream_counter(w, m, "torchinfer_stream_frames_invalid_total",
                 "Inferred frames whose model outputs held NaN or infinity (no result trusted).",
                 [](const StreamFigures& s) { return s.frames_invalid; });
  stream_counter(w, m, "torchinfer_stream_frames_saturated_total",
                 "Inferred GRAY16 frames with model input clamped to white: the camera's samples "
                 "exceed input-bits.",
                 [](const StreamFigures& s) { return s.frames_saturated; });
  stream_counter(w, m, "torchinfer_stream_frames_out_total",
                 "Frames that reached the end of the stream's pipeline.",
                 [](const StreamFigures& s) { return s.frames_out; });
  stream_counter(w, m, "torchinfer_stream_reconnects_total",
                 "Times an RTSP source delivered frames again after losing its server.",
                 [](const StreamFigures& s) { return s.reconnects; });
  stream_counter(w, m, "torchinfer_stream_disconnects_total",
                 "Times an RTSP source lost its server (error, end of stream or stall).",
                 [](const StreamFigures& s) { return s.disconnects; });
  stream_counter(w, m, "torchinfer_stream_errors_total", "Pipeline errors of the stream.",
                 [](const StreamFigures& s) { return s.errors; });
  w.family("torchinfer_stream_fps", "gauge", "Frames per second through torchinfer, recent.");
  for (const auto& s : m.streams) w.sample("torchinfer_stream_fps", stream_labels(s), s.fps);
  w.family("torchinfer_stream_latency_seconds", "summary",
           "Queue + preprocessing + inference time of inferred frames; quantiles over the "
           "latest 1024.");
  for (const auto& s : m.streams)
    w.summary(stream_labels(s), {{0.5, s.latency_p50_s}, {0.99, s.latency_p99_s}}, s.latency_count,
              s.latency_sum_s);
}

// What the streams put out: detections, the RTSP re-stream.
void render_output_series(Exposition& w, const MetricsSnapshot& m) {
  w.family("torchinfer_stream_detections_total", "counter",
           "Detections on inferred frames, per class.");
  for (const auto& s : m.streams)
    for (const auto& [label, n] : s.detections)
      w.sample("torchinfer_stream_detections_total", stream_labels(s) + Labels{{"class", label}},
               n);
  w.family("torchinfer_stream_restream_clients", "gauge",
           "RTSP clients watching the stream's re-stream now (streams with restream on).");
  for (const auto& s : m.streams)
    if (s.restream)
      w.sample("torchinfer_stream_restream_clients", stream_labels(s),
               static_cast<std::uint64_t>(s.restream_clients));
  w.family("torchinfer_stream_restream_frames_sent_total", "counter",
           "Annotated frames handed to the RTSP re-stream's encoder.");
  for (const auto& s : m.streams)
    if (s.restream)
      w.sample("torchinfer_stream_restream_frames_sent_total", stream_labels(s),
               s.restream_frames_sent);
  w.family("torchinfer_stream_restream_frames_dropped_total", "counter",
           "Annotated frames the RTSP re-stream lost because its encoder was behind (the "
           "analysis never waits for it).");
  for (const auto& s : m.streams)
    if (s.restream)
      w.sample("torchinfer_stream_restream_frames_dropped_total", stream_labels(s),
               s.restream_frames_dropped);
}

// The models, and the streams' MQTT messages.
void render_model_series(Exposition& w, const MetricsSnapshot& m) {
  w.family("torchinfer_model_loaded", "gauge", "1 when the model is loaded.");
  for (const auto& md : m.models)
    w.sample("torchinfer_model_loaded", Labels{{"model", md.id}},
             static_cast<std::uint64_t>(md.loaded));
  w.family("torchinfer_model_load_seconds", "gauge",
           "Time to load, optimise and warm up the model.");
  for (const auto& md : m.models)
    w.sample("torchinfer_model_load_seconds", Labels{{"model", md.id}}, md.load_seconds);
  w.family("torchinfer_model_streams", "gauge", "Streams sharing the model now.");
  for (const auto& md : m.models)
    w.sample("torchinfer_model_streams", Labels{{"model", md.id}},
             static_cast<std::uint64_t>(md.streams));
  w.family("torchinfer_model_frames_inferred_total", "counter",
           "Frames the model inferred, every stream since start (removed ones included).");
  for (const auto& md : m.models)
    w.sample("torchinfer_model_frames_inferred_total", Labels{{"model", md.id}},
             md.frames_inferred);

  w.family("torchinfer_stream_mqtt_messages_total", "counter",
           "MQTT messages of the stream's results, by result: published (delivered), failed "
           "(sent, not delivered), dropped (never sent: queue full while the broker was away).");
  for (const auto& s : m.streams)
    if (s.mqtt)
      for (const auto& [result, n] :
           {std::pair<const char*, std::uint64_t>{"published", s.mqtt_published},
            {"failed", s.mqtt_failed},
            {"dropped", s.mqtt_dropped}})
        w.sample("torchinfer_stream_mqtt_messages_total",
                 stream_labels(s) + Labels{{"result", result}}, n);
}

// REST replies and the process (the standard process_* names).
void render_process_series(Exposition& w, const MetricsSnapshot& m) {
  w.family("torchinfer_http_requests_total", "counter", "REST requests answered, by status code.");
  for (const auto& [code, n] : m.http_requests)
    w.sample("torchinfer_http_requests_total", Labels{{"code", code}}, n);

  const ProcessFigures& p = m.process;
  w.family("process_cpu_seconds_total", "counter", "User and system CPU time spent in seconds.");
  w.sample("process_cpu_seconds_total", {}, p.cpu_seconds);
  w.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  w.sample("process_resident_memory_bytes", {}, p.resident_bytes);
  w.family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
  w.sample("process_virtual_memory_bytes", {}, p.virtual_bytes);
  w.family("process_open_fds", "gauge", "Number of open file descriptors.");
  w.sample("process_open_fds", {}, p.open_fds);
  w.family("process_max_fds", "gauge", "Maximum number of open file descriptors.");
  w.sample("process_max_fds", {}, p.max_fds);
  w.family("process_threads", "gauge", "Number of OS threads in the process.");
  w.sample("process_threads", {}, static_cast<std::uint64_t>(p.threads));
  w.family("process_start_time_seconds", "gauge",
           "Start time of the process since unix epoch in seconds.");
  w.sample("process_start_time_seconds", {}, p.start_time_seconds);
}

}  // namespace

std::string render_prometheus(const MetricsSnapshot& m) {
  Exposition w;
  render_server_series(w, m);
  render_frame_series(w, m);
  render_output_series(w, m);
  render_camera_series(w, m);
  render_evidence_series(w, m);
  render_analytics_series(w, m);
  render_model_series(w, m);
  render_process_series(w, m);
  return w.str();
}

ProcessFigures read_process_figures() {
  ProcessFigures p;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (std::getline(stat, line)) {
    // The command name (field 2) may hold spaces; fields resume after ')'.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string f[24];
    for (auto& x : f) rest >> x;
    // rest starts at field 3 (state): utime 14, stime 15, threads 20,
    // starttime 22, vsize 23, rss 24.
    try {
      p.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / tick;
      p.threads = std::stoi(f[17]);
      const double start_ticks = std::stod(f[19]);
      p.virtual_bytes = std::stoull(f[20]);
      p.resident_bytes = static_cast<std::uint64_t>(std::stod(f[21]) * page);
      std::ifstream s("/proc/stat");
      for (std::string l; std::getline(s, l);)
        if (l.rfind("btime ", 0) == 0)
          p.start_time_seconds = std::stod(l.substr(6)) + start_ticks / tick;
    } catch (const std::exception&) {
      // A kernel without these fields: the figures stay 0.
    }
  }
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) p.open_fds += e->d_name[0] != '.';
    closedir(d);
    p.open_fds--;  // the descriptor of the listing itself
  }
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) p.max_fds = rl.rlim_cur;
  return p;
}

}  // namespace torchinfer::server
