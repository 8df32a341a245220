// torchinfer-qa-line on the demo clip: what it loses is counted and
// reported, and what it keeps says what it is.
// - A reject's snapshot draws the part's box in red, and its record names
//   the part, its class and the defect that rejected it with its score.
// - The --evidence folder replaced by a symbolic link mid-run: nothing is
//   written (or deleted) through the link, every refused file is counted,
//   exit status 3.
// - An anomaly model that returns NaN: the invalid results are counted in
//   the summary, a WARNING says so, exit status 4 (pipelines/README.md).
#include <gst/gst.h>
#include <unistd.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>

#include "qa_run.h"

using nlohmann::json;
using namespace torchinfer::test;
namespace fs = std::filesystem;

namespace {

std::string scratch(const std::string& name) {
  const std::string dir = testing::TempDir() + "qa-losses-" + name;
  fs::remove_all(dir);
  return dir;
}

std::vector<std::string> base_args() {
  return {qa_app(),   "--clip",       qa_clip(),       "--model",
          qa_model(), "--classifier", qa_classifier(), "--quiet"};
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::string test_model(const std::string& name) {
  return env_or("TORCHINFER_TEST_MODELS", ".") + "/" + name;
}

}  // namespace

// The old snapshot drew a reject green with "bracket reject"; now red with
// "#id class defect score", the caption made from the record's fields.
TEST(QaLineLosses, RejectSnapshotsAreRedAndNameTheirDefect) {
  const std::string dir = scratch("red");
  auto args = base_args();
  args.push_back("--evidence");
  args.push_back(dir);
  const Result r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const QaOutput o = parse_qa_output(r.out);
  int rejects = 0;
  for (const json& d : o.parts) {
    if (d["verdict"] != "reject") continue;
    ++rejects;
    const json rec = read_json(dir + "/qa-line-" + std::to_string(rejects) + "-event.json");
    EXPECT_EQ(rec["track_id"], d["part"]);
    EXPECT_EQ(rec["label"], d["class"]);
    ASSERT_FALSE(d["defects"].empty()) << d;
    EXPECT_EQ(rec["defect"], d["defects"][0]["class"]) << rec;
    EXPECT_DOUBLE_EQ(rec["defect_score"].get<double>(),
                     d["defects"][0]["confidence"].get<double>());
    // The box's left edge, 1 px wide on a 640 px frame: red (JPEG's colour
    // subsampling halves its saturation, not its hue).
    const cv::Mat snap = cv::imread(d["evidence"]["snapshot"].get<std::string>());
    ASSERT_FALSE(snap.empty()) << d;
    const json& box = d["evidence"]["crop_box"];
    const int x = box["x"], y0 = box["y"], h = box["height"];
    double red = 0, green = 0, blue = 0;
    for (int y = y0 + h / 4; y < y0 + 3 * h / 4; ++y) {
      const cv::Vec3b p = snap.at<cv::Vec3b>(y, x);
      blue += p[0];
      green += p[1];
      red += p[2];
    }
    const int n = 3 * h / 4 - h / 4;
    EXPECT_GT((red - green) / n, 60) << d << " R " << red / n << " G " << green / n;
    EXPECT_GT((red - blue) / n, 60) << d << " R " << red / n << " B " << blue / n;
  }
  EXPECT_EQ(rejects, 9);
}

// The folder is replaced by a link to another folder once the first reject
// is out: not one file lands there (nor is one deleted there), every file
// of the rejects is either written before the swap or counted as lost.
TEST(QaLineLosses, EvidenceFolderSwappedForALinkMidRunWritesNothingThere) {
  const std::string base = scratch("swap");
  fs::create_directories(base + "/other");
  { std::ofstream(base + "/other/qa-line-1-snapshot.jpg") << "not ours"; }
  const std::string dir = base + "/ev";
  auto args = base_args();
  for (const char* a : {"--evidence", dir.c_str(), "--evidence-max-events", "2"}) args.push_back(a);
  Child app(args);
  ASSERT_NE(app.wait_line(false, "\"snapshot\"", 300), "") << app.err();
  fs::rename(dir, base + "/moved");
  fs::create_directory_symlink(base + "/other", dir);
  ASSERT_EQ(app.wait_exit(300), 3) << app.err();
  std::string out;
  for (const auto& l : app.out_lines()) out += l + "\n";
  const QaOutput o = parse_qa_output(out);
  EXPECT_EQ(o.parts.size(), 13u) << "every part still decided";
  const json& s = o.summary["evidence"];
  EXPECT_EQ(s["events"], 9);
  const int written = s["snapshots"].get<int>() + s["crops"].get<int>() + s["clips"].get<int>();
  EXPECT_GE(s["write_failures"].get<int>(), 1) << s;
  EXPECT_EQ(written + s["write_failures"].get<int>(), 27) << s;
  EXPECT_NE(s["last_error"].get<std::string>().find(
                dir + "/qa-line-9-clip.mkv: the evidence folder was replaced by a symbolic link"),
            std::string::npos)
      << s;
  EXPECT_NE(app.err().find("qa-line: WARNING: evidence lost: " + s["write_failures"].dump() +
                           " files not written"),
            std::string::npos)
      << app.err();
  std::vector<std::string> there;
  for (const auto& e : fs::directory_iterator(base + "/other"))
    there.push_back(e.path().filename());
  EXPECT_EQ(there, std::vector<std::string>{"qa-line-1-snapshot.jpg"});
}

// Every view of the anomaly model is NaN: no part can be judged, and the
// run says why instead of exiting 0 with 13 `incomplete` parts.
TEST(QaLineLosses, NanAnomalyResultsAreCountedWarnedAndExitFour) {
  const Result r = run({qa_app(), "--clip", qa_clip(), "--model", qa_model(), "--classifier",
                        "none", "--anomaly", test_model("anomaly_all_nan.pt"), "--quiet"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  const QaOutput o = parse_qa_output(r.out);
  EXPECT_EQ(o.summary["incomplete"], 13) << o.summary;
  EXPECT_EQ(o.summary["passed"], 0);
  EXPECT_EQ(o.summary["rejected"], 0);
  const json& inv = o.summary["invalid_results"];
  EXPECT_EQ(inv["detector"], 0) << inv;
  EXPECT_FALSE(inv.contains("classifier")) << inv;
  const int nan = inv["anomaly"].get<int>();
  EXPECT_GT(nan, 13 * 10) << inv << ": every part view, at least 10 a part";
  EXPECT_NE(r.err.find("qa-line: WARNING: " + std::to_string(nan) +
                       " model results were NaN or infinite (" + std::to_string(nan) +
                       " of the anomaly) and judged nothing; 13 parts incomplete; exit status 4"),
            std::string::npos)
      << r.err;
}

// A healthy run says 0 of each of its models.
TEST(QaLineLosses, AHealthyRunCountsNoInvalidResults) {
  const Result r = run(base_args());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const QaOutput o = parse_qa_output(r.out);
  EXPECT_EQ(o.summary["invalid_results"], json({{"detector", 0}, {"classifier", 0}}));
  EXPECT_EQ(r.err.find("NaN"), std::string::npos) << r.err;
}
