#include "eval/truth_file.h"

#include <cmath>
#include <limits>

#include "common/error.h"
#include "common/json_file.h"

namespace torchinfer {

namespace {

using nlohmann::json;

// Field access that names the file and the field in every error.
struct Reader {
  std::string origin;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(ErrorKind::kConfigInvalid, origin + ": " + field + ": " + what +
                                               "; regenerate it with "
                                               "models/demo/make_detection_clip.py");
  }
  const json& at(const json& obj, const std::string& key, const std::string& field) const {
    const auto it = obj.find(key);
    if (it == obj.end()) fail(field + "." + key, "missing");
    return *it;
  }
  const json& object(const json& obj, const std::string& key, const std::string& field) const {
    const json& v = at(obj, key, field);
    if (!v.is_object()) fail(field + "." + key, "expected an object");
    return v;
  }
  const json& array(const json& obj, const std::string& key, const std::string& field) const {
    const json& v = at(obj, key, field);
    if (!v.is_array()) fail(field + "." + key, "expected a list");
    return v;
  }
  std::string string(const json& obj, const std::string& key, const std::string& field) const {
    const json& v = at(obj, key, field);
    if (!v.is_string()) fail(field + "." + key, "expected a string");
    return v.get<std::string>();
  }
  bool boolean(const json& obj, const std::string& key, const std::string& field) const {
    const json& v = at(obj, key, field);
    if (!v.is_boolean()) fail(field + "." + key, "expected true or false");
    return v.get<bool>();
  }
  int integer(const json& v, const std::string& field, long long lo, long long hi) const {
    if (!v.is_number_integer()) fail(field, "expected an integer");
    const long long n = v.get<long long>();
    if (n < lo || n > hi)
      fail(field,
           std::to_string(n) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
    return static_cast<int>(n);
  }
  int integer(const json& obj, const std::string& key, const std::string& field, long long lo,
              long long hi) const {
    return integer(at(obj, key, field), field + "." + key, lo, hi);
  }
  std::optional<int> optional_int(const json& obj, const std::string& key, const std::string& field,
                                  int hi) const {
    const json& v = at(obj, key, field);
    if (v.is_null()) return std::nullopt;
    return integer(v, field + "." + key, 0, hi);
  }
  double number(const json& v, const std::string& field) const {
    if (!v.is_number()) fail(field, "expected a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(field, "not a finite number");
    return d;
  }
};

constexpr int kMaxFrames = 1 << 20;
constexpr int kMaxSide = 1 << 16;

// A part's first_full/last_full frames and its verdict, which must agree
// with them and with "defective".
void read_part_verdict(const Reader& rd, const json& p, const std::string& field, TruthPart& part) {
  part.first_full = rd.optional_int(p, "first_full", field, kMaxFrames);
  part.last_full = rd.optional_int(p, "last_full", field, kMaxFrames);
  if (part.first_full.has_value() != part.last_full.has_value() ||
      (part.first_full && *part.first_full > *part.last_full))
    rd.fail(field + ".last_full", "does not fit first_full");
  const json& verdict = rd.at(p, "verdict", field);
  if (verdict.is_null()) {
    if (part.first_full) rd.fail(field + ".verdict", "null for a part seen whole");
    return;
  }
  if (!verdict.is_string() || (verdict != "pass" && verdict != "reject"))
    rd.fail(field + ".verdict", "expected \"pass\", \"reject\" or null");
  part.verdict = verdict.get<std::string>();
  if (!part.first_full) rd.fail(field + ".verdict", "set for a part never seen whole");
  if ((part.verdict == "reject") != part.defective)
    rd.fail(field + ".verdict", "\"" + part.verdict + "\" contradicts defective");
}

TruthPart read_part(const Reader& rd, const json& p, std::size_t i) {
  const std::string field = ".parts[" + std::to_string(i) + "]";
  if (!p.is_object()) rd.fail(field, "expected an object");
  TruthPart part;
  part.id = rd.integer(p, "id", field, 0, std::numeric_limits<int>::max());
  if (part.id != static_cast<int>(i))
    rd.fail(field + ".id", "expected " + std::to_string(i) + " (ids number the parts in order)");
  part.kind = rd.string(p, "kind", field);
  part.label = rd.string(p, "class", field);
  part.defective = rd.boolean(p, "defective", field);
  const json& defects = rd.array(p, "defects", field);
  for (std::size_t k = 0; k < defects.size(); ++k) {
    if (!defects[k].is_string())
      rd.fail(field + ".defects[" + std::to_string(k) + "]", "expected a string");
    part.defects.push_back(defects[k].get<std::string>());
  }
  if (part.defective != !part.defects.empty())
    rd.fail(field + ".defects", part.defective ? "empty for a defective part"
                                               : "not empty for a part that is not defective");
  read_part_verdict(rd, p, field, part);
  return part;
}

// An object box of a frame; `parts` bounds the part id it names.
TruthBox read_object(const Reader& rd, const json& o, const std::string& of, std::size_t parts) {
  if (!o.is_object()) rd.fail(of, "expected an object");
  TruthBox b;
  b.label = rd.string(o, "class", of);
  b.id = rd.integer(o, "part", of, 0, static_cast<long long>(parts) - 1);
  b.ignore = rd.boolean(o, "ignore", of);
  const json& bbox = rd.array(o, "bbox", of);
  if (bbox.size() != 4) rd.fail(of + ".bbox", "expected [x0, y0, x1, y1]");
  b.box = {rd.number(bbox[0], of + ".bbox[0]"), rd.number(bbox[1], of + ".bbox[1]"),
           rd.number(bbox[2], of + ".bbox[2]"), rd.number(bbox[3], of + ".bbox[3]")};
  if (b.box.width() < 0 || b.box.height() < 0) rd.fail(of + ".bbox", "x0 > x1 or y0 > y1");
  return b;
}

void read_frames(const Reader& rd, const json& j, TruthClip& clip) {
  const json& frames = rd.array(j, "frames", "");
  if (static_cast<int>(frames.size()) != clip.num_frames)
    rd.fail(".frames", std::to_string(frames.size()) + " entries, num_frames says " +
                           std::to_string(clip.num_frames));
  for (std::size_t f = 0; f < frames.size(); ++f) {
    const std::string field = ".frames[" + std::to_string(f) + "]";
    if (!frames[f].is_object()) rd.fail(field, "expected an object");
    if (rd.integer(frames[f], "frame", field, 0, kMaxFrames) != static_cast<int>(f))
      rd.fail(field + ".frame", "expected " + std::to_string(f) + " (frames in order)");
    const json& objects = rd.array(frames[f], "objects", field);
    std::vector<TruthBox> boxes;
    for (std::size_t k = 0; k < objects.size(); ++k)
      boxes.push_back(read_object(rd, objects[k], field + ".objects[" + std::to_string(k) + "]",
                                  clip.parts.size()));
    clip.frames.push_back(std::move(boxes));
  }
}

}  // namespace

TruthClip read_truth_clip(const std::string& path) {
  const json j = read_json_file(path, "truth file");
  const Reader rd{"truth file '" + path + "'"};
  if (!j.is_object()) rd.fail("(top level)", "expected an object");
  TruthClip clip;
  clip.video = rd.string(j, "video", "");
  clip.width = rd.integer(j, "width", "", 1, kMaxSide);
  clip.height = rd.integer(j, "height", "", 1, kMaxSide);
  clip.num_frames = rd.integer(j, "num_frames", "", 0, kMaxFrames);
  clip.fps = rd.number(rd.at(j, "fps", ""), ".fps");
  if (clip.fps <= 0) rd.fail(".fps", "must be above 0");
  const json& classes = rd.array(j, "classes", "");
  for (std::size_t i = 0; i < classes.size(); ++i) {
    if (!classes[i].is_string())
      rd.fail(".classes[" + std::to_string(i) + "]", "expected a string");
    clip.classes.push_back(classes[i].get<std::string>());
  }
  const json& parts = rd.array(j, "parts", "");
  for (std::size_t i = 0; i < parts.size(); ++i) clip.parts.push_back(read_part(rd, parts[i], i));
  read_frames(rd, j, clip);
  return clip;
}

}  // namespace torchinfer
