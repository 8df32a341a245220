// The RTSP re-stream of the cameras' annotated video: one GstRTSPServer in
// the server process (on the main loop), one mount /streams/<id> per camera
// with "restream": true.
//
// Each mount is a shared media factory whose pipeline starts with an appsrc:
//
//   appsrc name=src ! videoconvert ! openh264enc ! rtph264pay name=pay0
//
// gst-rtsp-server builds that media at a client's first DESCRIBE and
// unprepares it after the last client leaves, so nothing is encoded while
// nobody watches. The camera's appsink hands each annotated frame to
// RestreamFeed::push(), which never blocks: with no media it returns at once,
// and a media whose queue is full (a slow encoder) loses the frame, counted.
//
// Threads: RestreamServer and remove() run on the main loop; push() on the
// camera's streaming thread; the factory's signals on gst-rtsp-server's.
#pragma once

#include <gst/app/gstappsrc.h>
#include <gst/gst.h>
#include <gst/rtsp-server/rtsp-server.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace torchinfer::server {

class RestreamFeed {
 public:
  RestreamFeed(GstRTSPServer* server, std::string id, std::string url);
  ~RestreamFeed();
  RestreamFeed(const RestreamFeed&) = delete;
  RestreamFeed& operator=(const RestreamFeed&) = delete;

  const std::string& url() const { return url_; }
  const std::string& mount() const { return mount_; }
  // One annotated frame (not taken over). Any thread; never blocks.
  void push(GstBuffer* buffer, GstCaps* caps);
  // EOS into every media (clients get an RTCP BYE); push() is a no-op after.
  void end();
  // RTSP clients with a session on this camera's media now.
  int clients() const;
  // Frames a media could not take because its encoder was behind.
  std::uint64_t frames_dropped() const { return dropped_.load(); }
  std::uint64_t frames_sent() const { return sent_.load(); }

  // gst-rtsp-server's media-configure and unprepared.
  void attach_media(GstRTSPMedia* media);
  void detach_media(GstRTSPMedia* media);
  // Closes the connections of clients that still watch (after end()).
  void close_clients();

 private:
  struct Media {
    GstRTSPMedia* media;  // not owned: it tells us when it goes
    GstAppSrc* src;       // owned
  };
  GstRTSPServer* server_;  // owned ref
  const std::string id_, url_, mount_;
  mutable std::mutex mu_;  // everything below
  std::vector<Media> medias_;
  GstCaps* caps_ = nullptr;
  bool ended_ = false;
  std::atomic<std::uint64_t> dropped_{0}, sent_{0};
};

class RestreamServer {
 public:
  RestreamServer();
  ~RestreamServer();
  RestreamServer(const RestreamServer&) = delete;
  RestreamServer& operator=(const RestreamServer&) = delete;

  // Binds address:port (0 picks one) on the default main context. False
  // with the reason (the port is taken, ...).
  bool listen(const std::string& address, int port, std::string* why);
  // "rtsp://host:port"
  const std::string& base_url() const { return base_; }
  // False with the reason when the encoding elements are not installed.
  static bool elements_installed(std::string* why);
  // Mounts /streams/<id>. Main loop.
  std::shared_ptr<RestreamFeed> add(const std::string& id);
  // Unmounts, ends the stream, and closes the connections of clients still
  // watching two seconds later (time for the BYE to reach them). Main loop.
  void remove(const std::shared_ptr<RestreamFeed>& feed);

 private:
  GstRTSPServer* server_;
  guint source_ = 0;
  std::string base_;
};

}  // namespace torchinfer::server
