// The RTSP re-stream of a camera's annotated video, as an RTSP client sees
// it: decoded frames of the camera's size, the end of the stream when the
// camera is removed (the other camera running on), no mount for a camera
// without re-stream, and a server without RTSP refusing one.
#include <gst/app/gstappsink.h>
#include <gst/gst.h>
#include <gtest/gtest.h>

#include "server_process.h"

using nlohmann::json;
using namespace torchinfer::test;

namespace {

// models/demo/line.mkv
constexpr int kClipWidth = 640, kClipHeight = 480;

// An RTSP client decoding H.264 into an appsink.
class RtspClient {
 public:
  explicit RtspClient(const std::string& url) {
    const std::string desc =
        "rtspsrc location=" + url +
        " latency=0 ! rtph264depay ! h264parse ! openh264dec ! videoconvert "
        "! video/x-raw,format=I420 ! appsink name=sink sync=false max-buffers=5 drop=true";
    GError* err = nullptr;
    pipeline_ = gst_parse_launch(desc.c_str(), &err);
    EXPECT_EQ(err, nullptr) << (err ? err->message : "");
    g_clear_error(&err);
    sink_ = gst_bin_get_by_name(GST_BIN(pipeline_), "sink");
    gst_element_set_state(pipeline_, GST_STATE_PLAYING);
  }
  ~RtspClient() {
    gst_element_set_state(pipeline_, GST_STATE_NULL);
    gst_object_unref(sink_);
    gst_object_unref(pipeline_);
  }
  // The next decoded frame's size; false at the end of the stream or after
  // `timeout_s` without one.
  bool frame(double timeout_s, int* width, int* height) {
    GstSample* s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink_),
                                                static_cast<GstClockTime>(timeout_s * GST_SECOND));
    if (!s) return false;
    GstStructure* st = gst_caps_get_structure(gst_sample_get_caps(s), 0);
    gst_structure_get_int(st, "width", width);
    gst_structure_get_int(st, "height", height);
    gst_sample_unref(s);
    return true;
  }
  // The client's errors and warnings so far, for a failure's message.
  std::string bus_messages() {
    GstBus* bus = gst_element_get_bus(pipeline_);
    std::string out;
    while (GstMessage* m = gst_bus_pop_filtered(
               bus, static_cast<GstMessageType>(GST_MESSAGE_ERROR | GST_MESSAGE_WARNING))) {
      GError* err = nullptr;
      gchar* debug = nullptr;
      if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR)
        gst_message_parse_error(m, &err, &debug);
      else
        gst_message_parse_warning(m, &err, &debug);
      out += std::string(GST_MESSAGE_SRC_NAME(m)) + ": " + (err ? err->message : "") + " (" +
             (debug ? debug : "") + ")\n";
      g_clear_error(&err);
      g_free(debug);
      gst_message_unref(m);
    }
    gst_object_unref(bus);
    return out.empty() ? "no error or warning on the client's bus" : out;
  }
  // The stream ended within `timeout_s`: EOS or an error on the bus. The
  // frames still queued are taken meanwhile (appsink holds the EOS back
  // until they are).
  bool ended(double timeout_s, std::string* why) {
    GstBus* bus = gst_element_get_bus(pipeline_);
    const gint64 end = g_get_monotonic_time() + static_cast<gint64>(timeout_s * 1e6);
    GstMessage* m = nullptr;
    while (!m && g_get_monotonic_time() < end) {
      if (GstSample* s = gst_app_sink_try_pull_sample(GST_APP_SINK(sink_), 100 * GST_MSECOND))
        gst_sample_unref(s);
      m = gst_bus_pop_filtered(bus,
                               static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
    }
    gst_object_unref(bus);
    if (!m) return false;
    if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR) {
      GError* err = nullptr;
      gst_message_parse_error(m, &err, nullptr);
      *why = err ? err->message : "error";
      g_clear_error(&err);
    } else {
      *why = "EOS";
    }
    gst_message_unref(m);
    return true;
  }

 private:
  GstElement* pipeline_ = nullptr;
  GstElement* sink_ = nullptr;
};

std::uint64_t frames_out(Http& http, const ServerProcess& s, const std::string& id) {
  const json j = s.stream(http, id);
  return j.is_null() ? 0 : j["frames"]["out"].get<std::uint64_t>();
}

std::string metric_line(const std::string& name, const std::string& id) {
  return name + "{stream=\"" + id + "\",model=\"parts\"} ";
}

// The value of one series in /metrics, -1 if absent.
long long metric(Http& http, const ServerProcess& s, const std::string& name,
                 const std::string& id) {
  const std::string body = http.get(s.url("/metrics")).body;
  const std::string key = "\n" + metric_line(name, id);
  const std::size_t p = body.find(key);
  return p == std::string::npos ? -1 : std::stoll(body.substr(p + key.size()));
}

}  // namespace

// Two re-streaming cameras, a client on each: removing one ends its
// client's stream; the other camera and its client run on (past the moment
// the removed camera's remaining clients are disconnected, 2 s after).
TEST(ServerRestream, AClientWatchesTheAnnotatedVideoUntilTheCameraGoes) {
  ServerProcess server(json{{"streams",
                             {{{"id", "door"}, {"uri", clip_uri()}, {"restream", true}},
                              {{"id", "line"}, {"uri", clip_uri()}, {"restream", true}}}}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  for (const char* id : {"door", "line"})
    ASSERT_TRUE(eventually([&] { return frames_out(http, server, id) > 0; }, 120)) << id;
  json door = server.stream(http, "door");
  EXPECT_EQ(door["rtsp_url"], server.rtsp_url("door")) << door;
  EXPECT_EQ(door["rtsp_clients"], 0) << door;
  EXPECT_EQ(door["config"]["restream"], true);
  // Nobody watches: nothing is encoded.
  EXPECT_EQ(door["rtsp_frames"], json({{"sent", 0}, {"dropped", 0}})) << door;
  EXPECT_EQ(server.stream(http, "line")["rtsp_url"], server.rtsp_url("line"));
  EXPECT_EQ(metric(http, server, "torchinfer_stream_restream_clients", "door"), 0);

  RtspClient other(server.rtsp_url("line"));
  {
    RtspClient client(server.rtsp_url("door"));
    for (int i = 0; i < 30; ++i) {
      int w = 0, h = 0;
      ASSERT_TRUE(client.frame(20, &w, &h))
          << "frame " << i << ": " << client.bus_messages() << "\n"
          << server.child().err();
      ASSERT_EQ(w, kClipWidth);
      ASSERT_EQ(h, kClipHeight);
    }
    for (int i = 0; i < 10; ++i) {
      int w = 0, h = 0;
      ASSERT_TRUE(other.frame(20, &w, &h))
          << "line frame " << i << ": " << other.bus_messages() << "\n"
          << server.child().err();
    }
    door = server.stream(http, "door");
    EXPECT_EQ(door["rtsp_clients"], 1) << door;
    EXPECT_GE(door["rtsp_frames"]["sent"].get<std::uint64_t>(), 30u) << door;
    EXPECT_EQ(server.stream(http, "line")["rtsp_clients"], 1);
    EXPECT_EQ(metric(http, server, "torchinfer_stream_restream_clients", "door"), 1);
    EXPECT_GE(metric(http, server, "torchinfer_stream_restream_frames_sent_total", "door"), 30);
    EXPECT_GE(metric(http, server, "torchinfer_stream_restream_frames_dropped_total", "door"), 0);
    EXPECT_TRUE(frames_add_up(counts_of(server.stream(http, "door"))));

    ASSERT_EQ(http.request("DELETE", server.url("/streams/door")).status, 200);
    std::string why;
    EXPECT_TRUE(client.ended(10, &why)) << "the client's stream did not end";
  }
  // The other camera's client: 90 more frames of a clip played at 30 fps
  // take 3 s, past the removed camera's 2 s.
  for (int i = 0; i < 90; ++i) {
    int w = 0, h = 0;
    ASSERT_TRUE(other.frame(10, &w, &h))
        << "line frame " << i << ": " << other.bus_messages() << "\n"
        << server.child().err();
    ASSERT_EQ(w, kClipWidth);
  }
  const json line = server.stream(http, "line");
  EXPECT_EQ(line["state"], "running") << line;
  EXPECT_EQ(line["rtsp_clients"], 1) << line;
  EXPECT_EQ(line["frames"]["dropped"], 0) << line;
  EXPECT_TRUE(frames_add_up(counts_of(line)));
  // The mount went with the camera.
  {
    RtspClient late(server.rtsp_url("door"));
    std::string why;
    ASSERT_TRUE(late.ended(10, &why));
    EXPECT_NE(why, "EOS");
  }
  server.child().signal(SIGTERM);
  ASSERT_EQ(server.child().wait_exit(60), 0) << server.child().err();
}

TEST(ServerRestream, ACameraWithoutRestreamHasNoMount) {
  ServerProcess server(json{{"streams", {{{"id", "line"}, {"uri", clip_uri()}}}}});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  ASSERT_TRUE(eventually([&] { return frames_out(http, server, "line") > 0; }, 120));
  RtspClient client(server.rtsp_url("line"));
  std::string why;
  ASSERT_TRUE(client.ended(10, &why));
  EXPECT_NE(why, "EOS");
  int w = 0, h = 0;
  EXPECT_FALSE(client.frame(0, &w, &h));
  EXPECT_TRUE(server.stream(http, "line")["rtsp_url"].is_null());
}

TEST(ServerRestream, AServerWithoutRtspRefusesARestream) {
  ServerProcess server(json::object(), "", {"--rtsp-port", "0"});
  ASSERT_TRUE(server.ready()) << server.child().err();
  Http http;
  const HttpReply r =
      http.request("POST", server.url("/streams"),
                   json({{"id", "door"}, {"uri", clip_uri()}, {"restream", true}}).dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json().value("field", ""), "restream") << r.body;
  EXPECT_NE(r.json().value("error", "").find("--rtsp-port"), std::string::npos) << r.body;
  EXPECT_EQ(http.get(server.url("/streams")).json()["streams"].size(), 0u);
}

// A port someone else holds: the re-stream asked for on the command line
// cannot be served, so the server does not start (exit 1, the port named).
TEST(ServerRestream, ATakenRtspPortIsExit1) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));
  const Result r =
      run({env_or("TORCHINFER_SERVER", "torchinfer-server"), "--model", detector(), "--listen",
           "127.0.0.1:" + std::to_string(free_port()), "--rtsp-port", port});
  close(fd);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot listen for RTSP on 127.0.0.1:" + port), std::string::npos) << r.err;
}

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
