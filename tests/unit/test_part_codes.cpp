// PartVerdicts with codes (QaRules::codes): each part's code is the first
// one read on its track, carried into its decision and JSON line; parts
// without one are counted, and with require_code a judged one is rejected
// ("no_code").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "parts/core/decision_json.h"
#include "parts/core/part_verdicts.h"

using namespace torchinfer;

namespace {

constexpr int kW = 640, kH = 480;

QaPart view(int id, double x0, std::optional<QaCode> code = std::nullopt,
            const std::string& top = "ok") {
  QaPart p;
  p.id = id;
  p.label = "bracket";
  p.confidence = 0.9;
  p.box = {x0, 100, x0 + 200, 300};
  p.judged = true;
  p.evidence = {{top, 0.9}};
  p.code = std::move(code);
  return p;
}

QaFrame frame(std::int64_t i, std::vector<QaPart> parts, std::vector<int> ended = {}) {
  QaFrame f;
  f.index = i;
  f.width = kW;
  f.height = kH;
  f.parts = std::move(parts);
  f.ended = std::move(ended);
  return f;
}

QaCode code(const std::string& text, const std::string& format = "DataMatrix") {
  return QaCode{format, text, -1};
}

QaRules code_rules(bool require) {
  QaRules r;
  r.codes = true;
  r.require_code = require;
  return r;
}

}  // namespace

// Part 1 is read on its second view ("SN-0001"), then torchcodes carries it
// (and a later view shows another text: the first read stays); part 2 is
// never read. Ends decide both: the code, its first frame, the count.
TEST(PartCodes, FirstReadOfTheTrackIsThePartsCode) {
  PartVerdicts v(code_rules(false));
  v.add_frame(frame(0, {view(1, 10), view(2, 300)}));
  v.add_frame(frame(1, {view(1, 20, code("SN-0001")), view(2, 310)}));
  v.add_frame(frame(2, {view(1, 30, code("SN-9999", "QRCode")), view(2, 320)}));
  const auto out = v.add_frame(frame(3, {}, {1, 2}));
  ASSERT_EQ(out.size(), 2u);
  ASSERT_TRUE(out[0].code.has_value());
  EXPECT_EQ(out[0].code->format, "DataMatrix");
  EXPECT_EQ(out[0].code->text, "SN-0001");
  EXPECT_EQ(out[0].code->frame, 1);
  EXPECT_EQ(out[0].verdict, QaVerdict::kPass);
  EXPECT_FALSE(out[1].code.has_value());
  EXPECT_EQ(out[1].verdict, QaVerdict::kPass) << "a code is not required";
  EXPECT_TRUE(out[1].defects.empty());
  EXPECT_EQ(v.counts().without_code, 1);
  EXPECT_EQ(v.counts().passed, 2);

  const auto j1 = nlohmann::json::parse(decision_json(out[0], {}, true));
  EXPECT_EQ(j1["code"], (nlohmann::json{{"format", "DataMatrix"}, {"text", "SN-0001"}}));
  const auto j2 = nlohmann::json::parse(decision_json(out[1], {}, true));
  ASSERT_TRUE(j2.contains("code"));
  EXPECT_TRUE(j2["code"].is_null());
  EXPECT_FALSE(nlohmann::json::parse(decision_json(out[0]))["code"].is_object())
      << "without codes the line has no code";
  EXPECT_FALSE(nlohmann::json::parse(decision_json(out[0])).contains("code"));
}

// require_code: the unread part is a reject whose only defect is no_code;
// the read one passes; an unjudged part stays incomplete (no no_code), but
// is still counted without a code.
TEST(PartCodes, RequireCodeRejectsAJudgedPartWithoutOne) {
  PartVerdicts v(code_rules(true));
  QaPart unjudged = view(3, 400);
  unjudged.judged = false;
  v.add_frame(frame(0, {view(1, 10, code("SN-0001")), view(2, 220), unjudged}));
  const auto out = v.add_frame(frame(1, {}, {1, 2, 3}));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].verdict, QaVerdict::kPass);
  EXPECT_EQ(out[1].verdict, QaVerdict::kReject);
  ASSERT_EQ(out[1].defects.size(), 1u);
  EXPECT_EQ(out[1].defects[0].first, "no_code");
  EXPECT_EQ(out[1].defects[0].second, 1.0);
  EXPECT_EQ(out[2].verdict, QaVerdict::kIncomplete);
  EXPECT_TRUE(out[2].defects.empty());
  EXPECT_EQ(v.counts().rejected, 1);
  EXPECT_EQ(v.counts().rejected_by_defect.at("no_code"), 1);
  EXPECT_EQ(v.counts().without_code, 2);
  const auto j = nlohmann::json::parse(decision_json(out[1], {}, true));
  EXPECT_EQ(j["verdict"], "reject");
  EXPECT_EQ(j["defects"], nlohmann::json::parse(R"([{"class":"no_code","confidence":1.0}])"));
  EXPECT_TRUE(j["code"].is_null());
}

// A defective part with no code keeps its defect first, no_code after it.
TEST(PartCodes, NoCodeJoinsTheDefectsOfADefectivePart) {
  PartVerdicts v(code_rules(true));
  v.add_frame(frame(0, {view(1, 10, std::nullopt, "scratch")}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].verdict, QaVerdict::kReject);
  ASSERT_EQ(out[0].defects.size(), 2u);
  EXPECT_EQ(out[0].defects[0].first, "scratch");
  EXPECT_EQ(out[0].defects[1].first, "no_code");
  EXPECT_EQ(v.counts().rejected_by_defect.at("scratch"), 1);
  EXPECT_EQ(v.counts().rejected_by_defect.at("no_code"), 1);
}

// Codes off: a code on the views is ignored and nothing is counted.
TEST(PartCodes, CodesOffIgnoresCodesAndCountsNothing) {
  PartVerdicts v({});
  v.add_frame(frame(0, {view(1, 10, code("SN-0001")), view(2, 220)}));
  const auto out = v.flush();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(out[0].code.has_value());
  EXPECT_EQ(v.counts().without_code, 0);
}

TEST(PartCodes, RequireCodeWithoutCodesIsRefused) {
  QaRules r;
  r.require_code = true;
  EXPECT_THROW(PartVerdicts{r}, std::invalid_argument);
}
