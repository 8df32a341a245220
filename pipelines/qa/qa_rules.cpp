#include "qa/qa_rules.h"

#include <glib.h>

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "qa/qa_anomaly.h"

namespace torchinfer::qa {

namespace {

// What the app needs to know of a model before it runs.
struct ModelFacts {
  std::string sidecar;  // empty: none beside the model (the element's defaults)
  Task task = Task::kClassification;
  std::vector<std::string> labels;  // empty: unknown, classes are taken on trust
  std::optional<Decoder> decoder;
};

// Throws std::runtime_error "model config '<file>': <what is wrong>".
ModelFacts read_model(const std::string& model) {
  ModelFacts f;
  f.sidecar = default_sidecar_path(model);
  if (f.sidecar.empty()) return f;
  try {
    const ModelConfig c = parse_model_config(f.sidecar);
    f.task = c.task;
    f.decoder = c.decoder;
    for (const auto& l : c.labels)
      if (!l.empty()) f.labels.push_back(l);
  } catch (const std::exception& e) {
    // The core's errors start with the file; say what the file is.
    std::string why = e.what();
    if (why.rfind(f.sidecar + ": ", 0) == 0) why.erase(0, f.sidecar.size() + 2);
    throw std::runtime_error("model config '" + f.sidecar + "': " + why);
  }
  return f;
}

std::set<std::string> split_classes(const std::string& s) {
  std::set<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.insert(item);
  return out;
}

// False, with a message, if a class is not among `labels` (when known).
bool known_classes(const std::set<std::string>& classes, const std::vector<std::string>& labels,
                   const std::string& model) {
  for (const auto& c : classes)
    if (!labels.empty() && std::find(labels.begin(), labels.end(), c) == labels.end()) {
      g_printerr("qa-line: class '%s' is not a label of %s\n", c.c_str(), model.c_str());
      return false;
    }
  return true;
}

// A detector given as --classifier would classify nothing: every part
// would end "incomplete" without a word.
bool is_classifier(const std::string& path, const ModelFacts& f) {
  if (f.task == Task::kClassification) return true;
  g_printerr(
      "qa-line: --classifier %s: its task is '%s' (model config '%s'), not classification; give "
      "a classifier of the part crops, or --classifier none to judge from the detector's defect "
      "boxes\n",
      path.c_str(), to_string(f.task), f.sidecar.c_str());
  return false;
}

// A classifier or detector given as --anomaly would judge nothing: every
// part would pass on no anomaly evidence.
bool is_anomaly_model(const std::string& path, const ModelFacts& f) {
  if (f.task == Task::kAnomaly) return true;
  if (f.sidecar.empty())
    g_printerr(
        "qa-line: --anomaly %s: no sidecar (%s.json) says its task; give an anomaly model of the "
        "part crops (e.g. models/demo/part_anomaly.pt) with \"task\": \"anomaly\" in its "
        "sidecar\n",
        path.c_str(), path.substr(0, path.rfind('.')).c_str());
  else
    g_printerr(
        "qa-line: --anomaly %s: its task is '%s' (model config '%s'), not anomaly; give an "
        "anomaly model of the part crops (e.g. models/demo/part_anomaly.pt)\n",
        path.c_str(), to_string(f.task), f.sidecar.c_str());
  return false;
}

// --max-defect-area-mm2 judges defect masks: they come from a segmentation
// detector's defect boxes or the --segmenter's (`masks`: that model's facts), in mm through the
// calibration. Alone, either option would quietly change nothing.
bool defect_area_options(const Options& o, const ModelFacts& masks) {
  const char* why = nullptr;
  if (o.has_defect_area_limit() && !(o.mm_per_pixel > 0))
    why = "--max-defect-area-mm2 needs --mm-per-pixel MM (the size of one frame pixel on the belt)";
  else if (!o.has_defect_area_limit() && o.mm_per_pixel != 0)
    why = "--mm-per-pixel calibrates --max-defect-area-mm2: give both, or neither";
  else if (o.has_defect_area_limit() && o.has_classifier())
    why = "--max-defect-area-mm2 judges the detector's defect masks: add --classifier none";
  else if (o.defect_area_views != "max" && !o.has_defect_area_limit())
    why = "--defect-area-views judges the --max-defect-area-mm2 rule: give the limit too";
  else if (o.has_segmenter() && !o.has_defect_area_limit())
    why = "--segmenter judges parts by defect area: add --max-defect-area-mm2 and --mm-per-pixel";
  if (why) {
    g_printerr("qa-line: %s\n", why);
    return false;
  }
  if (!o.has_defect_area_limit() || masks.decoder == Decoder::kYolov8Seg) return true;
  const std::string& model = o.has_segmenter() ? o.segmenter : o.model;
  g_printerr(
      "qa-line: --max-defect-area-mm2: the %s %s gives no masks (model config '%s' has no "
      "\"decoder\": \"yolov8-seg\"); give a segmentation %s\n",
      o.has_segmenter() ? "segmenter" : "detector", model.c_str(),
      masks.sidecar.empty() ? "none" : masks.sidecar.c_str(),
      o.has_segmenter() ? "model" : "detector or --segmenter");
  return false;
}

void set_classes(const Options& o, const std::vector<std::string>& detector_labels, QaRules& r) {
  r.rule = o.has_classifier() ? QaRule::kVote : QaRule::kMax;
  r.defect_threshold = o.defect_threshold;
  r.supervised = o.supervised();
  r.anomaly = o.has_anomaly();
  r.at_gate = o.gate.has_value();
  r.codes = o.codes;
  r.require_code = o.require_code;
  if (o.has_defect_area_limit()) r.max_defect_area_mm2 = o.max_defect_area_mm2;
  r.defect_area_median = o.defect_area_views == "median";
  if (!o.part_classes.empty()) r.part_classes = split_classes(o.part_classes);
  if (!o.defect_classes.empty()) {
    r.defect_classes = split_classes(o.defect_classes);
  } else if (!detector_labels.empty()) {
    r.defect_classes.clear();
    for (const auto& l : detector_labels)
      if (!r.part_classes.count(l)) r.defect_classes.insert(l);
  }
}

}  // namespace

// Part classes are the detector's; defect classes the classifier's (its
// other labels, e.g. "ok", are good), or the detector's without one.
bool make_rules(const Options& o, QaRules& rules, ReadRules& read) {
  ModelFacts detector, classifier, anomaly, segmenter;
  try {
    detector = read_model(o.model);
    if (o.has_segmenter()) segmenter = read_model(o.segmenter);
    if (o.has_classifier()) classifier = read_model(o.classifier);
    if (o.has_anomaly()) anomaly = read_model(o.anomaly);
  } catch (const std::exception& e) {
    g_printerr("qa-line: %s\n", e.what());
    return false;
  }
  if (o.has_classifier() && !is_classifier(o.classifier, classifier)) return false;
  if (o.has_anomaly() && !is_anomaly_model(o.anomaly, anomaly)) return false;
  const ModelFacts& masks = o.has_segmenter() ? segmenter : detector;
  if (!defect_area_options(o, masks)) return false;
  if (!(o.part_threshold >= 0 && o.part_threshold <= 1)) {
    g_printerr("qa-line: part threshold must lie in 0..1\n");
    return false;
  }
  // With --segmenter the defect classes are its labels.
  set_classes(o, masks.labels, rules);
  try {
    validate(rules);
  } catch (const std::exception& e) {
    g_printerr("qa-line: %s\n", e.what());
    return false;
  }
  const bool judged_by_classifier = o.has_classifier();
  if (!known_classes(rules.part_classes, detector.labels, o.model) ||
      !known_classes(rules.defect_classes, judged_by_classifier ? classifier.labels : masks.labels,
                     judged_by_classifier ? o.classifier
                     : o.has_segmenter()  ? o.segmenter
                                          : o.model))
    return false;
  read.part_classes.assign(rules.part_classes.begin(), rules.part_classes.end());
  read.part_threshold = o.part_threshold;
  read.classifier = judged_by_classifier;
  read.defect_boxes = !judged_by_classifier && rules.supervised;
  read.anomaly = rules.anomaly;
  read.anomaly_view = read_anomaly_view;
  read.codes = rules.codes;
  read.mm_per_pixel = o.mm_per_pixel;
  read.segmenter = o.has_segmenter();
  return true;
}

}  // namespace torchinfer::qa
