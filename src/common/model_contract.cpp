#include "common/model_contract.h"

#include <cmath>
#include <cstdio>

#include "common/error.h"
#include "common/utf8.h"

namespace torchinfer {
namespace {

using nlohmann::json;

// A second-stage model judges a few part classes; a thousand is a mistake.
constexpr std::size_t kMaxObjectClasses = 1000;

[[noreturn]] void fail(const std::string& origin, const std::string& field,
                       const std::string& what) {
  throw Error(ErrorKind::kConfigInvalid, origin + ": field '" + field + "': " + what);
}

std::string quote(const json& v) {
  return printable(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

double read_padding(const json& v, const std::string& origin) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0.0 ||
      v.get<double>() > 1.0)
    fail(origin, "object_padding",
         "expected a number between 0 and 1 (the fraction of the box added on each side), "
         "found " +
             quote(v));
  return v.get<double>();
}

ResizeMode read_resize(const json& v, const std::string& origin) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "stretch") return ResizeMode::kStretch;
    if (s == "letterbox") return ResizeMode::kLetterbox;
    if (s == "center_crop") return ResizeMode::kCenterCrop;
  }
  fail(origin, "resize", "expected one of stretch, letterbox, center_crop, found " + quote(v));
}

// Region labels as object-class takes them: a comma or surrounding blanks
// could never match a label, an empty name would match nothing.
std::vector<std::string> read_classes(const json& v, const std::string& origin) {
  if (!v.is_array() || v.empty() || v.size() > kMaxObjectClasses)
    fail(origin, "object_classes",
         "expected a list of 1 to " + std::to_string(kMaxObjectClasses) +
             " region labels, e.g. [\"bracket\", \"washer\"]");
  std::vector<std::string> out;
  for (const json& e : v) {
    const std::string s = e.is_string() ? e.get<std::string>() : std::string();
    if (!e.is_string() || s.empty() || s.find(',') != std::string::npos || s.front() == ' ' ||
        s.back() == ' ' || s.front() == '\t' || s.back() == '\t')
      fail(origin, "object_classes",
           "expected non-empty labels without commas or surrounding blanks, found " + quote(e));
    for (const std::string& seen : out)
      if (seen == s) fail(origin, "object_classes", "label " + quote(e) + " is listed twice");
    out.push_back(s);
  }
  return out;
}

// The tile keys take what the tile properties take (0 = the model's input).
void read_tiles(const json& j, const std::string& origin, InputContract& c) {
  for (const char* key : {"tile_width", "tile_height"}) {
    if (!j.contains(key)) continue;
    const json& v = j.at(key);
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 65535)
      fail(origin, key,
           "expected an integer between 0 and 65535 (frame pixels; 0 = the model's input "
           "size), found " +
               quote(v));
    (std::string(key) == "tile_width" ? c.tile_width : c.tile_height) = v.get<int>();
  }
  if (j.contains("tile_overlap")) {
    const json& v = j.at("tile_overlap");
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0.0 ||
        v.get<double>() > 0.9)
      fail(origin, "tile_overlap",
           "expected a number between 0 and 0.9 (the fraction of a tile shared with its "
           "neighbour), found " +
               quote(v));
    c.tile_overlap = v.get<double>();
  }
}

template <typename T>
Sourced<T> pick(const std::optional<T>& property, const std::optional<T>& sidecar, T fallback) {
  if (property) return {*property, ValueSource::kProperty};
  if (sidecar) return {*sidecar, ValueSource::kSidecar};
  return {fallback, ValueSource::kDefault};
}

}  // namespace

const char* to_string(ResizeMode v) {
  switch (v) {
    case ResizeMode::kStretch:
      return "stretch";
    case ResizeMode::kLetterbox:
      return "letterbox";
    case ResizeMode::kCenterCrop:
      return "center_crop";
  }
  return "?";
}

const char* to_string(ValueSource s) {
  switch (s) {
    case ValueSource::kDefault:
      return "default";
    case ValueSource::kSidecar:
      return "sidecar";
    case ValueSource::kProperty:
      return "property";
  }
  return "?";
}

const std::set<std::string>& contract_sidecar_keys() {
  static const std::set<std::string> keys = {"object_padding", "resize",     "pad_value",
                                             "object_classes", "tile_width", "tile_height",
                                             "tile_overlap"};
  return keys;
}

void parse_contract_keys(const json& j, const std::string& origin, ModelConfig& cfg) {
  InputContract& c = cfg.contract;
  if (j.contains("object_padding")) c.object_padding = read_padding(j.at("object_padding"), origin);
  if (j.contains("resize")) c.resize = read_resize(j.at("resize"), origin);
  if (j.contains("pad_value")) {
    const json& v = j.at("pad_value");
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 255)
      fail(origin, "pad_value", "expected an integer between 0 and 255, found " + quote(v));
    // A fill that is never drawn is most likely a forgotten "resize".
    if (c.resize != ResizeMode::kLetterbox)
      fail(origin, "pad_value", "only valid with \"resize\": \"letterbox\"");
    c.pad_value = v.get<int>();
  }
  if (j.contains("object_classes")) c.object_classes = read_classes(j.at("object_classes"), origin);
  read_tiles(j, origin, c);
}

ResolvedContract resolve_contract(const InputContract& sidecar, const ContractOverrides& props) {
  ResolvedContract r;
  r.object_padding = pick(props.object_padding, sidecar.object_padding, 0.0);
  std::optional<ResizeMode> resize_prop;
  if (props.keep_aspect_ratio)
    resize_prop = *props.keep_aspect_ratio ? ResizeMode::kLetterbox : ResizeMode::kStretch;
  r.resize = pick(resize_prop, sidecar.resize, ResizeMode::kStretch);
  r.pad_value = pick(props.pad_value, sidecar.pad_value, 114);
  r.object_classes = pick(props.object_classes, sidecar.object_classes, {});
  r.tile_width = pick(props.tile_width, sidecar.tile_width, 0);
  r.tile_height = pick(props.tile_height, sidecar.tile_height, 0);
  r.tile_overlap = pick(props.tile_overlap, sidecar.tile_overlap, 0.2);
  return r;
}

std::string describe(const ResolvedContract& c) {
  char padding[32];
  std::snprintf(padding, sizeof padding, "%g", c.object_padding.value);
  std::string classes;
  for (const std::string& l : c.object_classes.value) classes += (classes.empty() ? "" : ",") + l;
  auto from = [](ValueSource s) { return std::string(" (") + to_string(s) + ")"; };
  auto tile = [](int v) { return v > 0 ? std::to_string(v) : std::string("input"); };
  char overlap[32];
  std::snprintf(overlap, sizeof overlap, "%g", c.tile_overlap.value);
  return std::string("object-padding ") + padding + from(c.object_padding.from) + ", resize " +
         to_string(c.resize.value) + from(c.resize.from) + ", pad-value " +
         std::to_string(c.pad_value.value) + from(c.pad_value.from) + ", object-class " +
         (classes.empty() ? "(every region)" : classes) + from(c.object_classes.from) +
         ", tile-width " + tile(c.tile_width.value) + from(c.tile_width.from) + ", tile-height " +
         tile(c.tile_height.value) + from(c.tile_height.from) + ", tile-overlap " + overlap +
         from(c.tile_overlap.from);
}

}  // namespace torchinfer
