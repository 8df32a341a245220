#include "server/core/server_config.h"

#include "server/core/shard.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <set>

#include "common/utf8.h"
#include "server/core/stream_analytics.h"

namespace torchinfer::server {

using nlohmann::json;

namespace {

std::string join(const std::set<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

std::string type_name(const json& v) {
  return v.is_number_integer() ? "integer" : v.type_name();
}

// Reads one JSON object field by field; anything not asked for is refused
// by finish(), so a typo ("confidence_treshold") is an error, not a default.
class Fields {
 public:
  Fields(const json& j, std::string prefix, std::string origin, std::set<std::string> known)
      : j_(j), prefix_(std::move(prefix)), origin_(std::move(origin)), known_(std::move(known)) {
    if (!j_.is_object())
      throw FieldError(origin_, prefix_.empty() ? "(body)" : prefix_,
                       "must be a JSON object, not " + type_name(j_));
    for (const auto& [k, v] : j_.items())
      if (!known_.count(k))
        throw FieldError(origin_, path(k), "unknown field; the fields are " + join(known_));
  }

  std::string path(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "." + key;
  }
  bool has(const std::string& key) const { return j_.contains(key); }
  const json& raw(const std::string& key) const { return j_.at(key); }

  std::string str(const std::string& key, bool required, std::string fallback = "") const {
    if (!has(key)) {
      if (required) throw FieldError(origin_, path(key), "missing (a string is required)");
      return fallback;
    }
    const json& v = j_.at(key);
    if (!v.is_string())
      throw FieldError(origin_, path(key), "must be a string, not " + type_name(v));
    const std::string s = v.get<std::string>();
    if (s.size() > 4096) throw FieldError(origin_, path(key), "longer than 4096 characters");
    for (unsigned char c : s)
      if (c < 0x20 || c == 0x7f) throw FieldError(origin_, path(key), "holds a control character");
    return s;
  }

  long long integer(const std::string& key, long long fallback, long long lo, long long hi) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_number_integer())
      throw FieldError(origin_, path(key), "must be an integer, not " + type_name(v));
    long long x;
    if (v.is_number_unsigned()) {
      const auto u = v.get<unsigned long long>();
      x = u > static_cast<unsigned long long>(hi) ? hi + 1 : static_cast<long long>(u);
      if (u > static_cast<unsigned long long>(std::numeric_limits<long long>::max())) x = hi + 1;
    } else {
      x = v.get<long long>();
    }
    if (x < lo || x > hi)
      throw FieldError(origin_, path(key),
                       "out of range: give an integer from " + std::to_string(lo) + " to " +
                           std::to_string(hi) + " (got " + v.dump() + ")");
    return x;
  }

  double number(const std::string& key, double fallback, double lo, double hi) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_number())
      throw FieldError(origin_, path(key), "must be a number, not " + type_name(v));
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi)
      throw FieldError(origin_, path(key),
                       "out of range: give a number from " + num(lo) + " to " + num(hi) + " (got " +
                           v.dump() + ")");
    return x;
  }

  bool boolean(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_boolean())
      throw FieldError(origin_, path(key), "must be true or false, not " + type_name(v));
    return v.get<bool>();
  }

  // Runs a check that throws Error, as an error of this field.
  template <typename Check>
  void check(const std::string& key, Check run) const {
    try {
      run();
    } catch (const Error& e) {
      throw FieldError(origin_, path(key), e.what());
    }
  }

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw FieldError(origin_, path(key), problem);
  }

 private:
  static std::string num(double d) {
    std::string s = std::to_string(d);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  const json& j_;
  std::string prefix_, origin_;
  std::set<std::string> known_;
};

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// False for a bad escape or an escaped NUL.
bool percent_decode(const std::string& in, std::string* out) {
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      *out += in[i];
      continue;
    }
    const int a = i + 2 < in.size() ? hex(in[i + 1]) : -1;
    const int b = i + 2 < in.size() ? hex(in[i + 2]) : -1;
    if (a < 0 || b < 0 || (a == 0 && b == 0)) return false;
    *out += static_cast<char>(a * 16 + b);
    i += 2;
  }
  return true;
}

// aravis://NAME: the name as Aravis lists it (vendor-model-serial, a user
// id, or an IP address), percent-decoded; printable, at most 128 bytes.
bool parse_aravis_uri(StreamSpec& s, std::string* why) {
  // A query would otherwise become part of the camera's name (a camera
  // that is then never found); the settings are the stream's own fields.
  if (s.uri.find('?') != std::string::npos) {
    *why =
        "an Aravis URI takes no query ('?'): give the camera's settings as the stream's own "
        "fields pixel_format, exposure_us, gain_db, packet_size and trigger, e.g. {\"uri\": "
        "\"aravis://Basler-21234567\", \"pixel_format\": \"Mono12\"} (a '?' in a camera "
        "name is %3F)";
    return false;
  }
  std::string name;
  if (!percent_decode(s.uri.substr(9), &name) || name.empty() || name.size() > 128) {
    *why =
        "an Aravis URI names a camera as arv-tool-0.8 lists it, or its IP: "
        "aravis://Basler-21234567 (percent-encode spaces)";
    return false;
  }
  for (unsigned char c : name)
    if (c < 0x20 || c >= 0x7f || c == '/') {
      *why = "the camera name may hold only printable ASCII without '/'";
      return false;
    }
  s.kind = SourceKind::kAravis;
  s.location = name;
  s.camera.name = name;
  return true;
}

// Fills kind and location from the URI, or says why it is not one of the
// four accepted forms.
bool parse_uri(StreamSpec& s, std::string* why) {
  const std::string& u = s.uri;
  for (unsigned char c : u)
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\'' || c == '\\' || c == '!') {
      *why =
          "may hold only printable ASCII without spaces, quotes, backslashes or '!' "
          "(percent-encode them)";
      return false;
    }
  if (u.rfind("file://", 0) == 0) {
    std::string rest = u.substr(7);
    if (rest.rfind("localhost/", 0) == 0) rest = rest.substr(9);
    if (rest.empty() || rest[0] != '/') {
      *why = "a file URI needs an absolute path: file:///path/to/clip.mkv";
      return false;
    }
    std::string path;
    if (!percent_decode(rest, &path)) {
      *why = "a bad percent escape in the path";
      return false;
    }
    s.kind = SourceKind::kFile;
    s.location = path;
    return true;
  }
  if (u.rfind("v4l2://", 0) == 0) {
    const std::string dev = u.substr(7);
    bool ok = dev.rfind("/dev/video", 0) == 0 && dev.size() > 10 && dev.size() <= 13;
    for (std::size_t i = 10; ok && i < dev.size(); ++i) ok = std::isdigit((unsigned char)dev[i]);
    if (!ok) {
      *why = "a V4L2 URI names a video device: v4l2:///dev/video0";
      return false;
    }
    s.kind = SourceKind::kV4l2;
    s.location = dev;
    return true;
  }
  if (u.rfind("rtsp://", 0) == 0) {
    const std::string rest = u.substr(7);
    const std::size_t slash = rest.find('/');
    const std::string host = rest.substr(0, slash);
    if (host.empty() || host[0] == ':' || host.back() == ':' || host.back() == '@') {
      *why = "an RTSP URI needs a host: rtsp://host[:port]/path";
      return false;
    }
    s.kind = SourceKind::kRtsp;
    s.location = u;
    return true;
  }
  if (u.rfind("aravis://", 0) == 0) return parse_aravis_uri(s, why);
  *why =
      "must start with file://, v4l2://, rtsp:// or aravis:// (launch descriptions are not "
      "accepted)";
  return false;
}

// trigger: "free-run", "software", or {"mode": "hardware", "line": "Line1"}
// (the object form takes every mode).
void parse_trigger(const Fields& f, const std::string& origin, CameraSettings& c) {
  const json& v = f.raw("trigger");
  std::string mode;
  if (v.is_string()) {
    mode = f.str("trigger", true);
  } else {
    Fields t(v, f.path("trigger"), origin, {"mode", "line"});
    mode = t.str("mode", true);
    c.trigger_line = t.str("line", false);
    if (t.has("line") && mode != "hardware") t.fail("line", "applies to mode \"hardware\" only");
    if (mode == "hardware" && !valid_feature_value(c.trigger_line))
      t.fail("line",
             "name the camera's input line (TriggerSource), e.g. \"Line1\": 1 to 64 "
             "letters, digits or '_'");
  }
  if (mode == "free-run") {
    c.trigger = TriggerMode::kFreeRun;
  } else if (mode == "software") {
    c.trigger = TriggerMode::kSoftware;
  } else if (mode == "hardware" && !c.trigger_line.empty()) {
    c.trigger = TriggerMode::kHardware;
  } else if (mode == "hardware") {
    f.fail("trigger",
           "a hardware trigger needs its line: {\"mode\": \"hardware\", \"line\": "
           "\"Line1\"}");
  } else {
    f.fail("trigger", "unknown trigger mode '" + printable(mode, 40) +
                          "'; the modes are free-run, software and hardware");
  }
}

// The aravis:// fields; refused on other sources.
void parse_camera(const Fields& f, const std::string& origin, StreamSpec& s) {
  static const char* kCameraFields[] = {"pixel_format", "exposure_us", "gain_db", "packet_size",
                                        "trigger"};
  if (s.kind != SourceKind::kAravis) {
    for (const char* k : kCameraFields)
      if (f.has(k)) f.fail(k, "applies to aravis:// cameras only");
    return;
  }
  CameraSettings& c = s.camera;
  c.pixel_format = f.str("pixel_format", false);
  if (f.has("pixel_format") && !find_pixel_format(c.pixel_format))
    f.fail("pixel_format",
           "'" + printable(c.pixel_format, 40) +
               "' is not a pixel format the analysis takes as it comes; use one of " +
               pixel_format_names());
  if (f.has("exposure_us")) c.exposure_us = f.number("exposure_us", 0, 1, 1e8);
  if (f.has("gain_db")) c.gain_db = f.number("gain_db", 0, 0, 100);
  c.packet_size = static_cast<int>(f.integer("packet_size", c.packet_size, 576, 65500));
  if (f.has("trigger")) parse_trigger(f, origin, c);
}

// "lines"/"zones": counted on tracked objects, so only with "track": true.
void parse_layout(const Fields& f, const json& j, const std::string& prefix,
                  const std::string& origin, StreamSpec& s) {
  const auto get = [&](const char* k) { return j.contains(k) ? &j.at(k) : nullptr; };
  s.analytics = parse_analytics_fields(get("lines"), get("zones"), prefix, origin);
  const bool any = !s.analytics.lines.empty() || !s.analytics.zones.empty();
  if (any && !s.track)
    f.fail(s.analytics.lines.empty() ? "zones" : "lines",
           "lines and zones count tracked objects: set \"track\": true");
}

}  // namespace

bool valid_stream_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (unsigned char c : id)
    if (!std::isalnum(c) && c != '_' && c != '-') return false;
  return true;
}

namespace {

// The stream's model: the one configured model when not named.
std::string stream_model(Fields& f, const std::vector<ModelSpec>& models) {
  const std::string model_default = models.size() == 1 ? models[0].id : "";
  const std::string id = f.str("model", model_default.empty(), model_default);
  bool known = false;
  for (const auto& m : models) known = known || m.id == id;
  if (!known) {
    std::string ids;
    for (const auto& m : models) ids += (ids.empty() ? "" : ", ") + m.id;
    f.fail("model", "no model '" + id + "' is configured; the models are " + ids);
  }
  return id;
}

// "roi": the part of the frame the model sees, frame pixels.
Roi parse_roi(Fields& f, const std::string& origin) {
  Fields r(f.raw("roi"), f.path("roi"), origin, {"x", "y", "width", "height"});
  Roi roi;
  roi.x = static_cast<int>(r.integer("x", 0, 0, 100000));
  roi.y = static_cast<int>(r.integer("y", 0, 0, 100000));
  if (!r.has("width") || !r.has("height"))
    r.fail(r.has("width") ? "height" : "width", "missing (an integer is required)");
  roi.width = static_cast<int>(r.integer("width", 0, 1, 100000));
  roi.height = static_cast<int>(r.integer("height", 0, 1, 100000));
  return roi;
}

// "parts" and "plc" (server/line_spec.h).
void parse_line(const Fields& f, const std::vector<ModelSpec>& models, const std::string& origin,
                StreamSpec& s) {
  std::vector<std::string> ids;
  for (const auto& m : models) ids.push_back(m.id);
  if (f.has("parts"))
    s.parts = parse_parts_spec(f.raw("parts"), f.path("parts"), origin, ids, s.track);
  if (f.has("plc"))
    s.plc = parse_plc_spec(f.raw("plc"), f.path("plc"), origin, s.parts.has_value());
  if (f.has("codes")) s.codes = parse_codes_spec(f.raw("codes"), f.path("codes"), origin);
  if (s.codes && s.kind == SourceKind::kAravis)
    f.fail("codes",
           "not available for aravis:// cameras yet: torchcodes reads YUY2, NV12, I420 "
           "or GRAY8, and these cameras' Bayer/GRAY16 frames go to the analysis as they come");
}

// "inference_gate" and "inference_region" with their values
// (server/inference_settings.h); a value without its mode is refused, so
// a camera never runs with a setting that does nothing.
InferenceSettings parse_inference(const Fields& f, const StreamSpec& s) {
  InferenceSettings in;
  const std::string gate = f.str("inference_gate", false, "none");
  if (gate != "none" && gate != "motion") f.fail("inference_gate", "give \"none\" or \"motion\"");
  in.motion_gate = gate == "motion";
  const std::string region = f.str("inference_region", false, "full-frame");
  if (region != "full-frame" && region != "tiles")
    f.fail("inference_region", "give \"full-frame\" or \"tiles\"");
  in.tiles = region == "tiles";
  for (const char* k :
       {"motion_threshold", "motion_min_area", "motion_hold", "motion_keyframe_interval"})
    if (f.has(k) && !in.motion_gate) f.fail(k, "applies with \"inference_gate\": \"motion\" only");
  for (const char* k : {"tile_width", "tile_height", "tile_overlap"})
    if (f.has(k) && !in.tiles) f.fail(k, "applies with \"inference_region\": \"tiles\" only");
  if (in.tiles && s.roi)
    f.fail("roi",
           "\"roi\" and \"inference_region\": \"tiles\" exclude each other: the tiles "
           "cover the whole frame");
  const auto opt_num = [&](const char* k, double lo, double hi) {
    return f.has(k) ? std::optional<double>(f.number(k, 0, lo, hi)) : std::nullopt;
  };
  const auto opt_int = [&](const char* k, int lo, int hi) {
    return f.has(k) ? std::optional<int>(static_cast<int>(f.integer(k, 0, lo, hi))) : std::nullopt;
  };
  in.motion_threshold = opt_num("motion_threshold", 0.0, 255.0);
  in.motion_min_area = opt_num("motion_min_area", 0.0, 1.0);
  in.motion_hold = opt_int("motion_hold", 0, 1000000);
  in.motion_keyframe_interval = opt_int("motion_keyframe_interval", 1, 1000000);
  in.tile_width = opt_int("tile_width", 0, 65535);
  in.tile_height = opt_int("tile_height", 0, 65535);
  in.tile_overlap = opt_num("tile_overlap", 0.0, 0.9);
  return in;
}

void add_inference_json(const InferenceSettings& in, json& j) {
  // The defaults stay implicit, as the element's unset properties do.
  if (in.motion_gate) j["inference_gate"] = "motion";
  if (in.tiles) j["inference_region"] = "tiles";
  const auto put = [&j](const char* k, const auto& v) {
    if (v) j[k] = *v;
  };
  put("motion_threshold", in.motion_threshold);
  put("motion_min_area", in.motion_min_area);
  put("motion_hold", in.motion_hold);
  put("motion_keyframe_interval", in.motion_keyframe_interval);
  put("tile_width", in.tile_width);
  put("tile_height", in.tile_height);
  put("tile_overlap", in.tile_overlap);
}

}  // namespace

StreamSpec parse_stream_spec(const json& j, const std::vector<ModelSpec>& models,
                             const MqttSpec& mqtt, const std::string& prefix,
                             const std::string& origin) {
  // clang-format off
  Fields f(j, prefix, origin,
           {"id", "uri", "model", "loop", "confidence_threshold", "iou_threshold",
            "inference_interval", "roi", "track", "json", "mqtt_topic", "restream",
            "pixel_format", "exposure_us", "gain_db", "packet_size", "trigger", "lines",
            "zones", "evidence", "parts", "plc", "codes", "inference_gate", "motion_threshold",
            "motion_min_area", "motion_hold", "motion_keyframe_interval", "inference_region",
            "tile_width", "tile_height", "tile_overlap"});
  // clang-format on
  StreamSpec s;
  s.id = f.str("id", true);
  if (!valid_stream_id(s.id))
    f.fail("id", "'" + s.id + "' is not a stream id: use 1 to 64 letters, digits, '_' or '-'");
  s.uri = f.str("uri", true);
  std::string why;
  if (!parse_uri(s, &why)) f.fail("uri", why);
  s.model = stream_model(f, models);
  s.loop = f.boolean("loop", true);
  if (f.has("loop") && s.kind != SourceKind::kFile)
    f.fail("loop", "applies to file:// sources only");
  if (f.has("confidence_threshold"))
    s.confidence_threshold = f.number("confidence_threshold", 0, 0.0, 1.0);
  if (f.has("iou_threshold")) s.iou_threshold = f.number("iou_threshold", 0, 0.0, 1.0);
  s.inference_interval = static_cast<int>(f.integer("inference_interval", 1, 1, 1000));
  if (f.has("roi")) s.roi = parse_roi(f, origin);
  s.inference = parse_inference(f, s);
  s.track = f.boolean("track", false);
  s.json = f.boolean("json", true);
  s.mqtt_topic = f.str("mqtt_topic", false);
  if (!s.mqtt_topic.empty()) {
    if (mqtt.host.empty())
      f.fail("mqtt_topic", "no MQTT broker is configured (set mqtt.host in the server config)");
    if (s.mqtt_topic.find_first_of("+#") != std::string::npos || s.mqtt_topic.size() > 256)
      f.fail("mqtt_topic", "a topic has at most 256 characters and no '+' or '#' wildcards");
  }
  s.restream = f.boolean("restream", false);
  if (s.restream && s.kind == SourceKind::kAravis)
    f.fail("restream",
           "not available for aravis:// cameras: their Bayer/mono frames are analysed as they "
           "come and not drawn on; watch them through the snapshot");
  parse_camera(f, origin, s);
  if (f.has("evidence"))
    s.evidence = parse_evidence_spec(f.raw("evidence"), f.path("evidence"), origin, s.track,
                                     s.kind == SourceKind::kAravis);
  parse_layout(f, j, prefix, origin, s);
  parse_line(f, models, origin, s);
  return s;
}

namespace {

// The "models" list, already checked to hold 1 to 16 entries.
std::vector<ModelSpec> parse_models(const json& models, const std::string& origin) {
  std::vector<ModelSpec> out;
  for (std::size_t i = 0; i < models.size(); ++i) {
    Fields m(models[i], "models[" + std::to_string(i) + "]", origin,
             {"id", "path", "batch_size", "batch_timeout_us", "threads", "lanes"});
    ModelSpec spec;
    spec.id = m.str("id", true);
    if (!valid_stream_id(spec.id))
      m.fail("id", "'" + spec.id + "' is not a model id: use 1 to 64 letters, digits, '_' or '-'");
    for (const auto& other : out)
      if (other.id == spec.id) m.fail("id", "'" + spec.id + "' is used by another model");
    spec.path = m.str("path", true);
    if (spec.path.empty()) m.fail("path", "empty: name a TorchScript .pt file");
    spec.batch_size = static_cast<int>(m.integer("batch_size", spec.batch_size, 1, 64));
    spec.batch_timeout_us =
        static_cast<int>(m.integer("batch_timeout_us", spec.batch_timeout_us, 0, 10000000));
    spec.threads = static_cast<int>(m.integer("threads", 0, 0, 1024));
    spec.lanes = static_cast<int>(m.integer("lanes", spec.lanes, 0, 64));
    out.push_back(spec);
  }
  return out;
}

}  // namespace

ServerConfig parse_server_config(const json& j, const std::string& origin) {
  Fields f(
      j, "", origin,
      {"models", "streams", "output_dir", "mqtt", "max_streams", "max_body_bytes",
       "drain_timeout_s", "max_connections", "idle_timeout_s", "shard", "shards", "ready_grace_s"});
  ServerConfig c;
  if (!f.has("models")) f.fail("models", "missing: list at least one model");
  const json& models = f.raw("models");
  if (!models.is_array() || models.empty() || models.size() > 16)
    f.fail("models", "must be a list of 1 to 16 models");
  c.models = parse_models(models, origin);
  c.output_dir = f.str("output_dir", false, c.output_dir);
  if (c.output_dir.empty()) f.fail("output_dir", "empty: name a folder for the JSON lines files");
  if (f.has("mqtt")) {
    Fields m(f.raw("mqtt"), "mqtt", origin, {"host", "port", "qos"});
    c.mqtt.host = m.str("host", true);
    if (c.mqtt.host.empty()) m.fail("host", "empty: name the broker's host");
    c.mqtt.port = static_cast<int>(m.integer("port", 1883, 1, 65535));
    c.mqtt.qos = static_cast<int>(m.integer("qos", 0, 0, 2));
  }
  c.max_streams = static_cast<int>(f.integer("max_streams", c.max_streams, 1, 256));
  c.max_body_bytes =
      static_cast<std::size_t>(f.integer("max_body_bytes", 64 * 1024, 256, 16 * 1024 * 1024));
  c.drain_timeout_s = f.number("drain_timeout_s", c.drain_timeout_s, 0.1, 600);
  c.max_connections = static_cast<int>(f.integer("max_connections", c.max_connections, 1, 65536));
  c.idle_timeout_s = f.number("idle_timeout_s", c.idle_timeout_s, 0.1, 3600);
  c.ready_grace_s = f.number("ready_grace_s", c.ready_grace_s, 0, 3600);
  c.shard = f.str("shard", false);
  if (f.has("shard")) f.check("shard", [&] { parse_shard(c.shard, ""); });
  c.shards = static_cast<int>(f.integer("shards", 0, 1, kMaxShards));
  // A shared list is split first: max_streams bounds each box's share.
  const bool split = !c.shard.empty() || c.shards > 1;
  if (f.has("streams")) {
    const json& streams = f.raw("streams");
    if (!streams.is_array()) f.fail("streams", "must be a list of streams");
    if (!split && static_cast<int>(streams.size()) > c.max_streams)
      f.fail("streams", std::to_string(streams.size()) + " streams exceed max_streams (" +
                            std::to_string(c.max_streams) + ")");
    for (std::size_t i = 0; i < streams.size(); ++i) {
      const std::string prefix = "streams[" + std::to_string(i) + "]";
      StreamSpec s = parse_stream_spec(streams[i], c.models, c.mqtt, prefix, origin);
      for (const auto& other : c.streams)
        if (other.id == s.id)
          throw FieldError(origin, prefix + ".id", "'" + s.id + "' is used by another stream");
      c.streams.push_back(std::move(s));
    }
  }
  return c;
}

json to_json(const StreamSpec& s) {
  json j = {{"id", s.id},       {"uri", s.uri},
            {"model", s.model}, {"inference_interval", s.inference_interval},
            {"track", s.track}, {"json", s.json}};
  if (s.kind == SourceKind::kFile) j["loop"] = s.loop;
  if (s.confidence_threshold) j["confidence_threshold"] = *s.confidence_threshold;
  if (s.iou_threshold) j["iou_threshold"] = *s.iou_threshold;
  if (s.roi)
    j["roi"] = {
        {"x", s.roi->x}, {"y", s.roi->y}, {"width", s.roi->width}, {"height", s.roi->height}};
  if (!s.mqtt_topic.empty()) j["mqtt_topic"] = s.mqtt_topic;
  j["restream"] = s.restream;
  if (!s.analytics.lines.empty()) j["lines"] = layout_json(s.analytics)["lines"];
  if (!s.analytics.zones.empty()) j["zones"] = layout_json(s.analytics)["zones"];
  if (s.kind == SourceKind::kAravis) {
    const CameraSettings& c = s.camera;
    if (!c.pixel_format.empty()) j["pixel_format"] = c.pixel_format;
    if (c.exposure_us) j["exposure_us"] = *c.exposure_us;
    if (c.gain_db) j["gain_db"] = *c.gain_db;
    j["packet_size"] = c.packet_size;
    if (c.trigger == TriggerMode::kHardware)
      j["trigger"] = {{"mode", "hardware"}, {"line", c.trigger_line}};
    else
      j["trigger"] = to_string(c.trigger);
  }
  if (s.evidence) j["evidence"] = to_json(*s.evidence);
  if (s.parts) j["parts"] = to_json(*s.parts);
  if (s.plc) j["plc"] = s.plc->settings;
  if (s.codes) j["codes"] = to_json(*s.codes);
  add_inference_json(s.inference, j);
  return j;
}

}  // namespace torchinfer::server
