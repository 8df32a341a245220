// One camera's evidence ring alone (tests/bench/evidence_ring.py drives it;
// docs/evidence.md has the figures): SOURCE ! tee ! fakesink, with or
// without the EvidenceRecorder's branch on the tee, optionally an event
// every N seconds. Prints one JSON line: process CPU over the stream (first
// frame to EOS), the ring's peak bytes and the encoder's bytes/s, losses and
// the clips' lengths.
#include <gst/gst.h>
#include <gst/video/video.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "evidence/evidence_recorder.h"

namespace {

double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Bench {
  torchinfer::EvidenceRecorder* recorder = nullptr;
  double event_every_s = 0;
  std::int64_t next_event = -1;
  std::uint64_t frames = 0;
  double cpu0 = 0;
  gint64 wall0 = 0;
};

// Counts frames, starts the clock on the first and records the events.
GstPadProbeReturn on_frame(GstPad* pad, GstPadProbeInfo* info, gpointer user) {
  auto* b = static_cast<Bench*>(user);
  GstBuffer* buf = GST_PAD_PROBE_INFO_BUFFER(info);
  if (b->frames++ == 0) {
    b->cpu0 = cpu_s();
    b->wall0 = g_get_monotonic_time();
  }
  if (!b->recorder || b->event_every_s <= 0) return GST_PAD_PROBE_OK;
  const auto pts = static_cast<std::int64_t>(GST_BUFFER_PTS(buf));
  if (b->next_event < 0) b->next_event = static_cast<std::int64_t>(b->event_every_s * 1e9);
  if (pts < b->next_event) return GST_PAD_PROBE_OK;
  b->next_event += static_cast<std::int64_t>(b->event_every_s * 1e9);
  GstCaps* caps = gst_pad_get_current_caps(pad);
  GstVideoInfo vi;
  gst_video_info_from_caps(&vi, caps);
  gst_caps_unref(caps);
  torchinfer::evidence::EventRecord e;
  e.camera = "bench";
  e.reason = "bench";
  e.pts_ns = pts;
  const int w = GST_VIDEO_INFO_WIDTH(&vi), h = GST_VIDEO_INFO_HEIGHT(&vi);
  b->recorder->record(e, buf, vi, cv::Rect(w / 4, h / 4, w / 2, h / 2));
  return GST_PAD_PROBE_OK;
}

int usage() {
  std::fprintf(stderr,
               "usage: evidence-ring-bench SOURCE none|jpeg|h264 DIR [EVENT_EVERY_S [PRE_S "
               "POST_S]]\n  SOURCE: a launch fragment ending in raw video\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  if (argc < 4) return usage();
  const std::string source = argv[1], encoder = argv[2], dir = argv[3];
  Bench b;
  b.event_every_s = argc > 4 ? std::atof(argv[4]) : 0;
  torchinfer::evidence::EvidenceSettings s;
  s.dir = dir;
  if (argc > 6) {
    s.pre_s = std::atof(argv[5]);
    s.post_s = std::atof(argv[6]);
  }
  GError* err = nullptr;
  GstElement* p = gst_parse_launch((source + " ! tee name=t ! fakesink sync=false").c_str(), &err);
  if (!p) {
    std::fprintf(stderr, "evidence-ring-bench: %s\n", err ? err->message : "parse error");
    return 1;
  }
  std::unique_ptr<torchinfer::EvidenceRecorder> rec;
  GstElement* tee = gst_bin_get_by_name(GST_BIN(p), "t");
  if (encoder != "none") {
    torchinfer::RecorderOptions o;
    o.encoder = encoder;
    rec = std::make_unique<torchinfer::EvidenceRecorder>(
        std::make_shared<torchinfer::evidence::EvidenceStore>(s, "bench"), o);
    std::string why;
    if (!rec->attach(p, tee, &why)) {
      std::fprintf(stderr, "evidence-ring-bench: %s\n", why.c_str());
      return 1;
    }
    b.recorder = rec.get();
  }
  GstPad* sink = gst_element_get_static_pad(tee, "sink");
  gst_pad_add_probe(sink, GST_PAD_PROBE_TYPE_BUFFER, on_frame, &b, nullptr);
  gst_object_unref(sink);
  gst_object_unref(tee);
  gst_element_set_state(p, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(p);
  GstMessage* m = gst_bus_timed_pop_filtered(
      bus, GST_CLOCK_TIME_NONE, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  const bool ok = GST_MESSAGE_TYPE(m) == GST_MESSAGE_EOS;
  gst_message_unref(m);
  gst_object_unref(bus);
  if (rec) rec->finish();
  const double cpu = cpu_s() - b.cpu0;
  const double wall = (g_get_monotonic_time() - b.wall0) / 1e6;
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
  nlohmann::ordered_json j;
  j["encoder"] = encoder;
  j["ok"] = ok;
  j["frames"] = b.frames;
  j["wall_s"] = wall;
  j["cpu_s"] = cpu;
  if (rec) {
    const auto l = rec->losses();
    const auto c = rec->counters();
    j["ring_peak_bytes"] = l.ring_peak_bytes;
    j["bytes_encoded"] = l.bytes_encoded;
    j["frames_encoded"] = l.frames_encoded;
    j["queue_dropped"] = l.queue_dropped;
    j["ring_evicted_early"] = l.ring_evicted_early;
    j["events"] = c.events;
    j["clips"] = c.clips;
    j["write_failures"] = c.write_failures;
    auto& secs = j["clip_seconds"] = nlohmann::ordered_json::array();
    for (const auto& e : rec->store().list(1000)) secs.push_back(e.clip_seconds);
    j["asked_s"] = s.pre_s + s.post_s;
  }
  std::printf("%s\n", j.dump().c_str());
  return ok ? 0 : 1;
}
