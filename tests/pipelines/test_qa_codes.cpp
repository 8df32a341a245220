// torchinfer-qa-line --codes / --require-code end to end on the demo clip.
// The shipped clip's parts carry no marks (models/demo/part_codes.py says
// why), so every part is tried on every view and none is read: each
// decision line has "code": null, the summary counts 13 parts without a
// code, and --require-code rejects all 13 with the defect no_code, after
// the judges' own defect on the defective ones. Reading real marks is
// covered by the element and unit tests and measured by
// tests/bench/codes_clip.py.
#include <set>

#include "qa_run.h"

using nlohmann::json;
using namespace torchinfer::test;

TEST(QaLineCodes, RequireCodeRejectsEveryUnreadPartWithNoCode) {
  const Result r = run({qa_app(), "--clip", qa_clip(), "--model", qa_model(), "--classifier",
                        qa_classifier(), "--require-code"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const QaOutput o = parse_qa_output(r.out);
  ASSERT_EQ(o.parts.size(), 13u);
  int judged_defective = 0;
  for (const json& d : o.parts) {
    ASSERT_TRUE(d.contains("code")) << d;
    EXPECT_TRUE(d["code"].is_null()) << d;
    EXPECT_EQ(d["verdict"], "reject") << d;
    ASSERT_FALSE(d["defects"].empty()) << d;
    EXPECT_EQ(d["defects"].back(), (json{{"class", "no_code"}, {"confidence", 1.0}})) << d;
    // The judges' verdict is kept: a defect of theirs comes first.
    if (d["evidence"]["top"] != "ok") {
      ASSERT_EQ(d["defects"].size(), 2u) << d;
      EXPECT_EQ(d["defects"][0]["class"], d["evidence"]["top"]) << d;
      judged_defective++;
    } else {
      EXPECT_EQ(d["defects"].size(), 1u) << d;
    }
  }
  EXPECT_EQ(judged_defective, 9) << "the classifier's 9 defective parts";
  const json& s = o.summary;
  EXPECT_EQ(s["passed"], 0);
  EXPECT_EQ(s["rejected"], 13);
  EXPECT_EQ(s["rejected_by_defect"]["no_code"], 13);
  ASSERT_TRUE(s.contains("codes")) << s;
  const json& c = s["codes"];
  EXPECT_EQ(c["parts_with_code"], 0) << c;
  EXPECT_EQ(c["parts_without_code"], 13) << c;
  EXPECT_EQ(c["views_read"], 0) << c;
  EXPECT_EQ(c["views_skipped_known"], 0) << c;
  EXPECT_GT(c["views_tried"].get<int>(), 13 * 20) << "every view of every part: " << c;
  EXPECT_EQ(c["views_failed"], c["views_tried"]) << c;
  EXPECT_NE(r.err.find(", 13 without a readable code; 300 frames"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("qa-line: codes: 0 of 13 parts with a code, 13 without; views: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("left, no readable code\n"), std::string::npos) << r.err;
}
