// A server camera's "evidence" setting (pipelines/server/core/evidence_spec.h) through
// parse_stream_spec, as the config file and POST /streams give it, and the
// evidence metric families (pipelines/server/core/metrics_text.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/core/metrics_text.h"
#include "server/core/server_config.h"

using nlohmann::json;
using namespace torchinfer::server;

namespace {

const std::vector<ModelSpec> kModels = {{"parts", "m.pt"}};

json stream(json evidence, bool track = true) {
  return {{"id", "cam"}, {"uri", "file:///clip.mkv"}, {"track", track}, {"evidence", evidence}};
}

StreamSpec parse(const json& j, const std::string& prefix = "streams[0]") {
  return parse_stream_spec(j, kModels, MqttSpec{}, prefix, "server.json");
}

// "field | message" of a refusal.
std::string refusal(const json& j, const std::string& prefix = "streams[0]") {
  try {
    parse(j, prefix);
  } catch (const torchinfer::FieldError& e) {
    return e.field() + " | " + e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(EvidenceSpec, ReadsTheSettingsAndClasses) {
  const StreamSpec s = parse(stream({{"classes", {"bracket_defect", "washer_defect"}},
                                     {"pre_s", 1.5},
                                     {"max_events", 20},
                                     {"dir", "ev/line1"}}));
  ASSERT_TRUE(s.evidence);
  EXPECT_EQ(s.evidence->classes, (std::vector<std::string>{"bracket_defect", "washer_defect"}));
  EXPECT_DOUBLE_EQ(s.evidence->settings.pre_s, 1.5);
  EXPECT_DOUBLE_EQ(s.evidence->settings.post_s, 1.0);
  EXPECT_EQ(s.evidence->settings.max_events, 20u);
  EXPECT_EQ(resolve_evidence_dir(*s.evidence, "/srv/out", "cam"), "/srv/out/ev/line1");
  EXPECT_TRUE(keeps_class(*s.evidence, "washer_defect"));
  EXPECT_FALSE(keeps_class(*s.evidence, "washer_ok"));
  // to_json gives back what parse_stream_spec reads.
  const json back = to_json(s);
  EXPECT_EQ(back["evidence"], json({{"classes", {"bracket_defect", "washer_defect"}},
                                    {"dir", "ev/line1"},
                                    {"pre_s", 1.5},
                                    {"post_s", 1.0},
                                    {"max_events", 20},
                                    {"max_bytes", 1ull << 30},
                                    {"ring_max_bytes", 64u << 20}}));
  EXPECT_EQ(to_json(parse(back)), back);
}

TEST(EvidenceSpec, DefaultsToEveryClassUnderOutputDir) {
  const StreamSpec s = parse(stream(json::object()));
  ASSERT_TRUE(s.evidence);
  EXPECT_TRUE(s.evidence->classes.empty());
  EXPECT_TRUE(keeps_class(*s.evidence, "anything"));
  EXPECT_EQ(resolve_evidence_dir(*s.evidence, "out/server", "cam"), "out/server/evidence/cam");
  EXPECT_FALSE(to_json(s)["evidence"].contains("dir"));
  EXPECT_FALSE(to_json(s)["evidence"].contains("classes"));
  EXPECT_FALSE(parse({{"id", "c"}, {"uri", "file:///a.mkv"}}).evidence);
  EXPECT_FALSE(to_json(parse({{"id", "c"}, {"uri", "file:///a.mkv"}})).contains("evidence"));
  json abs = stream({{"dir", "/data/evidence"}});
  EXPECT_EQ(resolve_evidence_dir(*parse(abs).evidence, "out", "cam"), "/data/evidence");
}

TEST(EvidenceSpec, LinesMakeCrossingsTheEvents) {
  const StreamSpec s = parse(stream({{"lines", {"gate", "exit"}}, {"classes", {"washer"}}}));
  ASSERT_TRUE(s.evidence);
  EXPECT_EQ(s.evidence->lines, (std::vector<std::string>{"gate", "exit"}));
  EXPECT_EQ(to_json(s)["evidence"]["lines"], json({"gate", "exit"}));
  EXPECT_EQ(to_json(parse(to_json(s))), to_json(s));
  EXPECT_EQ(refusal(stream({{"lines", json::array()}})),
            "streams[0].evidence.lines | server.json: streams[0].evidence.lines: must be a list "
            "of 1 to 64 line names (leave it out: an event is a new track)");
  EXPECT_EQ(refusal(stream({{"lines", {1}}})),
            "streams[0].evidence.lines[0] | server.json: streams[0].evidence.lines[0]: must be a "
            "string (a line name)");
  EXPECT_EQ(refusal(stream({{"lines", "gate"}})),
            "streams[0].evidence.lines | server.json: streams[0].evidence.lines: must be a list "
            "of 1 to 64 line names (leave it out: an event is a new track)");
}

TEST(EvidenceSpec, EveryBadFieldIsNamed) {
  EXPECT_EQ(refusal(stream(json::object(), false)),
            "streams[0].evidence | server.json: streams[0].evidence: needs \"track\": true on "
            "this stream: an event is a new track of one of the classes, kept once per track");
  // A REST body: the field path starts at the body.
  EXPECT_EQ(refusal(stream(json::object(), false), "").substr(0, 30),
            "evidence | server.json: eviden");
  EXPECT_EQ(
      refusal(stream({{"pre_seconds", 2}})),
      "streams[0].evidence.pre_seconds | server.json: streams[0].evidence.pre_seconds: "
      "unknown field; the fields are classes, lines, dir, pre_s, post_s, max_events, max_bytes, "
      "ring_max_bytes");
  EXPECT_EQ(refusal(stream({{"post_s", 60}})),
            "streams[0].evidence.post_s | server.json: streams[0].evidence.post_s: out of "
            "range: give seconds from 0 to 30 (got 60)");
  EXPECT_EQ(refusal(stream({{"max_events", "10"}})),
            "streams[0].evidence.max_events | server.json: streams[0].evidence.max_events: must "
            "be an integer, not string");
  EXPECT_EQ(refusal(stream({{"classes", json::array()}})),
            "streams[0].evidence.classes | server.json: streams[0].evidence.classes: must be a "
            "list of 1 to 64 class labels (leave it out to keep evidence of every class)");
  EXPECT_EQ(refusal(stream({{"classes", {"ok", 3}}})),
            "streams[0].evidence.classes[1] | server.json: streams[0].evidence.classes[1]: must "
            "be a string (a class label)");
  EXPECT_EQ(refusal(stream({{"classes", {"a\nb"}}})),
            "streams[0].evidence.classes[0] | server.json: streams[0].evidence.classes[0]: a "
            "class label has 1 to 64 printable characters");
  EXPECT_EQ(refusal(stream({{"dir", "ev/../../etc"}})),
            "streams[0].evidence.dir | server.json: streams[0].evidence.dir: may not hold '..': "
            "name a folder under output_dir (relative) or an absolute one (config file only)");
  EXPECT_EQ(refusal(stream("on")),
            "streams[0].evidence | server.json: streams[0].evidence: must be a JSON object, not "
            "string");
  EXPECT_EQ(
      refusal(
          {{"id", "a"}, {"uri", "aravis://Fake"}, {"track", true}, {"evidence", json::object()}}),
      "streams[0].evidence | server.json: streams[0].evidence: not available for "
      "aravis:// cameras yet: their Bayer/mono frames are analysed as they come, and "
      "evidence encodes raw video");
}

TEST(EvidenceMetrics, SeriesOfEvidenceStreamsOnly) {
  MetricsSnapshot m;
  StreamFigures s;
  s.id = "cam0";
  s.model = "parts";
  s.evidence = true;
  s.evidence_events = 5;
  s.evidence_snapshots = 5;
  s.evidence_crops = 4;
  s.evidence_clips = 3;
  s.evidence_write_failures = 2;
  s.evidence_pruned = 1;
  s.evidence_bytes = 123456;
  s.evidence_ring_bytes = 7890;
  s.evidence_ring_dropped = 6;
  s.evidence_ring_evicted = 7;
  s.evidence_clips_short = 8;
  m.streams.push_back(s);
  StreamFigures plain;
  plain.id = "cam1";
  plain.model = "parts";
  m.streams.push_back(plain);
  const std::string t = render_prometheus(m);
  for (
      const char* line : {
          "# TYPE torchinfer_stream_evidence_events_total counter",
          "torchinfer_stream_evidence_events_total{stream=\"cam0\",model=\"parts\"} 5",
          "# TYPE torchinfer_stream_evidence_files_total counter",
          "torchinfer_stream_evidence_files_total{stream=\"cam0\",model=\"parts\",kind="
          "\"snapshot\"} 5",
          "torchinfer_stream_evidence_files_total{stream=\"cam0\",model=\"parts\",kind=\"crop\"} 4",
          "torchinfer_stream_evidence_files_total{stream=\"cam0\",model=\"parts\",kind=\"clip\"} 3",
          "# TYPE torchinfer_stream_evidence_write_failures_total counter",
          "torchinfer_stream_evidence_write_failures_total{stream=\"cam0\",model=\"parts\"} 2",
          "torchinfer_stream_evidence_pruned_total{stream=\"cam0\",model=\"parts\"} 1",
          "# TYPE torchinfer_stream_evidence_bytes gauge",
          "torchinfer_stream_evidence_bytes{stream=\"cam0\",model=\"parts\"} 123456",
          "torchinfer_stream_evidence_ring_frames_lost_total{stream=\"cam0\",model=\"parts\","
          "reason=\"queue\"} 6",
          "torchinfer_stream_evidence_ring_frames_lost_total{stream=\"cam0\",model=\"parts\","
          "reason=\"memory\"} 7",
          "torchinfer_stream_evidence_clips_short_total{stream=\"cam0\",model=\"parts\"} 8",
          "# TYPE torchinfer_stream_evidence_ring_bytes gauge",
          "torchinfer_stream_evidence_ring_bytes{stream=\"cam0\",model=\"parts\"} 7890",
      })
    EXPECT_NE(("\n" + t).find("\n" + std::string(line) + "\n"), std::string::npos)
        << "missing: " << line << "\n"
        << t;
  EXPECT_EQ(t.find("evidence_events_total{stream=\"cam1\""), std::string::npos);
  EXPECT_EQ(t.find("evidence_files_total{stream=\"cam1\""), std::string::npos);
}
