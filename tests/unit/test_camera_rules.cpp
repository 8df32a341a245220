// Machine-vision cameras' rules that need neither Aravis nor GStreamer
// (pipelines/server/core): the aravis:// schema and its fields, the pixel format
// table, lost frames told from frame ids, the camera health series, the
// snapshot of Bayer/mono frames, a camera that is ready before its first
// frame.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "evidence/core/jpeg_snapshot.h"
#include "server/core/camera_settings.h"
#include "server/core/frame_loss.h"
#include "server/core/metrics_text.h"
#include "server/core/server_config.h"
#include "server/core/stream_health.h"

using nlohmann::json;
using namespace torchinfer::server;

namespace {

const std::vector<ModelSpec> kModels = {{"parts", "m.pt"}};

StreamSpec parse(const json& j) {
  return parse_stream_spec(j, kModels, MqttSpec{}, "streams[0]", "server.json");
}

// The field an invalid stream is refused for, and the message.
std::pair<std::string, std::string> refusal(const json& j) {
  try {
    parse(j);
  } catch (const torchinfer::FieldError& e) {
    return {e.field(), e.what()};
  }
  return {"(accepted)", ""};
}

json camera(json extra = json::object()) {
  json j = {{"id", "cam"}, {"uri", "aravis://Basler-21234567"}};
  j.update(extra);
  return j;
}

}  // namespace

TEST(AravisConfig, ReadsTheCameraAndItsSettings) {
  const StreamSpec s = parse(camera({{"pixel_format", "BayerRG8"},
                                     {"exposure_us", 2500.5},
                                     {"gain_db", 6},
                                     {"packet_size", 8192},
                                     {"trigger", {{"mode", "hardware"}, {"line", "Line1"}}}}));
  EXPECT_EQ(s.kind, SourceKind::kAravis);
  EXPECT_EQ(s.location, "Basler-21234567");
  EXPECT_EQ(s.camera.name, "Basler-21234567");
  EXPECT_EQ(s.camera.pixel_format, "BayerRG8");
  EXPECT_EQ(*s.camera.exposure_us, 2500.5);
  EXPECT_EQ(*s.camera.gain_db, 6.0);
  EXPECT_EQ(s.camera.packet_size, 8192);
  EXPECT_EQ(s.camera.trigger, TriggerMode::kHardware);
  EXPECT_EQ(s.camera.trigger_line, "Line1");
  // The schema it writes back reads the same.
  const StreamSpec again = parse(to_json(s));
  EXPECT_EQ(to_json(again), to_json(s));
  EXPECT_EQ(to_json(s)["trigger"], json({{"mode", "hardware"}, {"line", "Line1"}}));
}

TEST(AravisConfig, DefaultsAndTheStringTriggers) {
  StreamSpec s = parse(camera());
  EXPECT_EQ(s.camera.pixel_format, "");  // the camera's own
  EXPECT_FALSE(s.camera.exposure_us);
  EXPECT_FALSE(s.camera.gain_db);
  EXPECT_EQ(s.camera.packet_size, 1500);
  EXPECT_EQ(s.camera.trigger, TriggerMode::kFreeRun);
  EXPECT_EQ(to_json(s)["trigger"], "free-run");
  s = parse(camera({{"trigger", "software"}}));
  EXPECT_EQ(s.camera.trigger, TriggerMode::kSoftware);
  EXPECT_EQ(parse(camera({{"trigger", {{"mode", "software"}}}})).camera.trigger,
            TriggerMode::kSoftware);
  EXPECT_EQ(parse(camera({{"trigger", "free-run"}})).camera.trigger, TriggerMode::kFreeRun);
}

TEST(AravisConfig, NamesArePercentDecodedAndIpsAccepted) {
  EXPECT_EQ(parse(camera({{"uri", "aravis://The%20Imaging%20Source-4810"}})).camera.name,
            "The Imaging Source-4810");
  EXPECT_EQ(parse(camera({{"uri", "aravis://192.168.10.20"}})).camera.name, "192.168.10.20");
  for (const char* uri : {"aravis://", "aravis://a%2Fb", "aravis://bad%zz", "aravis://x%00"})
    EXPECT_EQ(refusal(camera({{"uri", uri}})).first, "streams[0].uri") << uri;
  EXPECT_NE(refusal(camera({{"uri", "gige://cam"}})).second.find("aravis://"), std::string::npos);
}

TEST(AravisConfig, EveryBadFieldIsNamed) {
  const std::pair<json, std::string> bad[] = {
      {{{"pixel_format", "YUV422_8"}}, "pixel_format"},
      {{{"pixel_format", 8}}, "pixel_format"},
      {{{"exposure_us", -5}}, "exposure_us"},
      {{{"exposure_us", 0}}, "exposure_us"},
      {{{"exposure_us", 2e8}}, "exposure_us"},
      {{{"gain_db", -1}}, "gain_db"},
      {{{"gain_db", "6"}}, "gain_db"},
      {{{"packet_size", 100}}, "packet_size"},
      {{{"packet_size", 70000}}, "packet_size"},
      {{{"packet_size", 1500.5}}, "packet_size"},
      {{{"trigger", "sometimes"}}, "trigger"},
      {{{"trigger", "hardware"}}, "trigger"},
      {{{"trigger", 1}}, "trigger"},
      {{{"trigger", {{"mode", "hardware"}}}}, "trigger.line"},
      {{{"trigger", {{"mode", "hardware"}, {"line", "Line 1"}}}}, "trigger.line"},
      {{{"trigger", {{"mode", "free-run"}, {"line", "Line1"}}}}, "trigger.line"},
      {{{"trigger", {{"line", "Line1"}}}}, "trigger.mode"},
      {{{"trigger", {{"mode", "hardware"}, {"line", "Line1"}, {"edge", "rising"}}}},
       "trigger.edge"},
      {{{"restream", true}}, "restream"},
  };
  for (const auto& [extra, field] : bad)
    EXPECT_EQ(refusal(camera(extra)).first, "streams[0]." + field) << extra;
  const std::string why = refusal(camera({{"pixel_format", "YUV422_8"}})).second;
  EXPECT_NE(why.find("BayerRG8"), std::string::npos) << why;
  EXPECT_NE(why.find("Mono16"), std::string::npos) << why;
  EXPECT_NE(refusal(camera({{"trigger", "sometimes"}})).second.find("free-run, software"),
            std::string::npos);
}

TEST(AravisConfig, CameraFieldsOnOtherSourcesAreRefused) {
  for (const char* field : {"pixel_format", "exposure_us", "gain_db", "packet_size", "trigger"}) {
    json j = {{"id", "a"}, {"uri", "rtsp://cam/live"}};
    j[field] = json::parse(std::string(field) == "pixel_format"  ? "\"Mono8\""
                           : std::string(field) == "trigger"     ? "\"software\""
                           : std::string(field) == "packet_size" ? "1500"
                                                                 : "10");
    const auto [path, why] = refusal(j);
    EXPECT_EQ(path, std::string("streams[0].") + field);
    EXPECT_NE(why.find("aravis:// cameras only"), std::string::npos) << why;
  }
}

TEST(PixelFormats, TheTableMapsGenicamToCaps) {
  ASSERT_NE(find_pixel_format("BayerBG8"), nullptr);
  EXPECT_STREQ(find_pixel_format("BayerBG8")->caps, "video/x-bayer,format=bggr");
  EXPECT_STREQ(find_pixel_format("BayerRG8")->caps, "video/x-bayer,format=rggb");
  EXPECT_STREQ(find_pixel_format("BayerGR8")->caps, "video/x-bayer,format=grbg");
  EXPECT_STREQ(find_pixel_format("BayerGB8")->caps, "video/x-bayer,format=gbrg");
  EXPECT_STREQ(find_pixel_format("Mono8")->caps, "video/x-raw,format=GRAY8");
  EXPECT_STREQ(find_pixel_format("Mono12")->caps, "video/x-raw,format=GRAY16_LE");
  EXPECT_EQ(find_pixel_format("Mono12")->bits, 12);
  EXPECT_EQ(find_pixel_format("Mono10")->bits, 10);
  EXPECT_EQ(find_pixel_format("Mono16")->bits, 16);
  EXPECT_EQ(find_pixel_format("Mono8")->bits, 8);
  // Packed formats would need unpacking first: not taken.
  for (const char* f : {"Mono12Packed", "BayerRG12", "YUV422_8", "", "mono8"})
    EXPECT_EQ(find_pixel_format(f), nullptr) << f;
  EXPECT_TRUE(valid_feature_value("Line1"));
  EXPECT_FALSE(valid_feature_value("Line 1"));
  EXPECT_FALSE(valid_feature_value("Line1;TriggerMode=Off"));
  EXPECT_FALSE(valid_feature_value(""));
}

TEST(FrameLoss, IncompleteAndSkippedIdsAreLost) {
  FrameLossCounter c;
  for (std::uint64_t id : {10, 11, 12}) c.on_buffer(id, true);
  c.on_buffer(13, false);  // missing packets
  c.on_buffer(16, true);   // 14 and 15 never came
  c.on_buffer(17, true);
  EXPECT_EQ(c.figures().received, 5u);
  EXPECT_EQ(c.figures().incomplete, 1u);
  EXPECT_EQ(c.figures().missing, 2u);
  EXPECT_EQ(c.figures().lost(), 3u);
}

// Aravis takes a buffer's id from the frame's leader packet: a frame whose
// leader was lost comes with its buffer's previous id. Measured with the
// fake camera at --gvsp-lost-ratio 5: trusting those ids counted 32 frames
// "missing" that were in fact among the incomplete ones.
TEST(FrameLoss, AnIncompleteBuffersIdIsNotTrusted) {
  FrameLossCounter c;
  c.on_buffer(100, true);
  c.on_buffer(85, false);  // frame 101, its leader lost: a stale id
  c.on_buffer(102, true);
  EXPECT_EQ(c.figures().incomplete, 1u);
  EXPECT_EQ(c.figures().missing, 0u);
  c.on_buffer(7, false);   // 103, stale id again
  c.on_buffer(106, true);  // 104 and 105 never came
  EXPECT_EQ(c.figures().incomplete, 2u);
  EXPECT_EQ(c.figures().missing, 2u);
  EXPECT_EQ(c.figures().received, 3u);
}

TEST(FrameLoss, SixteenBitIdsWrapWithoutAGap) {
  FrameLossCounter c;
  for (std::uint64_t id : {65534, 65535, 1, 2}) c.on_buffer(id, true);
  EXPECT_EQ(c.figures().missing, 0u);
  c.on_buffer(65000, true);  // more than half the range on: a step back, not a gap
  EXPECT_EQ(c.figures().missing, 0u);
  c.on_buffer(65534, true);  // 65001..65533
  c.on_buffer(3, true);      // 65535, 1, 2 (0 is never used)
  EXPECT_EQ(c.figures().missing, 533u + 3u);
  EXPECT_EQ(c.figures().received, 7u);
}

TEST(FrameLoss, WideIdsAndRestarts) {
  FrameLossCounter c;
  c.on_buffer(1ull << 40, true);
  c.on_buffer((1ull << 40) + 5, true);
  EXPECT_EQ(c.figures().missing, 4u);
  c.restart();  // a reconnection: the camera counts afresh
  c.on_buffer(1, true);
  c.on_buffer(1, true);  // repeated: no gap, no negative count
  EXPECT_EQ(c.figures().missing, 4u);
  EXPECT_EQ(c.figures().received, 4u);
}

TEST(CameraHealth, ReadyBeforeTheFirstFrameAndAfterAnOutage) {
  StreamHealth h;
  h.on_source_lost("aravis: camera 'x' not found");
  EXPECT_EQ(h.state(), StreamState::kReconnecting);
  h.on_source_ready();
  EXPECT_EQ(h.state(), StreamState::kRunning);
  EXPECT_EQ(h.reconnects(), 1u);
  EXPECT_EQ(h.disconnects(), 1u);
  StreamHealth fresh;
  fresh.on_source_ready();  // a triggered camera: no frame yet
  EXPECT_EQ(fresh.state(), StreamState::kRunning);
  EXPECT_EQ(fresh.reconnects(), 0u);
  fresh.on_error("aravis: pixel_format refused");
  fresh.on_source_ready();
  EXPECT_EQ(fresh.state(), StreamState::kFailed);
}

TEST(CameraMetrics, CameraSeriesForCameraStreamsOnly) {
  MetricsSnapshot m;
  StreamFigures cam, clip;
  cam.id = "gige";
  cam.model = clip.model = "parts";
  clip.id = "clip";
  cam.camera = true;
  cam.camera_frames_received = 900;
  cam.camera_frames_incomplete = 7;
  cam.camera_frames_missing = 2;
  cam.camera_frames_overflow = 1;
  cam.camera_packets_missing = 300;
  cam.camera_packets_resent = 12;
  cam.camera_triggers = 5;
  m.streams = {cam, clip};
  const std::string t = render_prometheus(m);
  const std::string l = "{stream=\"gige\",model=\"parts\"";
  for (const std::string& line : std::vector<std::string>{
           std::string("# TYPE torchinfer_camera_frames_lost_total counter"),
           "torchinfer_camera_frames_received_total" + l + "} 900",
           "torchinfer_camera_frames_lost_total" + l + ",reason=\"incomplete\"} 7",
           "torchinfer_camera_frames_lost_total" + l + ",reason=\"missing\"} 2",
           "torchinfer_camera_frames_lost_total" + l + ",reason=\"overflow\"} 1",
           "torchinfer_camera_packets_missing_total" + l + "} 300",
           "torchinfer_camera_packets_resent_total" + l + "} 12",
           "torchinfer_camera_triggers_total" + l + "} 5"})
    EXPECT_NE(t.find("\n" + line + "\n"), std::string::npos) << line << "\n" << t;
  EXPECT_EQ(t.find("torchinfer_camera_frames_received_total{stream=\"clip\""), std::string::npos);
}

namespace {

// A Bayer mosaic of `rgb` (CV_8UC3, RGB order) in the given GStreamer
// order, rows padded to 4 bytes.
std::vector<std::uint8_t> mosaic(const cv::Mat& rgb, const char* order, int* stride) {
  *stride = (rgb.cols + 3) & ~3;
  std::vector<std::uint8_t> out(static_cast<std::size_t>(*stride) * rgb.rows);
  auto channel = [](char c) { return c == 'r' ? 0 : c == 'g' ? 1 : 2; };
  for (int y = 0; y < rgb.rows; ++y)
    for (int x = 0; x < rgb.cols; ++x)
      out[y * *stride + x] = rgb.at<cv::Vec3b>(y, x)[channel(order[(y % 2) * 2 + x % 2])];
  return out;
}

cv::Vec3d mean_bgr(const std::vector<std::uint8_t>& jpeg) {
  const cv::Mat img = cv::imdecode(jpeg, cv::IMREAD_COLOR);
  const cv::Scalar m = cv::mean(img);
  return {m[0], m[1], m[2]};
}

}  // namespace

TEST(CameraSnapshot, EachBayerOrderDemosaicsToItsColours) {
  // Orange (R 230, G 120, B 20): every channel distinct, so a wrong order shows.
  const cv::Mat rgb(34, 50, CV_8UC3, cv::Scalar(230, 120, 20));
  const std::pair<const char*, RawFormat> orders[] = {{"bggr", RawFormat::kBayerBGGR},
                                                      {"gbrg", RawFormat::kBayerGBRG},
                                                      {"grbg", RawFormat::kBayerGRBG},
                                                      {"rggb", RawFormat::kBayerRGGB}};
  for (const auto& [name, format] : orders) {
    RawFormat parsed;
    ASSERT_TRUE(raw_format_from_name(name, &parsed));
    EXPECT_EQ(parsed, format);
    int stride = 0;
    const std::vector<std::uint8_t> bytes = mosaic(rgb, name, &stride);
    RawImage img;
    img.format = format;
    img.width = rgb.cols;
    img.height = rgb.rows;
    img.planes[0] = bytes.data();
    img.strides[0] = stride;
    const cv::Vec3d bgr = mean_bgr(encode_jpeg(img));
    EXPECT_NEAR(bgr[2], 230, 12) << name;
    EXPECT_NEAR(bgr[1], 120, 12) << name;
    EXPECT_NEAR(bgr[0], 20, 12) << name;
  }
}

TEST(CameraSnapshot, SixteenBitMonoScalesByItsBitsAndBoxesAreDrawn) {
  std::vector<std::uint16_t> grey(40 * 30, 2048);  // Mono12 mid-grey
  RawImage img;
  img.format = RawFormat::kGRAY16LE;
  img.width = 40;
  img.height = 30;
  img.planes[0] = reinterpret_cast<const std::uint8_t*>(grey.data());
  img.strides[0] = 80;
  img.bits = 12;
  EXPECT_NEAR(mean_bgr(encode_jpeg(img))[1], 127.5, 3);
  img.bits = 16;
  EXPECT_NEAR(mean_bgr(encode_jpeg(img))[1], 8, 3);
  img.bits = 17;
  EXPECT_THROW(encode_jpeg(img), torchinfer::Error);

  std::vector<std::uint8_t> black(64 * 64, 0);
  RawImage mono;
  mono.format = RawFormat::kGRAY8;
  mono.width = mono.height = 64;
  mono.planes[0] = black.data();
  mono.strides[0] = 64;
  mono.boxes = {{8, 8, 40, 40, "part"}};
  const cv::Mat out = cv::imdecode(encode_jpeg(mono), cv::IMREAD_COLOR);
  EXPECT_GT(out.at<cv::Vec3b>(30, 8)[1], 150);  // the box's left edge, green
  EXPECT_LT(out.at<cv::Vec3b>(30, 30)[1], 40);  // inside stays black
  EXPECT_EQ(black[8 * 64 + 8], 0);              // the camera's frame is not drawn on
}
