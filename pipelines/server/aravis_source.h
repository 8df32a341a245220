// A GigE Vision / USB3 Vision camera feeding a camera pipeline's appsrc
// through Aravis, with the camera health aravissrc does not give:
//
// - GVSP without CAP_NET_RAW: Aravis receives GVSP through a packet socket
//   unless told not to; without CAP_NET_RAW (containers, VMs, loopback) no
//   frame arrives. The stream here uses a plain UDP socket
//   (ARV_GV_STREAM_OPTION_PACKET_SOCKET_DISABLED), an explicit packet size,
//   and a socket buffer as large as a frame (socket-buffer=auto): with the
//   kernel's default 208 KiB a 512x512 frame overflows it (measured: no
//   complete frame from aravissrc on loopback), and aravissrc creates its
//   stream privately, so its socket buffer cannot be set.
// - Lost frames counted from the camera's frame ids (server/frame_loss.h)
//   and Aravis' stream statistics; aravissrc drops incomplete frames unseen.
// - A triggered camera may wait forever: no timeout is an error then.
//   (aravissrc fails its stream after 2 s without a frame.)
// - A camera that disappears (control lost, or no frame for a while in
//   free-run) is closed and reopened every second until it answers again;
//   a camera not found or busy at start is retried the same way.
//
// One thread per camera does everything Aravis (open, settings, frames,
// triggers, close), so no Aravis object is shared between threads. What
// happens is posted as application messages on the pipeline's bus:
//   torchinfer-aravis-ready     the camera is acquiring (first time or again)
//   torchinfer-aravis-lost      reason (string): not found, busy, vanished
//   torchinfer-aravis-failed    reason: a setting the camera refuses (final)
#pragma once

#include <gst/app/gstappsrc.h>
#include <gst/gst.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "server/camera_settings.h"
#include "server/frame_loss.h"

typedef struct _ArvBuffer ArvBuffer;  // <arv.h> stays out of the glue's other files

namespace torchinfer::server {

struct AravisCounters {
  FrameLossFigures frames;
  std::uint64_t overflow = 0;  // complete frames not handed on: the analysis was behind
  // Aravis' stream statistics, summed over every (re)connection: its own
  // count of the frames above (completed, failures = incomplete,
  // missing_frames), packets, and frames dropped for want of a buffer.
  std::uint64_t completed = 0, failures = 0, missing_frames = 0;
  std::uint64_t packets_missing = 0, packets_resent = 0, underruns = 0;
  std::uint64_t triggers = 0, trigger_failures = 0;
  bool acquiring = false;
  std::string pixel_format;  // what the camera sends
  int width = 0, height = 0;
  int bits = 8;  // significant bits per sample
};

class AravisSource {
 public:
  // `infer` gets input-bits for 10-16-bit mono before the caps are set.
  AravisSource(CameraSettings settings, GstAppSrc* appsrc, GstElement* infer);
  ~AravisSource();
  AravisSource(const AravisSource&) = delete;
  AravisSource& operator=(const AravisSource&) = delete;

  void start();
  // Stops acquisition, closes the camera and joins the thread.
  void stop();
  // Asks for that without waiting (the main loop: the thread may be inside
  // an Aravis call to a camera that stopped answering); stop() joins later.
  void request_stop();
  // Queues one software trigger; false with the reason when the camera is
  // not acquiring now. Done on the camera's thread within ~10 ms.
  bool trigger(std::string* why);
  AravisCounters counters() const;

 private:
  struct Session;
  static constexpr int kStats = 6;  // the statistics above, in that order
  using Totals = std::uint64_t[kStats];
  void run();
  bool open(Session& s, std::string* why, bool* final);
  bool start_stream(Session& s, const std::string& format, std::string* why);
  void acquire(Session& s, std::string* why);
  void prime(Session& s);
  void run_triggers(Session& s);
  void update_statistics(Session& s, bool closing);
  void hand_on(Session& s, ArvBuffer* b);
  void close(Session& s);
  void post(const char* name, const std::string& reason = "");
  bool sleep_unless_stopped(double seconds);

  const CameraSettings settings_;
  GstAppSrc* appsrc_;
  GstElement* infer_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex wake_mu_;
  std::condition_variable wake_;

  mutable std::mutex mu_;  // below
  AravisCounters counters_;
  std::uint64_t pending_triggers_ = 0;
  FrameLossCounter loss_;  // the thread's; figures copied into counters_
  Totals base_ = {};       // statistics of the earlier connections
};

}  // namespace torchinfer::server
