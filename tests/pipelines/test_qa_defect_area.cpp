// torchinfer-qa-line --max-defect-area-mm2 end to end: a segmentation
// detector (build/tests/seg_part.pt: one bracket with one scratch whose
// mask is 16 x 16 = 256 frame pixels) judged by the defect's area.
#include "qa_run.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

QaOutput judge(const std::string& limit) {
  const std::string models = env_or("TORCHINFER_TEST_MODELS", "build/tests");
  const Result r =
      run({qa_app(), "--model", models + "/seg_part.pt", "--classifier", "none", "--part-classes",
           "bracket", "--source", "videotestsrc num-buffers=12 ! video/x-raw,width=128,height=128",
           "--max-defect-area-mm2", limit, "--mm-per-pixel", "0.1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return parse_qa_output(r.out);
}

}  // namespace

TEST(QaLineDefectArea, ScratchLargerThanTheLimitRejects) {
  const QaOutput o = judge("2.5");  // 256 px x 0.01 mm² = 2.56 mm² > 2.5
  ASSERT_EQ(o.parts.size(), 1u);
  EXPECT_EQ(o.parts[0]["verdict"], "reject");
  ASSERT_EQ(o.parts[0]["defects"].size(), 1u);
  EXPECT_EQ(o.parts[0]["defects"][0]["class"], "defect_area");
  EXPECT_NEAR(o.parts[0]["defects"][0]["area_mm2"].get<double>(), 2.56, 1e-9);
  EXPECT_NEAR(o.parts[0]["evidence"]["defect_area_mm2"]["scratch"].get<double>(), 2.56, 1e-9);
  EXPECT_EQ(o.summary["rejected_by_defect"]["defect_area"], 1);
}

TEST(QaLineDefectArea, ScratchWithinTheLimitPasses) {
  const QaOutput o = judge("2.6");
  ASSERT_EQ(o.parts.size(), 1u);
  EXPECT_EQ(o.parts[0]["verdict"], "pass");
  EXPECT_TRUE(o.parts[0]["defects"].empty());
  EXPECT_NEAR(o.parts[0]["evidence"]["defect_area_mm2"]["scratch"].get<double>(), 2.56, 1e-9);
  EXPECT_EQ(o.summary["passed"], 1);
}
