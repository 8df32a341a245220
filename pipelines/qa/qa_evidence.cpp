#include "qa/qa_evidence.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <tuple>

#include "qa/qa_pipeline.h"

namespace torchinfer::qa {

namespace {

// The frame's pixels (and its plane layout) in memory of its own: the
// pipeline's buffer goes back to its pool at once, and metas (the batch
// output the tensor meta holds) are not kept alive by the copy.
GstBuffer* copy_frame(GstBuffer* buf) {
  GstBuffer* c = gst_buffer_copy_region(
      buf,
      static_cast<GstBufferCopyFlags>(GST_BUFFER_COPY_MEMORY | GST_BUFFER_COPY_DEEP |
                                      GST_BUFFER_COPY_TIMESTAMPS),
      0, static_cast<gsize>(-1));
  if (!c) return nullptr;
  if (GstVideoMeta* m = gst_buffer_get_video_meta(buf))
    gst_buffer_add_video_meta_full(c, m->flags, m->format, m->width, m->height, m->n_planes,
                                   m->offset, m->stride);
  return c;
}

// The recorder's clock (evidence_store.h): the PTS of a stream played once
// from 0, the running time of any other.
std::int64_t running_time(GstPad* pad, GstBuffer* buf) {
  const GstClockTime pts = GST_BUFFER_PTS(buf);
  GstEvent* ev = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0);
  GstClockTime t = pts;
  if (ev) {
    const GstSegment* seg = nullptr;
    gst_event_parse_segment(ev, &seg);
    t = gst_segment_to_running_time(seg, GST_FORMAT_TIME, pts);
    gst_event_unref(ev);
  }
  return GST_CLOCK_TIME_IS_VALID(t) ? static_cast<std::int64_t>(t) : -1;
}

bool whole(const Box& b, const QaFrame& f, double margin) {
  return b.x_min >= margin && b.y_min >= margin && b.x_max <= f.width - margin &&
         b.y_max <= f.height - margin;
}

// How strongly a defect shows in this view: the best defect class's
// confidence (classifier or defect boxes), or the anomaly score.
double defect_score(const QaPart& p, const QaRules& rules) {
  double s = 0;
  for (const auto& [label, c] : p.evidence)
    if (rules.defect_classes.count(label)) s = std::max(s, c);
  if (p.anomaly) s = std::max(s, p.anomaly->score);
  return s;
}

cv::Rect pixel_box(const Box& b) {
  const int x0 = static_cast<int>(std::floor(b.x_min)), y0 = static_cast<int>(std::floor(b.y_min));
  return {x0, y0, static_cast<int>(std::ceil(b.x_max)) - x0,
          static_cast<int>(std::ceil(b.y_max)) - y0};
}

evidence::EvidenceSettings settings_of(const Options& o) {
  evidence::EvidenceSettings s;
  s.dir = o.evidence_dir;
  s.pre_s = o.evidence_pre_s;
  s.post_s = o.evidence_post_s;
  s.max_events = o.evidence_max_events;
  s.max_bytes = o.evidence_max_bytes;
  return s;
}

}  // namespace

QaEvidence::QaEvidence(const Options& o)
    : dir_(o.evidence_dir), pre_s_(o.evidence_pre_s), post_s_(o.evidence_post_s) {
  try {
    auto store = std::make_shared<evidence::EvidenceStore>(settings_of(o), "qa-line");
    RecorderOptions ro;
    ro.encoder = o.evidence_encoder;
    recorder_ = std::make_unique<EvidenceRecorder>(std::move(store), ro);
  } catch (const std::exception& e) {
    open_error_ = e.what();
    g_printerr(
        "qa-line: WARNING: --evidence %s: %s; the line runs on without evidence (every reject "
        "counted as lost, exit status 3)\n",
        dir_.c_str(), open_error_.c_str());
  }
}

QaEvidence::~QaEvidence() {
  for (auto& [part, b] : best_)
    if (b.frame) gst_buffer_unref(b.frame);
}

bool QaEvidence::attach(GstElement* pipeline, std::string* why) {
  GstElement* tee = gst_bin_get_by_name(GST_BIN(pipeline), kEvidenceTee);
  if (!tee) {
    *why = "the pipeline has no evidence tee";
    return false;
  }
  // Without a store the tee stays (one src pad, the outputs): no encoder runs.
  const bool ok = !recorder_ || recorder_->attach(pipeline, tee, why);
  gst_object_unref(tee);
  return ok;
}

void QaEvidence::add_frame(GstBuffer* buf, GstPad* pad, const QaFrame& frame,
                           const QaRules& rules) {
  if (!recorder_) return;
  if (!have_info_) {
    GstCaps* caps = gst_pad_get_current_caps(pad);
    have_info_ = caps && gst_video_info_from_caps(&info_, caps);
    if (caps) gst_caps_unref(caps);
    if (!have_info_) return;
  }
  now_ = running_time(pad, buf);
  for (const QaPart& p : frame.parts) {
    if (decided_.count(p.id)) continue;
    Best view;
    view.whole = whole(p.box, frame, rules.edge_margin);
    view.judged = p.judged;
    view.defect = p.judged ? defect_score(p, rules) : 0;
    view.confidence = p.confidence;
    Best& kept = best_[p.id];
    const auto rank = [](const Best& b) {
      return std::make_tuple(b.whole, b.judged, b.defect, b.confidence);
    };
    if (kept.frame && rank(view) <= rank(kept)) continue;
    const gint64 t0 = g_get_monotonic_time();
    GstBuffer* copy = copy_frame(buf);
    if (!copy) continue;
    copy_ms_ += (g_get_monotonic_time() - t0) / 1000.0;
    copies_++;
    copy_bytes_ += gst_buffer_get_size(copy);
    kept_bytes_ += gst_buffer_get_size(copy) - (kept.frame ? gst_buffer_get_size(kept.frame) : 0);
    kept_peak_bytes_ = std::max(kept_peak_bytes_, kept_bytes_);
    if (kept.frame) gst_buffer_unref(kept.frame);
    view.frame = copy;
    view.index = frame.index;
    view.box = pixel_box(p.box);
    kept = view;
  }
}

void QaEvidence::release(int part) {
  auto it = best_.find(part);
  if (it == best_.end()) return;
  if (it->second.frame) {
    kept_bytes_ -= gst_buffer_get_size(it->second.frame);
    gst_buffer_unref(it->second.frame);
  }
  best_.erase(it);
}

void QaEvidence::tracks_ended(const std::vector<int>& ids) {
  for (int id : ids) {
    release(id);
    decided_.erase(id);
  }
}

nlohmann::ordered_json QaEvidence::decided(const QaDecision& d) {
  decided_.insert(d.part);
  if (d.verdict != QaVerdict::kReject) {
    release(d.part);
    return nullptr;
  }
  rejects_++;
  if (!recorder_) {
    unrecorded_++;
    release(d.part);
    return nullptr;
  }
  evidence::EventRecord e;
  e.camera = "qa-line";
  e.reason = "reject";
  e.pts_ns = now_;
  e.track_id = d.part;
  e.label = d.label;
  e.verdict = "reject";
  if (!d.defects.empty()) {  // best first: the one the snapshot names
    e.defect = d.defects.front().first;
    e.defect_score = d.defects.front().second;
  }
  const auto it = best_.find(d.part);
  const Best best = it != best_.end() ? it->second : Best();
  e = recorder_->record(e, best.frame, info_, best.box);
  nlohmann::ordered_json j = {{"snapshot", e.snapshot}, {"crop", e.crop}, {"clip", e.clip}};
  j["snapshot_frame"] = best.frame ? nlohmann::ordered_json(best.index) : nullptr;
  // The crop's pixels: the part's box in that frame, cut to the frame.
  const cv::Rect r =
      best.box & cv::Rect(0, 0, GST_VIDEO_INFO_WIDTH(&info_), GST_VIDEO_INFO_HEIGHT(&info_));
  j["crop_box"] =
      best.frame
          ? nlohmann::ordered_json{{"x", r.x}, {"y", r.y}, {"width", r.width}, {"height", r.height}}
          : nlohmann::ordered_json(nullptr);
  release(d.part);
  return j;
}

void QaEvidence::finish() {
  if (recorder_) recorder_->finish();
}

nlohmann::ordered_json QaEvidence::summary() const {
  nlohmann::ordered_json j;
  j["dir"] = dir_;
  j["rejects"] = rejects_;
  if (!recorder_) {
    j["error"] = open_error_;
    j["unrecorded"] = unrecorded_;
    return j;
  }
  const auto c = recorder_->counters();
  const auto l = recorder_->losses();
  j["events"] = c.events;
  j["snapshots"] = c.snapshots;
  j["crops"] = c.crops;
  j["clips"] = c.clips;
  j["write_failures"] = c.write_failures;
  j["pruned_events"] = c.pruned_events;
  j["bytes_on_disk"] = c.bytes_on_disk;
  j["last_error"] = c.last_error;
  j["queue_dropped"] = l.queue_dropped;
  j["ring_evicted_early"] = l.ring_evicted_early;
  j["clips_short"] = l.clips_short;
  j["snapshots_dropped"] = l.snapshots_dropped;
  j["frames_encoded"] = l.frames_encoded;
  j["ring_peak_bytes"] = l.ring_peak_bytes;
  j["best_frame_copies"] = copies_;
  j["best_frame_copy_ms"] = copy_ms_;
  j["best_frames_peak_bytes"] = kept_peak_bytes_;
  return j;
}

bool QaEvidence::report_losses() const {
  if (!recorder_) {
    if (unrecorded_ == 0) return !open_error_.empty();
    g_printerr("qa-line: WARNING: evidence: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
               " rejects have no evidence: %s\n",
               static_cast<guint64>(unrecorded_), static_cast<guint64>(rejects_),
               open_error_.c_str());
    return true;
  }
  const auto c = recorder_->counters();
  const auto l = recorder_->losses();
  if (c.write_failures + l.queue_dropped + l.ring_evicted_early == 0) return false;
  g_printerr(
      "qa-line: WARNING: evidence lost: %" G_GUINT64_FORMAT " files not written (%" G_GUINT64_FORMAT
      " events: %" G_GUINT64_FORMAT " snapshots, %" G_GUINT64_FORMAT " crops, %" G_GUINT64_FORMAT
      " clips written), %" G_GUINT64_FORMAT " frames dropped before the encoder, %" G_GUINT64_FORMAT
      " frames pushed out of the ring early; last error: %s\n",
      static_cast<guint64>(c.write_failures), static_cast<guint64>(c.events),
      static_cast<guint64>(c.snapshots), static_cast<guint64>(c.crops),
      static_cast<guint64>(c.clips), static_cast<guint64>(l.queue_dropped),
      static_cast<guint64>(l.ring_evicted_early),
      c.last_error.empty() ? "none" : c.last_error.c_str());
  return true;
}

}  // namespace torchinfer::qa
