// torchinfer-server's Prometheus text and snapshot encoding.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include "common/error.h"
#include "evidence/core/jpeg_snapshot.h"
#include "server/core/metrics_text.h"

using namespace torchinfer::server;

namespace {

MetricsSnapshot sample_snapshot() {
  MetricsSnapshot m;
  StreamFigures s;
  s.id = "cam0";
  s.model = "parts";
  s.state = "running";
  s.frames_in = 130;  // = 118 inferred + 7 skipped + 2 dropped + 3 in flight
  s.frames_inferred = 118;
  s.frames_skipped = 7;
  s.frames_skipped_by[static_cast<std::size_t>(torchinfer::SkipReason::kInterval)] = 5;
  s.frames_skipped_by[static_cast<std::size_t>(torchinfer::SkipReason::kBusy)] = 2;
  s.frames_dropped = 2;
  s.frames_in_flight = 3;
  s.frames_out = 124;
  s.frames_invalid = 6;
  s.frames_saturated = 9;
  s.fps = 29.5;
  s.latency_p50_s = 0.004;
  s.latency_p99_s = 0.012;
  s.latency_sum_s = 0.5;
  s.latency_count = 118;
  s.reconnects = 1;
  s.disconnects = 1;
  s.detections = {{"bracket", 7}, {"odd \"label\"\\", 1}};
  s.restream = true;
  s.restream_clients = 2;
  s.restream_frames_sent = 90;
  s.restream_frames_dropped = 4;
  m.streams.push_back(s);
  // A stream without re-stream has no re-stream series.
  StreamFigures plain;
  plain.id = "cam1";
  plain.model = "parts";
  plain.state = "running";
  m.streams.push_back(plain);
  ModelFigures md;
  md.id = "parts";
  md.loaded = true;
  md.load_seconds = 1.25;
  md.frames_inferred = 500;
  md.streams = 1;
  m.models.push_back(md);
  m.streams_added = 3;
  m.streams_removed = 2;
  m.streams_stopping = 1;
  m.max_streams = 32;
  m.http_requests = {{"200", 10}, {"404", 1}};
  m.process.cpu_seconds = 12.5;
  m.process.resident_bytes = 1000;
  return m;
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST(MetricsText, StreamModelAndProcessSeries) {
  const std::string t = render_prometheus(sample_snapshot());
  for (const char* line : {
           "# TYPE torchinfer_stream_frames_in_total counter",
           "torchinfer_stream_frames_in_total{stream=\"cam0\",model=\"parts\"} 130",
           "torchinfer_stream_frames_inferred_total{stream=\"cam0\",model=\"parts\"} 118",
           "# TYPE torchinfer_stream_frames_skipped_total counter",
           "torchinfer_stream_frames_skipped_total{stream=\"cam0\",model=\"parts\","
           "reason=\"interval\"} 5",
           "torchinfer_stream_frames_skipped_total{stream=\"cam0\",model=\"parts\",reason=\"busy\"}"
           " 2",
           "torchinfer_stream_frames_skipped_total{stream=\"cam0\",model=\"parts\","
           "reason=\"no-regions\"} 0",
           "torchinfer_stream_frames_skipped_total{stream=\"cam0\",model=\"parts\","
           "reason=\"failed\"} 0",
           "torchinfer_stream_frames_skipped_total{stream=\"cam0\",model=\"parts\","
           "reason=\"still\"} 0",
           "torchinfer_stream_frames_dropped_total{stream=\"cam0\",model=\"parts\"} 2",
           "# TYPE torchinfer_stream_frames_in_flight gauge",
           "torchinfer_stream_frames_in_flight{stream=\"cam0\",model=\"parts\"} 3",
           "torchinfer_stream_frames_out_total{stream=\"cam0\",model=\"parts\"} 124",
           "# TYPE torchinfer_stream_frames_invalid_total counter",
           "torchinfer_stream_frames_invalid_total{stream=\"cam0\",model=\"parts\"} 6",
           "# TYPE torchinfer_stream_frames_saturated_total counter",
           "torchinfer_stream_frames_saturated_total{stream=\"cam0\",model=\"parts\"} 9",
           "torchinfer_stream_reconnects_total{stream=\"cam0\",model=\"parts\"} 1",
           "torchinfer_stream_fps{stream=\"cam0\",model=\"parts\"} 29.5",
           "# TYPE torchinfer_stream_latency_seconds summary",
           // prometheus-cpp writes 16 significant digits (the hand-written text had 17).
           "torchinfer_stream_latency_seconds{stream=\"cam0\",model=\"parts\",quantile=\"0.5\"} "
           "0.004",
           "torchinfer_stream_latency_seconds_sum{stream=\"cam0\",model=\"parts\"} 0.5",
           "torchinfer_stream_latency_seconds_count{stream=\"cam0\",model=\"parts\"} 118",
           "torchinfer_stream_state{stream=\"cam0\",model=\"parts\",state=\"running\"} 1",
           "torchinfer_stream_state{stream=\"cam0\",model=\"parts\",state=\"failed\"} 0",
           "torchinfer_stream_detections_total{stream=\"cam0\",model=\"parts\",class=\"bracket\"} "
           "7",
           "torchinfer_stream_detections_total{stream=\"cam0\",model=\"parts\",class=\"odd "
           "\\\"label\\\"\\\\\"} 1",
           "torchinfer_stream_restream_clients{stream=\"cam0\",model=\"parts\"} 2",
           "torchinfer_stream_restream_frames_sent_total{stream=\"cam0\",model=\"parts\"} 90",
           "# TYPE torchinfer_stream_restream_frames_dropped_total counter",
           "torchinfer_stream_restream_frames_dropped_total{stream=\"cam0\",model=\"parts\"} 4",
           "torchinfer_model_load_seconds{model=\"parts\"} 1.25",
           "torchinfer_model_frames_inferred_total{model=\"parts\"} 500",
           "torchinfer_model_streams{model=\"parts\"} 1",
           "torchinfer_streams 2",
           "torchinfer_streams_added_total 3",
           "torchinfer_streams_removed_total 2",
           "torchinfer_streams_stopping 1",
           "torchinfer_http_requests_total{code=\"404\"} 1",
           "process_cpu_seconds_total 12.5",
           "process_resident_memory_bytes 1000",
       })
    EXPECT_TRUE(has_line(t, line)) << "missing: " << line << "\n" << t;
  // Every family has HELP and TYPE once.
  std::size_t help = 0, type = 0;
  for (std::size_t p = 0; (p = t.find("# HELP ", p)) != std::string::npos; ++p) help++;
  for (std::size_t p = 0; (p = t.find("# TYPE ", p)) != std::string::npos; ++p) type++;
  EXPECT_EQ(help, type);
  // frames_skipped_total, frames_in_flight, mqtt_messages_total, the 8 camera families and
  // the 4 line/zone families, the 8 evidence families and frames invalid/saturated
  EXPECT_EQ(help, 56u);
  EXPECT_EQ(t.find("restream_clients{stream=\"cam1\""), std::string::npos) << t;
  EXPECT_EQ(t.find("restream_frames_dropped_total{stream=\"cam1\""), std::string::npos) << t;
}

TEST(MetricsText, NoStreamsStillValid) {
  MetricsSnapshot m;
  const std::string t = render_prometheus(m);
  EXPECT_TRUE(has_line(t, "torchinfer_streams 0"));
  EXPECT_EQ(t.find("stream=\""), std::string::npos);
}

// prometheus-cpp's TextSerializer escapes label values (backslash, quote,
// newline), as the hand-written escape_label it replaced did.
TEST(MetricsText, EscapesLabels) {
  MetricsSnapshot m;
  m.http_requests["a\"b\\c\nd"] = 1;
  EXPECT_TRUE(
      has_line(render_prometheus(m), "torchinfer_http_requests_total{code=\"a\\\"b\\\\c\\nd\"} 1"))
      << render_prometheus(m);
}

TEST(MetricsText, ProcessFiguresOfThisProcess) {
  const ProcessFigures p = read_process_figures();
  EXPECT_GT(p.resident_bytes, 1u << 20);
  EXPECT_GT(p.virtual_bytes, p.resident_bytes);
  EXPECT_GE(p.open_fds, 3u);  // stdin, stdout, stderr at least
  EXPECT_GT(p.max_fds, p.open_fds);
  EXPECT_GE(p.threads, 1);
  EXPECT_GT(p.start_time_seconds, 1.6e9);
  EXPECT_GE(p.cpu_seconds, 0);
}

TEST(JpegSnapshot, EncodesEachFormatToTheRightColour) {
  const int w = 64, h = 48;
  // A mid-grey frame with full-range-ish Y=200 (bright), neutral chroma.
  std::vector<std::uint8_t> yuy2(w * h * 2), y(w * h, 200), uv(w * h / 2, 128), u(w * h / 4, 128),
      v(w * h / 4, 128), bgr(w * h * 3);
  for (int i = 0; i < w * h; i += 2) {
    yuy2[i * 2] = 200, yuy2[i * 2 + 1] = 128, yuy2[i * 2 + 2] = 200, yuy2[i * 2 + 3] = 128;
  }
  for (int i = 0; i < w * h; ++i) bgr[i * 3] = 255, bgr[i * 3 + 1] = 0, bgr[i * 3 + 2] = 0;
  struct Case {
    RawFormat f;
    const std::uint8_t* p[3];
    int s[3];
    cv::Vec3b expect;
  };
  const Case cases[] = {
      {RawFormat::kYUY2, {yuy2.data()}, {w * 2}, {210, 210, 210}},
      {RawFormat::kI420, {y.data(), u.data(), v.data()}, {w, w / 2, w / 2}, {210, 210, 210}},
      {RawFormat::kNV12, {y.data(), uv.data()}, {w, w}, {210, 210, 210}},
      {RawFormat::kBGR, {bgr.data()}, {w * 3}, {255, 0, 0}},
  };
  for (const Case& c : cases) {
    RawImage img;
    img.format = c.f;
    img.width = w;
    img.height = h;
    for (int i = 0; i < 3; ++i) img.planes[i] = c.p[i], img.strides[i] = c.s[i];
    const std::vector<std::uint8_t> jpeg = encode_jpeg(img);
    ASSERT_GT(jpeg.size(), 100u);
    EXPECT_EQ(jpeg[0], 0xFF);
    EXPECT_EQ(jpeg[1], 0xD8);
    const cv::Mat back = cv::imdecode(jpeg, cv::IMREAD_COLOR);
    ASSERT_EQ(back.cols, w);
    ASSERT_EQ(back.rows, h);
    const cv::Vec3b px = back.at<cv::Vec3b>(h / 2, w / 2);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(px[k], c.expect[k], 12) << static_cast<int>(c.f);
  }
}

TEST(JpegSnapshot, RefusesEmptyFramesAndKnowsFormats) {
  RawImage img;
  EXPECT_THROW(encode_jpeg(img), torchinfer::Error);
  RawFormat f;
  EXPECT_TRUE(raw_format_from_name("YUY2", &f));
  EXPECT_EQ(f, RawFormat::kYUY2);
  EXPECT_FALSE(raw_format_from_name("UYVY", &f));
}
