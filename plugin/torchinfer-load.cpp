#include "torchinfer-load.h"

#include <gst/video/video.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cpu_set.h"
#include "common/error.h"
#include "common/sysinfo.h"
#include "element-errors.h"
#include "engine/engine_options.h"
#include "engine/selfcheck.h"
#include "model/model_loader.h"

GST_DEBUG_CATEGORY_EXTERN(gst_torchinfer_debug);
#define GST_CAT_DEFAULT gst_torchinfer_debug

namespace torchinfer::gst {

EngineOptions engine_options(const Settings& s, const ModelConfig& config) {
  EngineOptions eo = engine_options_for(s.model, config);
  eo.warmup_runs = s.warmup;
  eo.optimize = s.optimize;
  eo.threads = s.threads;
  eo.cores = s.cores;
  eo.precision = s.precision;
  return eo;
}

PreprocessOptions preprocess_options(const Settings& s, const ModelConfig& config) {
  PreprocessOptions po = PreprocessOptions::from_config(config);
  const ResolvedContract contract = resolve_contract(config.contract, s.contract_overrides());
  po.keep_aspect_ratio = contract.resize.value == ResizeMode::kLetterbox;
  po.center_crop = contract.resize.value == ResizeMode::kCenterCrop;
  po.pad_value = contract.pad_value.value;
  po.method = s.resize_method;
  po.crop = s.crop;
  po.input_bits = s.input_bits;
  po.output = config.input_uint8 ? OutputType::kUInt8 : OutputType::kFloat32;
  return po;
}

namespace {

// The labels as a short, comparable text: a thousand ImageNet labels must
// not become an error message.
std::string labels_fingerprint(const std::vector<std::string>& labels) {
  if (labels.empty()) return "(none)";
  std::uint32_t h = 2166136261u;  // FNV-1a over the labels and their breaks
  for (const std::string& l : labels)
    for (const char c : l + '\n') h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", h);
  return std::to_string(labels.size()) + " labels, first '" + labels.front() + "', fingerprint " +
         hex;
}

std::string normalisation(const ModelConfig& config) {
  std::string out;
  for (int c = 0; c < config.channels(); ++c) {
    char v[64];
    std::snprintf(v, sizeof v, "%sx*%g%+g", c ? ", " : "", config.alpha[c], config.beta[c]);
    out += v;
  }
  return out;
}

}  // namespace

SharingKey sharing_key(const Settings& s, const ModelConfig& config) {
  auto num = [](auto v) { return std::to_string(v); };
  // Everything here shapes the shared model's input or its decoded results
  // (both come from the first sharer's config): a sharer that differs
  // would be ignored in silence.
  return {
      {"model", s.model},
      {"input size",
       num(config.input_width) + "x" + num(config.input_height) + "x" + num(config.channels())},
      {"input-dtype", config.input_uint8 ? "uint8" : "float32"},
      {"input-layout", to_string(config.input_layout)},
      {"precision", to_string(s.precision)},
      {"threads", num(s.threads)},
      {"lanes", num(lanes_plan(s).lanes)},
      {"cores", s.cores ? *s.cores : "(not pinned)"},
      {"batch-size", num(s.batch_size)},
      {"batch-timeout", num(s.batch_timeout_us)},
      {"optimize", s.optimize ? "true" : "false"},
      // Results are decoded with the loaded model's config: a sharer's
      // own anomaly decision would otherwise be ignored in silence.
      {"sensitivity", config.anomaly.sensitivity ? num(*config.anomaly.sensitivity) : "(unset)"},
      {"anomaly-threshold", num(config.anomaly.raw_threshold)},
      {"task", to_string(config.task)},
      {"top-k", num(config.top_k)},
      {"activation", to_string(config.output_activation)},
      {"labels", labels_fingerprint(config.labels)},
      {"channel-order", to_string(config.channel_order)},
      {"normalisation (mean/std, scale/offset)", normalisation(config)}};
}

LanesPlan lanes_plan(const Settings& s) {
  const std::vector<int> cpus =
      s.cores ? resolve_cpu_list(*s.cores, allowed_cpus()) : allowed_cpus();
  return choose_lanes({physical_cores(cpus), s.threads, s.lanes});
}

namespace {

// A big model spends seconds in PREROLLING; say where it is.
void post_load_progress(GstElement* self, const std::string& model, const LoadProgress& p) {
  GST_INFO_OBJECT(self, "loading %s: %s, %d/%d warm-up runs done, %.0f ms", model.c_str(),
                  to_string(p.stage), p.done, p.total, p.elapsed_ms);
  gst_element_post_message(
      self, gst_message_new_element(
                GST_OBJECT(self),
                gst_structure_new("torchinfer-load", "model", G_TYPE_STRING, model.c_str(), "stage",
                                  G_TYPE_STRING, to_string(p.stage), "done", G_TYPE_INT, p.done,
                                  "total", G_TYPE_INT, p.total, "elapsed-ms", G_TYPE_DOUBLE,
                                  p.elapsed_ms, nullptr)));
}

}  // namespace

// "; 2 lanes: 1 threads on 0, 1 threads on 1" (nothing for one lane).
static std::string lanes_text(const LoadedModel& m) {
  if (m.lane_count() == 1) return {};
  std::string out = "; " + std::to_string(m.lane_count()) + " lanes:";
  for (int i = 0; i < m.lane_count(); ++i) {
    const EngineInfo& info = m.lane(i).engine->info();
    out += (i ? ", " : " ") + std::to_string(info.threads) + " threads on " +
           format_cpu_list(info.cores);
  }
  return out;
}

// One INFO line with everything the load decided and measured (lane 0's).
static void log_loaded(GstElement* self, const Settings& s, const ModelConfig& config,
                       const LoadedModel& m) {
  const EngineInfo& info = m.engine->info();
  std::string warmed;
  for (int b : m.engine->options().warmup_batch_sizes)
    warmed += (warmed.empty() ? "" : ",") + std::to_string(b);
  GST_INFO_OBJECT(
      self,
      "model %s: %dx%d %s, task %s, %zu labels (config: %s); load %.1f ms, optimise %.1f ms "
      "(frozen %d, optimised %d), warm-up %.1f ms (batch sizes %s); batch %d: %.2f ms "
      "(timed at %d frames); "
      "precision %s (%s), %d threads, cores %s%s",
      s.model.c_str(), config.input_width, config.input_height, to_string(config.channel_order),
      to_string(config.task), config.labels.size(),
      config.source.empty() ? "defaults" : config.source.c_str(), info.load_ms, info.optimize_ms,
      info.frozen, info.optimized, info.warmup_ms, warmed.c_str(), s.batch_size, m.batch_ms,
      timed_batch_size(s.batch_size), to_string(info.precision), info.precision_note.c_str(),
      info.threads, info.cores.empty() ? "not pinned" : format_cpu_list(info.cores).c_str(),
      lanes_text(m).c_str());
}

std::shared_ptr<const LoadedModel> load_for_element(GstElement* self, const Settings& s,
                                                    const ModelConfig& config, int generation) {
  EngineOptions eo = engine_options(s, config);
  eo.on_progress = [self, model = s.model](const LoadProgress& p) {
    post_load_progress(self, model, p);
  };
  const LanesPlan lanes = lanes_plan(s);
  if (s.lanes == 0)
    GST_INFO_OBJECT(self, "lanes=0 (automatic): %d lanes of %d threads or more", lanes.lanes,
                    lanes.threads_per_lane);
  std::shared_ptr<const LoadedModel> m =
      load_model(eo, config, s.batch_size, generation, lanes.lanes);
  const EngineInfo& info = m->engine->info();
  if (config.accuracy_guard_forced)
    GST_ELEMENT_WARNING(
        self, LIBRARY, SETTINGS,
        ("Model '%s' is an int8 model that FAILED its accuracy check and was written with "
         "--force: results may be wrong.",
         s.model.c_str()),
        ("re-run models/quantize.py with more calibration frames or a looser tolerance, or "
         "use the fp32 model (sidecar %s)",
         config.source.c_str()));
  // The self-check writes into a scratch slot only.
  std::vector<float> probe(m->slot_bytes / sizeof(float) + 16, 0.f);
  float* aligned = probe.data();
  while (reinterpret_cast<std::uintptr_t>(aligned) % kBufferAlignment) ++aligned;
  for (const Finding& f : self_check(m->engine.get(), aligned, info.threads, info.cores)) {
    if (f.level == Finding::Level::kWarning)
      GST_WARNING_OBJECT(self, "self-check %s: %s (fix: %s)", f.key.c_str(), f.value.c_str(),
                         f.fix.c_str());
    else
      GST_INFO_OBJECT(self, "self-check %s: %s", f.key.c_str(), f.value.c_str());
  }
  // Per lane: each lane's threads share only its own cores.
  bool oversubscribed = false;
  std::size_t n_cores = 0;
  for (int i = 0; i < m->lane_count(); ++i) {
    const EngineInfo& lane = m->lane(i).engine->info();
    const std::size_t n = lane.cores.empty() ? allowed_cpus().size() : lane.cores.size();
    n_cores += n;
    oversubscribed = oversubscribed || lane.threads > static_cast<int>(n);
  }
  if (oversubscribed)
    GST_ELEMENT_WARNING(self, RESOURCE, SETTINGS,
                        ("threads=%d is more than the %zu cores available: inference slows down.",
                         m->total_threads(), n_cores),
                        ("set threads=0 (automatic) or list more cores"));
  if (s.precision == Precision::kBf16 && info.precision != Precision::kBf16)
    GST_ELEMENT_WARNING(self, LIBRARY, SETTINGS,
                        ("precision=bf16 is not faster for this model here; running fp32."),
                        ("%s", info.precision_note.c_str()));
  if (s.optimize && !info.optimized && !info.model_quantized)
    GST_ELEMENT_WARNING(self, LIBRARY, SETTINGS,
                        ("Model '%s' runs unoptimised (slower).", s.model.c_str()),
                        ("optimize_for_inference failed: %s", info.optimize_note.c_str()));
  log_loaded(self, s, config, *m);
  return m;
}

std::shared_ptr<const LoadedModel> reload_for_element(GstElement* self, Settings run,
                                                      const std::string& path, Batcher& batcher) {
  run.model = path;
  run.model_config.clear();  // the new model's own sidecar
  const ModelConfig config = resolve_model_config(run.model, run.model_config, run.overrides());
  auto load = [&](int generation) { return load_for_element(self, run, config, generation); };
  if (run.model_instance_id.empty()) return reload_batcher(batcher, load);
  return ModelRegistry::instance().reload(run.model_instance_id, sharing_key(run, config), load);
}

void post_contract(GstElement* self, const ResolvedContract& c) {
  GST_INFO_OBJECT(self, "preprocessing contract: %s", describe(c).c_str());
  std::string classes;
  for (const std::string& l : c.object_classes.value) classes += (classes.empty() ? "" : ",") + l;
  gst_element_post_message(
      self,
      gst_message_new_element(
          GST_OBJECT(self),
          gst_structure_new(
              "torchinfer-contract", "object-padding", G_TYPE_DOUBLE, c.object_padding.value,
              "object-padding-from", G_TYPE_STRING, to_string(c.object_padding.from), "resize",
              G_TYPE_STRING, to_string(c.resize.value), "resize-from", G_TYPE_STRING,
              to_string(c.resize.from), "pad-value", G_TYPE_INT, c.pad_value.value,
              "pad-value-from", G_TYPE_STRING, to_string(c.pad_value.from), "object-class",
              G_TYPE_STRING, classes.c_str(), "object-class-from", G_TYPE_STRING,
              to_string(c.object_classes.from), "tile-width", G_TYPE_INT, c.tile_width.value,
              "tile-width-from", G_TYPE_STRING, to_string(c.tile_width.from), "tile-height",
              G_TYPE_INT, c.tile_height.value, "tile-height-from", G_TYPE_STRING,
              to_string(c.tile_height.from), "tile-overlap", G_TYPE_DOUBLE, c.tile_overlap.value,
              "tile-overlap-from", G_TYPE_STRING, to_string(c.tile_overlap.from), nullptr)));
}

void post_model_reloaded(GstElement* self, const LoadedModel& m) {
  const EngineInfo& info = m.engine->info();
  gst_element_post_message(
      self,
      gst_message_new_element(
          GST_OBJECT(self),
          gst_structure_new("torchinfer-model-reloaded", "model", G_TYPE_STRING, m.path.c_str(),
                            "generation", G_TYPE_INT, m.generation, "load-time", G_TYPE_DOUBLE,
                            info.load_ms + info.optimize_ms + info.warmup_ms, nullptr)));
  gst_element_post_message(self, gst_message_new_latency(GST_OBJECT(self)));
}

void post_load_error(GstElement* self, const std::exception& ex, const std::string& model) {
  if (const auto* e = dynamic_cast<const Error*>(&ex)) {
    const bool config =
        e->kind() == ErrorKind::kConfigInvalid || e->kind() == ErrorKind::kInvalidArgument;
    post_exception(self, ex, ErrorKind::kModelInvalid,
                   config ? "Invalid model configuration: " : "", "model '" + model + "'");
    return;
  }
  // Not from the core: libtorch or the allocator, given a file it cannot use.
  if (dynamic_cast<const std::bad_alloc*>(&ex)) {
    post_error(self, ErrorKind::kModelInvalid,
               "Out of memory while loading model '" + model + "' (corrupt file?).");
    return;
  }
  post_exception(self, ex, ErrorKind::kModelInvalid, "Model '" + model + "' could not be loaded: ");
}

}  // namespace torchinfer::gst
