// The cameras' part and PLC families on /metrics (pipelines/server/core/line_metrics.h)
// and a camera's "parts" object (pipelines/server/core/line_spec.h): exact text, and
// nothing written for streams without them.
#include <gtest/gtest.h>

#include "common/field_error.h"
#include "server/core/line_metrics.h"
#include "server/core/line_spec.h"

namespace torchinfer::server {
namespace {

TEST(LineMetrics, NothingWithoutPartsOrPlc) {
  MetricsSnapshot m;
  m.streams.push_back({});
  m.streams.back().id = "cam";
  EXPECT_EQ(render_line_metrics(m), "");
}

TEST(LineMetrics, PlcStreamsOnlyWithEscapedIds) {
  MetricsSnapshot m;
  StreamFigures a;
  a.id = "a\"b";
  a.parts = a.plc = a.plc_connected = true;
  a.parts_decided = {{"pass", 4}, {"reject", 9}};
  a.plc_pulses = {{"pass", 4}, {"recheck", 0}, {"reject", 9}};
  a.plc_pulses_lost = 1;
  a.plc_late_parts = 2;
  a.plc_write_failures = 3;
  a.plc_encoder_age_s = 0.25;
  StreamFigures b;  // parts without a PLC, and a PLC never read: no age
  b.id = "b";
  b.parts = true;
  b.parts_decided = {{"incomplete", 1}};
  m.streams = {a, b};
  EXPECT_EQ(render_line_metrics(m),
            "# HELP torchinfer_parts_decided_total Parts decided, by verdict (pass, reject, "
            "incomplete).\n"
            "# TYPE torchinfer_parts_decided_total counter\n"
            "torchinfer_parts_decided_total{stream=\"a\\\"b\",verdict=\"pass\"} 4\n"
            "torchinfer_parts_decided_total{stream=\"a\\\"b\",verdict=\"reject\"} 9\n"
            "torchinfer_parts_decided_total{stream=\"b\",verdict=\"incomplete\"} 1\n"
            "# HELP torchinfer_plc_pulses_total Pulses sent to the PLC, by output (reject, "
            "pass, recheck).\n"
            "# TYPE torchinfer_plc_pulses_total counter\n"
            "torchinfer_plc_pulses_total{stream=\"a\\\"b\",output=\"pass\"} 4\n"
            "torchinfer_plc_pulses_total{stream=\"a\\\"b\",output=\"recheck\"} 0\n"
            "torchinfer_plc_pulses_total{stream=\"a\\\"b\",output=\"reject\"} 9\n"
            "# HELP torchinfer_plc_pulses_lost_total Pulses due while the PLC was "
            "unreachable, or whose write failed.\n"
            "# TYPE torchinfer_plc_pulses_lost_total counter\n"
            "torchinfer_plc_pulses_lost_total{stream=\"a\\\"b\"} 1\n"
            "# HELP torchinfer_plc_late_parts_total Parts whose verdict came after their "
            "pulse moment (the fail-safe output applies).\n"
            "# TYPE torchinfer_plc_late_parts_total counter\n"
            "torchinfer_plc_late_parts_total{stream=\"a\\\"b\"} 2\n"
            "# HELP torchinfer_plc_write_failures_total Modbus writes to the PLC that "
            "failed.\n"
            "# TYPE torchinfer_plc_write_failures_total counter\n"
            "torchinfer_plc_write_failures_total{stream=\"a\\\"b\"} 3\n"
            "# HELP torchinfer_plc_connected 1 while the PLC connection is up, else 0.\n"
            "# TYPE torchinfer_plc_connected gauge\n"
            "torchinfer_plc_connected{stream=\"a\\\"b\"} 1\n"
            "# HELP torchinfer_plc_encoder_age_seconds Seconds since the last belt encoder "
            "reading (absent before the first, or without an encoder).\n"
            "# TYPE torchinfer_plc_encoder_age_seconds gauge\n"
            "torchinfer_plc_encoder_age_seconds{stream=\"a\\\"b\"} 0.25\n");
}

TEST(LineMetrics, CodesFamilies) {
  MetricsSnapshot m;
  StreamFigures a;
  a.id = "dm";
  a.codes = true;
  a.codes_read = 30;
  a.codes_failed = 5;
  a.codes_tried = 35;
  a.codes_late = 1;
  a.codes_read_seconds = 0.5;
  m.streams = {a};
  EXPECT_EQ(render_line_metrics(m),
            "# HELP torchinfer_codes_read_total Views (detections or whole frames) torchcodes "
            "read a code in.\n"
            "# TYPE torchinfer_codes_read_total counter\n"
            "torchinfer_codes_read_total{stream=\"dm\"} 30\n"
            "# HELP torchinfer_codes_failed_total Views torchcodes read without a code (none "
            "found, outside the frame, reader error).\n"
            "# TYPE torchinfer_codes_failed_total counter\n"
            "torchinfer_codes_failed_total{stream=\"dm\"} 5\n"
            "# HELP torchinfer_codes_tried_total Views torchcodes read (read + failed).\n"
            "# TYPE torchinfer_codes_tried_total counter\n"
            "torchinfer_codes_tried_total{stream=\"dm\"} 35\n"
            "# HELP torchinfer_codes_late_total Reads on torchcodes' workers that finished "
            "after their frame had gone.\n"
            "# TYPE torchinfer_codes_late_total counter\n"
            "torchinfer_codes_late_total{stream=\"dm\"} 1\n"
            "# HELP torchinfer_codes_read_seconds_total Seconds the streaming thread spent in "
            "torchcodes; per read: divide by torchinfer_codes_tried_total.\n"
            "# TYPE torchinfer_codes_read_seconds_total counter\n"
            "torchinfer_codes_read_seconds_total{stream=\"dm\"} 0.5\n");
}

TEST(PartsSpec, DefaultsAndRoundTrip) {
  const PartsSpec p = parse_parts_spec({{"classifier", "cls"}}, "parts", "", {"det", "cls"}, true);
  EXPECT_EQ(p.classifier, "cls");
  EXPECT_EQ(p.rules.rule, QaRule::kVote);
  EXPECT_EQ(p.rules.part_classes, (std::set<std::string>{"bracket", "washer"}));
  const PartsSpec q = parse_parts_spec(to_json(p), "parts", "", {"det", "cls"}, true);
  EXPECT_EQ(to_json(q), to_json(p));
  EXPECT_EQ(parse_parts_spec(nlohmann::json::object(), "parts", "", {}, true).rules.rule,
            QaRule::kMax);  // no classifier: the detector's defect boxes judge
}

TEST(PartsSpec, RefusedNamingTheField) {
  auto field = [](const nlohmann::json& j, bool track) {
    try {
      parse_parts_spec(j, "streams[0].parts", "f.json", {"cls"}, track);
    } catch (const FieldError& e) {
      return e.field() + ": " + e.problem();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(field(nlohmann::json::object(), false),
            "streams[0].parts: needs \"track\": true (a verdict is given per tracked part)");
  EXPECT_EQ(field({{"classifier", 3}}, true),
            "streams[0].parts.classifier: name one of the configured models' ids (the part "
            "classifier)");
  EXPECT_EQ(field({{"defect_classes", {"a", ""}}}, true),
            "streams[0].parts.defect_classes: each class is a label of 1 to 64 printable "
            "characters");
  EXPECT_EQ(field({{"defect_threshold", -0.1}}, true),
            "streams[0].parts.defect_threshold: must be a number from 0 to 1");
  EXPECT_EQ(field({{"part_classes", {"bracket"}}, {"defect_classes", {"bracket"}}}, true),
            "streams[0].parts: class 'bracket' is both a part and a defect class");
  EXPECT_EQ(field("x", true), "streams[0].parts: must be an object");
}

}  // namespace
}  // namespace torchinfer::server
