// A GigE Vision / USB3 Vision camera feeding a camera pipeline's appsrc
// through Aravis, with the camera health aravissrc does not give:
//
// - GVSP without CAP_NET_RAW: Aravis receives GVSP through a packet socket
//   when the process may open one (CAP_NET_RAW), else through a plain UDP
//   socket with the kernel's default receive buffer (208 KiB), which a
//   512x512 frame overflows (measured: no complete frame from aravissrc
//   without CAP_NET_RAW; 25 fps with it; docs/machine-vision.md). The
//   stream here always uses the UDP socket
//   (ARV_GV_STREAM_OPTION_PACKET_SOCKET_DISABLED: the same with or without
//   the capability), an explicit packet size, and a socket buffer as large
//   as a frame (socket-buffer=auto), which aravissrc cannot set: it creates
//   its stream privately.
// - Lost frames counted from the camera's frame ids (server/frame_loss.h)
//   and Aravis' stream statistics; aravissrc drops incomplete frames unseen.
// - A triggered camera may wait forever: no timeout is an error then.
//   (aravissrc fails its stream after 2 s without a frame.) Software
//   triggers are queued and sent one at a time, each once the previous
//   one's frame came (a camera ignores a trigger while it is busy with a
//   frame, as Aravis' fake camera does within its 40 ms): one trigger, one
//   frame, or one counted trigger failure (no frame within its timeout, or
//   the camera lost with triggers waiting).
// - Health beyond the connection (server/camera_health.h): degraded (most
//   of the recent frames lost) or stalled (no complete frame for 2 s, or
//   5 frame periods, while one is expected).
// - A camera that disappears (control lost, or no frame for a while in
//   free-run) is closed and reopened every second until it answers again;
//   a camera not found or busy at start is retried the same way.
//
// One thread per camera does everything Aravis (open, settings, frames,
// triggers, close), so no Aravis object is shared between threads. Its stop
// is bounded: closing a camera that stopped answering costs Aravis' GVCP
// retries (2.5 s per command: stop acquisition, release control, the
// heartbeat's last read), which once held a server's SIGTERM past its
// limit; stop() waits at most kStopWaitS, then lets the thread finish in
// the background. The thread holds its own reference to this object (made
// with std::make_shared), and this object its own to the elements. What
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

#include "server/core/camera_health.h"
#include "server/core/camera_settings.h"
#include "server/core/frame_loss.h"

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
  // Software triggers: answered with a frame, not acted on (not sent, no
  // frame within the timeout, dropped with a lost camera), waiting. Every
  // accepted trigger is in exactly one of the three.
  std::uint64_t triggers = 0, trigger_failures = 0, triggers_pending = 0;
  CameraVerdict health;  // as of the acquisition thread's latest look (<= 0.1 s old)
  bool acquiring = false;
  std::string pixel_format;  // what the camera sends
  int width = 0, height = 0;
  int bits = 8;  // significant bits per sample
};

class AravisSource : public std::enable_shared_from_this<AravisSource> {
 public:
  static constexpr double kStopWaitS = 1.0;
  // At most this many software triggers wait; more are refused (429).
  static constexpr std::uint64_t kMostPendingTriggers = 256;

  // Before the pipeline starts (torchinfer refuses these while running):
  // input-bits from the configured pixel format (Mono10 -> 10, ...), and a
  // triggered camera's frames wait for a shared model rather than being
  // skipped as busy (drop-policy=block). False with why if torchinfer did
  // not take them.
  static bool configure_infer(const CameraSettings& settings, GstElement* infer, std::string* why);

  // `infer`: its input-bits must match the camera's format (checked at
  // each connection: a camera that sends another depth fails, naming it).
  AravisSource(CameraSettings settings, GstAppSrc* appsrc, GstElement* infer);
  ~AravisSource();
  AravisSource(const AravisSource&) = delete;
  AravisSource& operator=(const AravisSource&) = delete;

  // Needs the object to be owned by a std::shared_ptr.
  void start();
  // Stops acquisition and closes the camera; returns once done, or after
  // kStopWaitS with the close still going on in the background (said on
  // stderr). No frame or message comes from it after it returns.
  void stop();
  // Asks for that without waiting (the main loop: the thread may be inside
  // an Aravis call to a camera that stopped answering); stop() later.
  void request_stop();
  // Queues one software trigger: 202, or 503 (camera not acquiring now) or
  // 429 (kMostPendingTriggers waiting) with the reason. Sent on the
  // camera's thread once the triggers before it have their frames.
  int trigger(std::string* why);
  AravisCounters counters() const;

 private:
  struct Session;
  static constexpr int kStats = 6;  // the statistics above, in that order
  using Totals = std::uint64_t[kStats];
  void run();
  bool open(Session& s, std::string* why, bool* final);
  bool start_stream(Session& s, const std::string& format, std::string* why);
  void acquire(Session& s, std::string* why);
  bool depth_matches(const std::string& format, std::string* why) const;
  void prime(Session& s);
  void run_triggers(Session& s, bool framed);
  void drop_triggers(Session& s);
  void judge(Session& s);
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
  bool finished_ = false;  // run() returned (under wake_mu_)

  mutable std::mutex mu_;  // below
  AravisCounters counters_;
  std::uint64_t pending_triggers_ = 0;
  FrameLossCounter loss_;  // the thread's; figures copied into counters_
  Totals base_ = {};       // statistics of the earlier connections
  // The thread's; its verdict copied into counters_.
  CameraHealthWindow health_;
};

}  // namespace torchinfer::server
