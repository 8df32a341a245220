#include "export/frame_record.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace torchinfer {
namespace {

using json = nlohmann::ordered_json;

json optional_ns(const std::optional<std::int64_t>& v) {
  return v ? json(*v) : json(nullptr);
}

// JSON has no NaN/inf; null keeps the line parseable and the value visible.
json number(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json tensor_values(const TensorView& t, std::size_t n) {
  json a = json::array();
  for (std::size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DType::kFloat32:
        a.push_back(number(static_cast<const float*>(t.data)[i]));
        break;
      case DType::kFloat64:
        a.push_back(number(static_cast<const double*>(t.data)[i]));
        break;
      case DType::kInt32:
        a.push_back(static_cast<const std::int32_t*>(t.data)[i]);
        break;
      case DType::kInt64:
        a.push_back(static_cast<const std::int64_t*>(t.data)[i]);
        break;
      case DType::kUInt8:
        a.push_back(static_cast<const std::uint8_t*>(t.data)[i]);
        break;
      case DType::kInt8:
        a.push_back(static_cast<const std::int8_t*>(t.data)[i]);
        break;
      case DType::kBool:
        a.push_back(static_cast<const bool*>(t.data)[i]);
        break;
    }
  }
  return a;
}

json direction_counts(const DirectionCounts& c) {
  return {{"forward", c.forward}, {"backward", c.backward}};
}

const char* event_name(AnalyticsEventType t) {
  return t == AnalyticsEventType::kCrossing  ? "crossing"
         : t == AnalyticsEventType::kEntered ? "zone-entered"
                                             : "zone-exited";
}

json analytics_event(const AnalyticsEvent& e) {
  const bool crossing = e.type == AnalyticsEventType::kCrossing;
  json j = {{"event", event_name(e.type)}, {crossing ? "line" : "zone", e.name}};
  if (crossing) j["direction"] = e.forward ? "forward" : "backward";
  j["id"] = e.track_id;
  j["label"] = e.label;
  j["label_id"] = e.label_id;
  j["pts"] = e.pts_ns >= 0 ? json(e.pts_ns) : json(nullptr);
  if (e.type == AnalyticsEventType::kExited) {
    j["dwell_ns"] = e.dwell_ns;
    j["reason"] = e.lost ? "lost" : "left";
  }
  return j;
}

// "analytics": {"lines": {NAME: {forward, backward, by_class: {LABEL:
// {forward, backward}}}}, "zones": {NAME: {inside, entered, exited}},
// "events": [...] (only when the frame has some)}.
json analytics_json(const AnalyticsRecord& a) {
  json lines = json::object(), zones = json::object();
  for (const LineCounts& l : a.lines) {
    json by_class = json::object();
    for (const auto& [label, c] : l.by_class) by_class[label] = direction_counts(c);
    json jl = direction_counts(l.total);
    jl["by_class"] = std::move(by_class);
    lines[l.name] = std::move(jl);
  }
  for (const ZoneCounts& z : a.zones)
    zones[z.name] = {{"inside", z.inside}, {"entered", z.entered}, {"exited", z.exited}};
  json j = {{"lines", std::move(lines)}, {"zones", std::move(zones)}};
  if (!a.events.empty()) {
    json evs = json::array();
    for (const AnalyticsEvent& e : a.events) evs.push_back(analytics_event(e));
    j["events"] = std::move(evs);
  }
  return j;
}

json track_event(const TrackEventRecord& e) {
  json j = {{"event", e.ended ? "ended" : "started"},
            {"id", e.id},
            {"label", e.label},
            {"label_id", e.label_id},
            {"pts", optional_ns(e.pts_ns)},
            {"stream_id", e.stream_id},
            {"age", e.age}};
  if (e.ended) {
    j["reason"] = e.reason;
    j["last_seen_pts"] = optional_ns(e.last_seen_pts_ns);
  }
  return j;
}

json anomaly(const AnomalyRecord& a) {
  json j = {
      {"score", number(a.score)}, {"raw_score", number(a.raw_score)}, {"anomalous", a.anomalous}};
  if (!a.regions) return j;
  json regions = json::array();
  for (std::size_t i = 0; i < a.regions->size() && i < kMaxAnomalyRegionsWritten; ++i) {
    const AnomalyRegion& r = (*a.regions)[i];
    regions.push_back({{"x_min", number(r.x_min)},
                       {"y_min", number(r.y_min)},
                       {"x_max", number(r.x_max)},
                       {"y_max", number(r.y_max)},
                       {"peak", number(r.peak)}});
  }
  j["regions"] = regions;
  if (a.regions->size() > kMaxAnomalyRegionsWritten) j["regions_total"] = a.regions->size();
  return j;
}

// "code": {"format", "text", "box": {x_min, y_min, x_max, y_max}} (frame pixels).
json code_json(const CodeRecord& c) {
  return {{"format", c.format},
          {"text", c.text},
          {"box",
           {{"x_min", number(c.x_min)},
            {"y_min", number(c.y_min)},
            {"x_max", number(c.x_max)},
            {"y_max", number(c.y_max)}}}};
}

// "mask": {"area", "area_mm2" (calibrated only), "x", "y", "width", "height",
// "rle"}: the runs row by row over the grid x, y, width, height (frame
// pixels), unset first.
json mask_json(const Mask& m, const std::optional<double>& mm_per_pixel) {
  json j = {{"area", m.area}};
  if (mm_per_pixel) j["area_mm2"] = number(m.area * *mm_per_pixel * *mm_per_pixel);
  j["x"] = m.x;
  j["y"] = m.y;
  j["width"] = m.width;
  j["height"] = m.height;
  j["rle"] = m.runs;
  return j;
}

json detection_json(const DetectionRecord& d, const std::optional<double>& mm_per_pixel) {
  json jd = {{"label", d.box.label},
             {"label_id", d.box.label_id},
             {"confidence", number(d.box.confidence)},
             {"box",
              {{"x_min", number(d.box.x_min)},
               {"y_min", number(d.box.y_min)},
               {"x_max", number(d.box.x_max)},
               {"y_max", number(d.box.y_max)}}},
             {"box_normalized",
              {{"x_min", number(d.nx_min)},
               {"y_min", number(d.ny_min)},
               {"x_max", number(d.nx_max)},
               {"y_max", number(d.ny_max)}}}};
  // Only on tracked detections, so untracked lines stay as they were.
  if (d.object_id) {
    jd["object_id"] = *d.object_id;
    jd["predicted"] = d.predicted;
  }
  if (d.zones) jd["zones"] = *d.zones;
  // Only on classified regions, so other lines stay as they were.
  if (!d.classification.empty()) {
    json cls = json::array();
    for (const auto& c : d.classification)
      cls.push_back({{"label", c.label},
                     {"label_id", c.label_id},
                     {"confidence", number(c.confidence)},
                     {"model", c.model},
                     {"model_instance_id", c.model_instance_id},
                     {"element", c.element},
                     {"inferred", c.inferred}});
    jd["classification"] = cls;
  }
  if (d.anomaly) jd["anomaly"] = anomaly(*d.anomaly);
  if (d.code) jd["code"] = code_json(*d.code);
  if (d.mask) jd["mask"] = mask_json(*d.mask, mm_per_pixel);
  // yolov8-obb: frame pixels, angle in degrees clockwise in image coordinates.
  if (const auto& r = d.box.rotated)
    jd["rotated_box"] = {{"cx", number(r->cx)},
                         {"cy", number(r->cy)},
                         {"width", number(r->width)},
                         {"height", number(r->height)},
                         {"angle", number(r->angle)}};
  return jd;
}

// What the model gave this frame: its input, timing, batch and results.
void add_inference(json& j, const FrameRecord& r) {
  j["model"] = r.model;
  j["input"] = {{"width", r.input_width}, {"height", r.input_height}};
  j["latency"] = {{"preprocess_ms", number(r.preprocess_ms)},
                  {"queue_ms", number(r.queue_ms)},
                  {"inference_ms", number(r.inference_ms)}};
  j["batch"] = {{"size", r.batch_size}, {"index", r.batch_index}};
  j["inferred"] = r.inferred;
  if (!r.inferred) j["result_pts"] = optional_ns(r.result_pts_ns);
  if (!r.inferred && !r.skip.empty()) j["skip"] = r.skip;
  // Only on invalid frames, so valid lines stay as they always were.
  if (!r.valid) j["valid"] = false;
  json cls = json::array();
  for (const auto& c : r.classification)
    cls.push_back(
        {{"label", c.label}, {"label_id", c.label_id}, {"confidence", number(c.confidence)}});
  j["classification"] = cls;
  if (r.anomaly) j["anomaly"] = anomaly(*r.anomaly);
}

// What the elements after the model added: objects, tracks, counts, codes.
void add_objects(json& j, const FrameRecord& r) {
  if (r.has_inference || !r.detections.empty()) {
    json dets = json::array();
    for (const auto& d : r.detections) dets.push_back(detection_json(d, r.mm_per_pixel));
    j["detections"] = dets;
  }
  if (!r.track_events.empty()) {
    json evs = json::array();
    for (const auto& e : r.track_events) evs.push_back(track_event(e));
    j["track_events"] = evs;
  }
  if (r.analytics) j["analytics"] = analytics_json(*r.analytics);
  if (r.codes) {
    json codes = json::array();
    for (const auto& c : *r.codes) codes.push_back(code_json(c));
    j["codes"] = codes;
  }
}

json tensors_json(const FrameRecord& r, std::size_t max_tensor_elements) {
  json ts = json::array();
  for (const auto& t : r.tensors) {
    const std::size_t n = t.elements();
    const std::size_t shown = std::min(n, max_tensor_elements);
    json jt = {{"name", t.name},
               {"dtype", to_string(t.dtype)},
               {"dims", t.dims},
               {"data", tensor_values(t, shown)}};
    if (shown < n) jt["truncated"] = true;
    ts.push_back(std::move(jt));
  }
  return ts;
}

}  // namespace

std::string to_json_line(const FrameRecord& r, bool include_tensors,
                         std::size_t max_tensor_elements) {
  json j;
  j["frame"] = r.frame_number;
  j["pts"] = optional_ns(r.pts_ns);
  j["dts"] = optional_ns(r.dts_ns);
  j["duration"] = optional_ns(r.duration_ns);
  if (!r.stream_id.empty()) j["stream_id"] = r.stream_id;
  j["width"] = r.width;
  j["height"] = r.height;
  if (r.has_inference) add_inference(j, r);
  add_objects(j, r);
  if (r.has_inference && include_tensors) j["tensors"] = tensors_json(r, max_tensor_elements);
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace torchinfer
