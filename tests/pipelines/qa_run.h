// Shared by the QA-line pipeline tests: paths, the decision lines and summary
// of one torchinfer-qa-line run.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "process.h"

namespace torchinfer::test {

inline std::string qa_app() {
  return env_or("TORCHINFER_QA_LINE", "torchinfer-qa-line");
}
inline std::string qa_root() {
  return env_or("TORCHINFER_SOURCE_ROOT", ".");
}
inline std::string qa_model() {
  return qa_root() + "/models/demo/parts_detector.pt";
}
inline std::string qa_classifier(bool int8 = false) {
  return qa_root() +
         (int8 ? "/models/demo/defect_classifier_int8.pt" : "/models/demo/defect_classifier.pt");
}
inline std::string qa_anomaly() {
  return qa_root() + "/models/demo/part_anomaly.pt";
}
inline std::string qa_clip() {
  return qa_root() + "/models/demo/line.mkv";
}
inline std::string qa_truth_path() {
  return qa_root() + "/models/demo/line.truth.json";
}
inline nlohmann::json qa_truth() {
  std::ifstream in(qa_truth_path());
  return nlohmann::json::parse(in);
}

// Decision lines and the summary (last line) of one run.
struct QaOutput {
  std::vector<nlohmann::json> parts;
  nlohmann::json summary;
};

inline QaOutput parse_qa_output(const std::string& text) {
  QaOutput o;
  const auto lines = json_lines(text);
  EXPECT_FALSE(lines.empty());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i + 1 == lines.size()) {
      EXPECT_EQ(lines[i]["event"], "summary");
      o.summary = lines[i];
    } else {
      EXPECT_EQ(lines[i]["event"], "part") << i;
      o.parts.push_back(lines[i]);
    }
  }
  return o;
}

}  // namespace torchinfer::test
