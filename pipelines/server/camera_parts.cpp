#include "camera_parts.h"

#include <stdexcept>

#include "lineio/line_output.h"
#include "parts/core/decision_json.h"

namespace torchinfer::server {

namespace {

// GET /streams/{id} keeps this many of the latest decisions.
constexpr std::size_t kRecentDecisions = 32;

void set_arg(GstElement* e, const char* name, const std::string& value) {
  gst_util_set_object_arg(G_OBJECT(e), name, value.c_str());
}

// The QA app's second stage (qa_pipeline.cpp): the classifier on each part
// box, as often as the detector runs.
GstElement* classifier_element(const StreamSpec& spec, const ModelSpec& m, std::string* why) {
  GstElement* e = gst_element_factory_make("torchinfer", qa::kClassifierElement);
  if (!e) {
    *why = "GStreamer element 'torchinfer' is not installed (the part classifier)";
    return nullptr;
  }
  std::string parts;
  for (const auto& c : spec.parts->rules.part_classes) parts += (parts.empty() ? "" : ",") + c;
  g_object_set(e, "model", m.path.c_str(), "model-instance-id", m.id.c_str(), "object-class",
               parts.c_str(), "object-padding", 0.1, nullptr);
  set_arg(e, "inference-region", "roi-list");
  set_arg(e, "reclassify-interval", std::to_string(spec.inference_interval));
  set_arg(e, "batch-size", std::to_string(m.batch_size));
  set_arg(e, "batch-timeout", std::to_string(m.batch_timeout_us));
  if (m.threads > 0) set_arg(e, "threads", std::to_string(m.threads));
  return e;
}

nlohmann::json plc_json(const qa::QaPlc::Figures& f, std::int64_t now_ns) {
  const LineStats& s = f.line;
  nlohmann::json j = {
      {"state", line_state_name(s.state)},
      {"pulses",
       {{"reject", s.pulses_reject}, {"pass", s.pulses_pass}, {"recheck", s.pulses_recheck}}},
      {"pulses_lost", s.pulses_lost},
      {"pulses_merged", s.pulses_merged},
      {"pending_pulses", s.pending_pulses},
      {"late_parts", f.scheduled.late},
      {"duplicates", f.scheduled.duplicates},
      {"no_encoder", f.scheduled.no_encoder},
      {"unseen", f.unseen},
      {"writes", s.writes},
      {"write_failures", s.write_failures},
      {"queue_overflow", s.queue_overflow},
      {"reconnects", s.reconnects},
      {"encoder_reads", s.encoder_reads},
      {"encoder_failures", s.encoder_failures}};
  j["encoder_age_s"] = s.last_encoder_ns > 0 ? nlohmann::json((now_ns - s.last_encoder_ns) / 1e9)
                                             : nlohmann::json(nullptr);
  return j;
}

}  // namespace

std::unique_ptr<CameraParts> CameraParts::attach(const StreamSpec& spec, const ModelSpec& detector,
                                                 const ModelSpec& classifier, GstElement* pipeline,
                                                 std::vector<GstElement*>& chain,
                                                 std::string* why) {
  std::unique_ptr<CameraParts> parts;
  try {
    parts = std::make_unique<CameraParts>(spec, detector, pipeline);
  } catch (const std::exception& e) {
    *why = std::string("plc: ") + e.what();
    return nullptr;
  }
  if (!spec.parts->classifier.empty()) {
    GstElement* e = classifier_element(spec, classifier, why);
    if (!e) return nullptr;
    gst_bin_add(GST_BIN(pipeline), e);
    chain.push_back(e);
  }
  GstPad* pad = gst_element_get_static_pad(chain.back(), "src");
  gst_pad_add_probe(
      pad,
      static_cast<GstPadProbeType>(GST_PAD_PROBE_TYPE_BUFFER | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
      on_frame, parts.get(), nullptr);
  gst_object_unref(pad);
  return parts;
}

CameraParts::CameraParts(const StreamSpec& spec, const ModelSpec& detector, GstElement* pipeline)
    : id_(spec.id),
      live_(spec.kind != SourceKind::kFile),
      pipeline_(pipeline),
      verdicts_(spec.parts->rules) {
  read_.detector_id = detector.id;
  read_.part_classes.assign(spec.parts->rules.part_classes.begin(),
                            spec.parts->rules.part_classes.end());
  read_.part_threshold = spec.parts->part_threshold;
  read_.classifier = !spec.parts->classifier.empty();
  read_.defect_boxes = !read_.classifier;
  if (spec.plc)
    plc_ = std::make_unique<qa::QaPlc>(spec.plc->options, read_.part_classes,
                                       "torchinfer-server: stream " + spec.id, "");
}

CameraParts::~CameraParts() {
  finish();
}

// A live source's capture time on the steady clock the encoder readings are
// on (the pipeline clock is the monotonic system clock); a file's frame is
// taken as its analysis comes out, as in the QA app.
std::int64_t CameraParts::frame_time(GstBuffer* buf) const {
  if (live_ && GST_BUFFER_PTS_IS_VALID(buf))
    return static_cast<std::int64_t>(gst_element_get_base_time(pipeline_) + GST_BUFFER_PTS(buf));
  return steady_now_ns();
}

GstPadProbeReturn CameraParts::on_frame(GstPad*, GstPadProbeInfo* info, gpointer user) {
  auto* self = static_cast<CameraParts*>(user);
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER) {
    self->frame(GST_PAD_PROBE_INFO_BUFFER(info));
  } else if (GST_EVENT_TYPE(GST_PAD_PROBE_INFO_EVENT(info)) == GST_EVENT_EOS) {
    self->flush();  // the parts still in view are decided at the end of the stream
  }
  return GST_PAD_PROBE_OK;
}

void CameraParts::frame(GstBuffer* buf) {
  std::lock_guard<std::mutex> lock(mu_);
  if (flushed_) return;
  const std::int64_t index = frames_++;
  try {
    const qa::FrameResults r = qa::read_frame(buf, index, read_);
    if (!r.has_detector) return;
    if (plc_) plc_->see(r.frame, frame_time(buf));
    report(verdicts_.add_frame(r.frame));
  } catch (const std::exception& e) {
    g_printerr("torchinfer-server: stream %s: frame %lld: parts not read: %s\n", id_.c_str(),
               static_cast<long long>(index), e.what());
  }
}

void CameraParts::report(const std::vector<QaDecision>& decisions) {
  for (const auto& d : decisions) {
    decided_[verdict_name(d.verdict)]++;
    nlohmann::json j = nlohmann::json::parse(decision_json(d));
    if (plc_) j["plc"] = nlohmann::json::parse(plc_->decided(d, steady_now_ns()).dump());
    recent_.push_back(std::move(j));
    if (recent_.size() > kRecentDecisions) recent_.pop_front();
  }
}

void CameraParts::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  if (flushed_) return;
  flushed_ = true;
  report(verdicts_.flush());
}

void CameraParts::finish() {
  flush();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
  }
  if (!plc_) return;
  // Frames no longer come (flushed_), so the PLC is ours alone but for
  // figures(), which it serves under its own lock while the belt drains.
  bool failed = false;
  nlohmann::json summary = plc_->finish(&failed);
  std::lock_guard<std::mutex> lock(mu_);
  plc_summary_ = std::move(summary);
}

void CameraParts::status(nlohmann::json& j) const {
  std::lock_guard<std::mutex> lock(mu_);
  const QaCounts& c = verdicts_.counts();
  j["parts"] = {
      {"passed", c.passed},
      {"rejected", c.rejected},
      {"incomplete", c.incomplete},
      {"duplicates", c.duplicates},
      {"latest", nlohmann::json(std::vector<nlohmann::json>(recent_.begin(), recent_.end()))}};
  if (plc_) {
    j["plc"] = plc_json(plc_->figures(), steady_now_ns());
    j["plc"]["finished"] = finished_ && !plc_summary_.is_null();
  }
}

void CameraParts::figures(StreamFigures& f) const {
  std::lock_guard<std::mutex> lock(mu_);
  f.parts = true;
  f.parts_decided = decided_;
  if (!plc_) return;
  const qa::QaPlc::Figures p = plc_->figures();
  f.plc = true;
  f.plc_connected = p.line.state == LineState::connected;
  f.plc_pulses = {{"reject", p.line.pulses_reject},
                  {"pass", p.line.pulses_pass},
                  {"recheck", p.line.pulses_recheck}};
  f.plc_pulses_lost = p.line.pulses_lost;
  f.plc_late_parts = p.scheduled.late;
  f.plc_write_failures = p.line.write_failures;
  f.plc_encoder_age_s =
      p.line.last_encoder_ns > 0 ? (steady_now_ns() - p.line.last_encoder_ns) / 1e9 : -1;
}

}  // namespace torchinfer::server
