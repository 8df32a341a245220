#include "restream.h"

#include <gst/video/video.h>

#include <algorithm>
#include <cstring>

namespace torchinfer::server {

namespace {

// A keyframe every 30 frames (1 s of a 30 fps camera): a client decodes
// within a second of joining. openh264 because it is the H.264 encoder
// Debian ships (gst-plugins-bad), as torchinfer-rtsp-server uses; H.264
// because every RTSP client (VLC, ffplay, NVRs) plays it, MJPEG over RTP
// being limited to 2040x2040 and poorly supported.
constexpr const char* kLaunch =
    "( appsrc name=src is-live=true format=time do-timestamp=true ! videoconvert "
    "! video/x-raw,format=I420 ! openh264enc gop-size=30 rate-control=bitrate bitrate=2000000 "
    "! rtph264pay name=pay0 pt=96 config-interval=-1 )";

// Frames waiting in a media's appsrc beyond which the encoder is behind:
// the next frame is dropped (counted) rather than queued without bound.
constexpr guint64 kMaxQueued = 3;

using FeedRef = std::shared_ptr<RestreamFeed>;

void delete_ref(gpointer data, GClosure*) {
  delete static_cast<FeedRef*>(data);
}

void on_unprepared(GstRTSPMedia* media, gpointer user) {
  (*static_cast<FeedRef*>(user))->detach_media(media);
}

void on_media_configure(GstRTSPMediaFactory*, GstRTSPMedia* media, gpointer user) {
  const FeedRef& feed = *static_cast<FeedRef*>(user);
  feed->attach_media(media);
  g_signal_connect_data(media, "unprepared", G_CALLBACK(on_unprepared), new FeedRef(feed),
                        delete_ref, GConnectFlags(0));
}

// Which clients hold a session on `mount` (exactly: a mount's path may be a
// prefix of another's).
struct ClientMatch {
  const std::string* mount;
  bool close = false;
  bool hit = false;
  int count = 0;
};

GstRTSPFilterResult match_media(GstRTSPSession*, GstRTSPSessionMedia* sm, gpointer user) {
  auto* m = static_cast<ClientMatch*>(user);
  gint matched = 0;
  if (gst_rtsp_session_media_matches(sm, m->mount->c_str(), &matched) &&
      matched == static_cast<gint>(m->mount->size()))
    m->hit = true;
  return GST_RTSP_FILTER_KEEP;
}

GstRTSPFilterResult match_session(GstRTSPClient*, GstRTSPSession* session, gpointer user) {
  GList* l = gst_rtsp_session_filter(session, match_media, user);
  g_list_free_full(l, g_object_unref);
  return GST_RTSP_FILTER_KEEP;
}

GstRTSPFilterResult match_client(GstRTSPServer*, GstRTSPClient* client, gpointer user) {
  auto* m = static_cast<ClientMatch*>(user);
  m->hit = false;
  GList* l = gst_rtsp_client_session_filter(client, match_session, user);
  g_list_free_full(l, g_object_unref);
  if (!m->hit) return GST_RTSP_FILTER_KEEP;
  m->count++;
  return m->close ? GST_RTSP_FILTER_REMOVE : GST_RTSP_FILTER_KEEP;
}

GstRTSPFilterResult close_any(GstRTSPServer*, GstRTSPClient*, gpointer) {
  return GST_RTSP_FILTER_REMOVE;
}

// The frame's memory (shared, not copied) and its layout; no timestamps
// (the media's appsrc stamps its own running time) and no analysis metas.
GstBuffer* frame_for_media(GstBuffer* in) {
  GstBuffer* out = gst_buffer_copy_region(in, GST_BUFFER_COPY_MEMORY, 0, -1);
  if (GstVideoMeta* vm = gst_buffer_get_video_meta(in))
    gst_buffer_add_video_meta_full(out, vm->flags, vm->format, vm->width, vm->height, vm->n_planes,
                                   vm->offset, vm->stride);
  return out;
}

}  // namespace

RestreamFeed::RestreamFeed(GstRTSPServer* server, std::string id, std::string url)
    : server_(server), id_(std::move(id)), url_(std::move(url)), mount_("/streams/" + id_) {}

RestreamFeed::~RestreamFeed() {
  for (auto& m : medias_) gst_object_unref(m.src);
  if (caps_) gst_caps_unref(caps_);
}

void RestreamFeed::attach_media(GstRTSPMedia* media) {
  GstElement* bin = gst_rtsp_media_get_element(media);
  GstElement* src = gst_bin_get_by_name(GST_BIN(bin), "src");
  gst_object_unref(bin);
  if (!src) return;
  // Unbounded here: push() bounds the queue itself, so it can count.
  g_object_set(src, "max-bytes", static_cast<guint64>(0), "block", FALSE, nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  if (caps_) gst_app_src_set_caps(GST_APP_SRC(src), caps_);
  if (ended_) gst_app_src_end_of_stream(GST_APP_SRC(src));
  medias_.push_back({media, GST_APP_SRC(src)});
}

void RestreamFeed::detach_media(GstRTSPMedia* media) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(medias_.begin(), medias_.end(),
                         [&](const Media& m) { return m.media == media; });
  if (it == medias_.end()) return;
  gst_object_unref(it->src);
  medias_.erase(it);
}

void RestreamFeed::push(GstBuffer* buffer, GstCaps* caps) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_ || medias_.empty() || !buffer || !caps) return;  // nobody watches
  if (!caps_ || !gst_caps_is_equal(caps_, caps)) {
    gst_caps_replace(&caps_, caps);
    for (auto& m : medias_) gst_app_src_set_caps(m.src, caps_);
  }
  for (auto& m : medias_) {
    if (gst_app_src_get_current_level_buffers(m.src) >= kMaxQueued) {
      dropped_++;
      continue;
    }
    if (gst_app_src_push_buffer(m.src, frame_for_media(buffer)) == GST_FLOW_OK)
      sent_++;
    else
      dropped_++;  // the media is shutting down
  }
}

void RestreamFeed::end() {
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_) return;
  ended_ = true;
  for (auto& m : medias_) gst_app_src_end_of_stream(m.src);
}

int RestreamFeed::clients() const {
  ClientMatch m{&mount_};
  GList* l = gst_rtsp_server_client_filter(server_, match_client, &m);
  g_list_free_full(l, g_object_unref);
  return m.count;
}

void RestreamFeed::close_clients() {
  ClientMatch m{&mount_, true};
  GList* l = gst_rtsp_server_client_filter(server_, match_client, &m);
  g_list_free_full(l, g_object_unref);
  if (m.count)
    g_printerr("torchinfer-server: stream %s: closed %d RTSP client(s) of the removed stream\n",
               id_.c_str(), m.count);
}

RestreamServer::RestreamServer() : server_(gst_rtsp_server_new()) {}

RestreamServer::~RestreamServer() {
  GList* l = gst_rtsp_server_client_filter(server_, close_any, nullptr);
  g_list_free_full(l, g_object_unref);
  if (source_) g_source_remove(source_);
  g_object_unref(server_);
}

bool RestreamServer::elements_installed(std::string* why) {
  for (const char* name : {"appsrc", "videoconvert", "openh264enc", "rtph264pay"}) {
    GstElementFactory* f = gst_element_factory_find(name);
    if (!f) {
      *why = std::string("GStreamer element '") + name +
             "' is not installed (openh264enc: Debian's gstreamer1.0-plugins-bad)";
      return false;
    }
    gst_object_unref(f);
  }
  return true;
}

bool RestreamServer::listen(const std::string& address, int port, std::string* why) {
  gst_rtsp_server_set_address(server_, address.c_str());
  gst_rtsp_server_set_service(server_, std::to_string(port).c_str());
  source_ = gst_rtsp_server_attach(server_, nullptr);
  if (!source_) {
    *why = "cannot listen for RTSP on " + address + ":" + std::to_string(port) +
           " (is the port taken? choose another with --rtsp-port, or 0 for no re-stream)";
    return false;
  }
  // A client needs a host it can reach: the wildcard addresses are not one.
  std::string host = address;
  if (host == "0.0.0.0" || host == "::") host = g_get_host_name();
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  base_ = "rtsp://" + host + ":" + std::to_string(gst_rtsp_server_get_bound_port(server_));
  return true;
}

std::shared_ptr<RestreamFeed> RestreamServer::add(const std::string& id) {
  auto feed = std::make_shared<RestreamFeed>(server_, id, base_ + "/streams/" + id);
  GstRTSPMediaFactory* factory = gst_rtsp_media_factory_new();
  gst_rtsp_media_factory_set_launch(factory, kLaunch);
  // One encoder per camera, however many watch.
  gst_rtsp_media_factory_set_shared(factory, TRUE);
  g_signal_connect_data(factory, "media-configure", G_CALLBACK(on_media_configure),
                        new FeedRef(feed), delete_ref, GConnectFlags(0));
  GstRTSPMountPoints* mounts = gst_rtsp_server_get_mount_points(server_);
  gst_rtsp_mount_points_add_factory(mounts, feed->mount().c_str(), factory);
  g_object_unref(mounts);
  return feed;
}

void RestreamServer::remove(const std::shared_ptr<RestreamFeed>& feed) {
  GstRTSPMountPoints* mounts = gst_rtsp_server_get_mount_points(server_);
  gst_rtsp_mount_points_remove_factory(mounts, feed->mount().c_str());
  g_object_unref(mounts);
  feed->end();
  // A client that ignores the BYE (or never got it: UDP) is closed.
  g_timeout_add_seconds_full(
      G_PRIORITY_DEFAULT, 2,
      [](gpointer data) -> gboolean {
        (*static_cast<FeedRef*>(data))->close_clients();
        return G_SOURCE_REMOVE;
      },
      new FeedRef(feed), [](gpointer data) { delete static_cast<FeedRef*>(data); });
}

}  // namespace torchinfer::server
