// torchinfer-qa-line --gate on the demo clip against its truth
// (models/demo/line.truth.json): each part is decided when its centre
// crosses the gate, exactly the parts that cross are decided, and the
// counts per class and per verdict are the truth's, at inference-interval 1
// and 3; bad --gate values are usage errors (exit status 2) naming the flag.
#include <map>
#include <set>
#include <utility>

#include "qa_run.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

constexpr double kGateX = 320;

// The truth parts whose box centre is on both sides of x = kGateX (by more
// than torchanalytics' 4 px hysteresis) in the frames it is seen.
std::vector<json> truth_parts_crossing() {
  const json t = qa_truth();
  std::map<int, std::pair<double, double>> span;  // part -> min, max centre x
  for (const json& f : t["frames"])
    for (const json& o : f["objects"]) {
      if (!o.contains("part") || (o["class"] != "bracket" && o["class"] != "washer")) continue;
      const double cx = (o["bbox"][0].get<double>() + o["bbox"][2].get<double>()) / 2;
      auto [it, fresh] = span.try_emplace(o["part"].get<int>(), cx, cx);
      it->second = {std::min(it->second.first, cx), std::max(it->second.second, cx)};
    }
  std::vector<json> out;
  for (const json& p : t["parts"]) {
    auto it = span.find(p["id"].get<int>());
    if (it != span.end() && it->second.first < kGateX - 4 && it->second.second > kGateX + 4)
      out.push_back(p);
  }
  return out;
}

Result run_gated(const std::string& out, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {
      qa_app(),       "--clip",        qa_clip(), "--model",  qa_model(),
      "--classifier", qa_classifier(), "--quiet", "--output", out};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run(argv);
}

class QaLineGate : public testing::TestWithParam<int> {};

}  // namespace

// The truth says 12 of the 13 parts cross x = 320 (the 13th enters at the
// end of the clip and never reaches it): 7 brackets and 5 washers, 4 good
// and 8 defective. Parts travel left to right, so with the documented gate
// P1 = (320, 480) below P2 = (320, 0) they cross from its left-hand side to
// its right: forward, the belt's own direction.
TEST_P(QaLineGate, DecidesExactlyThePartsThatCrossWithTheTruthsCounts) {
  const std::vector<json> truth = truth_parts_crossing();
  ASSERT_EQ(truth.size(), 12u);
  std::map<std::string, int> truth_class, truth_verdict;
  std::map<std::pair<std::string, std::string>, int> truth_both;
  for (const json& p : truth) {
    truth_class[p["class"]]++;
    truth_verdict[p["verdict"]]++;
    truth_both[{p["class"], p["verdict"]}]++;
  }
  ASSERT_EQ(truth_class, (std::map<std::string, int>{{"bracket", 7}, {"washer", 5}}));

  const std::string out = testing::TempDir() + "qa_gate_" + std::to_string(GetParam()) + ".jsonl";
  const Result r = run_gated(
      out, {"--gate", "320,480,320,0", "--inference-interval", std::to_string(GetParam())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const QaOutput o = parse_qa_output(read_file(out));
  ASSERT_EQ(o.parts.size(), truth.size()) << r.err;
  std::map<std::pair<std::string, std::string>, int> decided;
  std::set<int> ids;
  for (const json& d : o.parts) {
    EXPECT_EQ(d["reason"], "gate") << d;
    EXPECT_EQ(d["direction"], "forward") << d;
    EXPECT_TRUE(ids.insert(d["part"].get<int>()).second) << "decided twice: " << d;
    decided[{d["class"], d["verdict"]}]++;
  }
  EXPECT_EQ(decided, truth_both);

  const json& g = o.summary["gate"];
  EXPECT_EQ(g["line"], json({320, 480, 320, 0}));
  EXPECT_EQ(g["forward"], 12) << g;
  EXPECT_EQ(g["backward"], 0) << g;
  for (const auto& [label, n] : truth_class)
    EXPECT_EQ(g["by_class"][label], json({{"forward", n}, {"backward", 0}})) << g;
  EXPECT_EQ(g["by_class"].size(), truth_class.size()) << g;
  EXPECT_EQ(g["verdicts"]["forward"], json({{"pass", truth_verdict["pass"]},
                                            {"reject", truth_verdict["reject"]},
                                            {"incomplete", 0}}))
      << g;
  EXPECT_EQ(g["verdicts"]["backward"], json({{"pass", 0}, {"reject", 0}, {"incomplete", 0}}));
  EXPECT_EQ(g["not_at_gate"], 1) << g;
  EXPECT_EQ(o.summary["passed"], truth_verdict["pass"]);
  EXPECT_EQ(o.summary["rejected"], truth_verdict["reject"]);
  EXPECT_EQ(o.summary["frames"], 300);
  EXPECT_NE(r.err.find("qa-line: gate: 12 forward, 0 backward (bracket 7/0, washer 5/0 "
                       "forward/backward); forward: " +
                       std::to_string(truth_verdict["pass"]) + " pass, " +
                       std::to_string(truth_verdict["reject"]) +
                       " reject, 0 incomplete; backward: 0 pass, 0 reject, 0 incomplete; 1 parts "
                       "never crossed it"),
            std::string::npos)
      << r.err;
}

// Named so that the qa-line test's filter (QaLine*) runs it.
INSTANTIATE_TEST_SUITE_P(QaLineGateAt, QaLineGate, testing::Values(1, 3));

// Usage errors, before anything runs; a gate outside the clip's frame is
// found on its first frame. Each names --gate.
TEST(QaLineGateErrors, BadGateValuesExitTwoNamingTheFlag) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1,2,3", "got 3 numbers"},
      {"1,2,3,4,5", "got 5 numbers"},
      {"a,0,320,480", "'a' is not a number"},
      {"320,0,320,x", "'x' is not a number"},
      {"10,10,10,10", "the two points are the same"},
      {"-1,0,320,480", "a coordinate is negative"},
      {"gate:320,0,320,480", "give x1,y1,x2,y2"},
      {"320,0,320,480;1,2,3,4", "give x1,y1,x2,y2"},
      {"", "give x1,y1,x2,y2"},
  };
  for (const auto& [value, reason] : cases) {
    const Result r = run({qa_app(), "--clip", qa_clip(), "--model", qa_model(), "--classifier",
                          qa_classifier(), "--gate", value});
    EXPECT_EQ(r.exit_code, 2) << value << ": " << r.err;
    EXPECT_NE(r.err.find("qa-line: --gate '" + value + "': give x1,y1,x2,y2"), std::string::npos)
        << value << ": " << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << value << ": " << r.err;
    EXPECT_EQ(r.out, "") << value;
  }
  const Result outside = run({qa_app(), "--clip", qa_clip(), "--model", qa_model(), "--classifier",
                              qa_classifier(), "--gate", "700,0,700,480"});
  EXPECT_EQ(outside.exit_code, 2) << outside.err;
  EXPECT_NE(outside.err.find("qa-line: --gate 700,0,700,480: the point (700,0) lies outside the "
                             "640x480 frame; give both ends inside it"),
            std::string::npos)
      << outside.err;
  EXPECT_EQ(outside.out, "") << "no decisions, no summary";
}
