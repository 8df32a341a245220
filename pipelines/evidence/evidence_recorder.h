// Evidence of events from a running pipeline (docs/evidence.md): a branch
// off a tee on raw video encodes every frame into an EncodedRing (the last
// seconds, bounded); an event gets its snapshot and crop (JPEG) and, once the
// stream has passed the event by post_s, its clip (the ring's frames remuxed
// into Matroska, no second encoder). Files land through an EvidenceStore.
// Shared by torchinfer-qa-line (--evidence) and torchinfer-server.
//
//   tee ! queue leaky=downstream ! videoconvert ! jpegenc | x264enc ! appsink
//                                    (drops counted)          -> EncodedRing
//   worker thread: JPEG snapshot + crop, clip = appsrc ! [h264parse !]
//                  matroskamux ! fdsink (a temp file the store made in its
//                  folder's descriptor) -> store->adopt_temp()
//
// The streaming threads only copy, count and hand over: nothing here blocks
// them, nothing throws into them. The recorder must outlive its pipeline's
// streaming (set the pipeline to NULL before destroying the recorder).
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <opencv2/core/types.hpp>
#include <string>
#include <thread>
#include <vector>

#include "evidence/core/encoded_ring.h"
#include "evidence/core/evidence_store.h"

namespace torchinfer {

struct RecorderOptions {
  // "jpeg": jpegenc, every frame a keyframe (a clip starts exactly pre_s
  // before its event; 4x less CPU than H.264 here, 10x more bytes: the
  // measured choice, docs/evidence.md). "h264": x264enc ultrafast/zerolatency
  // (openh264enc where plugins-ugly is not installed), a keyframe a second.
  std::string encoder = "jpeg";
  int jpeg_quality = 75;  // ring frames; snapshots and crops are encoded at 85
  int snapshot_quality = 85;
  std::size_t max_pending_snapshots = 16;  // frames waiting for the JPEG writer
  // The leaky queue before the encoder: raw frames, bounded by memory (64 MB:
  // 1.7 s of 640x480 YUY2 at 30 fps, 0.5 s of 1080p) rather than by count,
  // so that a short stall of the encoder's thread on a loaded machine loses
  // nothing; 0 frames: no bound by count.
  unsigned queue_frames = 0;
  unsigned queue_bytes = 64u << 20;
};

// The recorder's own losses, beside the store's counters.
struct RecorderLosses {
  std::uint64_t queue_dropped = 0;       // frames the leaky queue dropped (encoder behind)
  std::uint64_t ring_evicted_early = 0;  // frames ring_max_bytes pushed out before their time
  std::uint64_t clips_short = 0;         // clips shorter than asked by more than a frame
  std::uint64_t snapshots_dropped = 0;   // snapshot/crop jobs refused: the writer was behind
  std::uint64_t frames_encoded = 0;
  std::uint64_t bytes_encoded = 0;  // the encoder's output so far (bytes/s of the ring)
  std::size_t ring_peak_bytes = 0;  // the ring's largest size so far (its memory cost)
};

class EvidenceRecorder {
 public:
  explicit EvidenceRecorder(std::shared_ptr<evidence::EvidenceStore> store,
                            RecorderOptions options = {});
  ~EvidenceRecorder();
  EvidenceRecorder(const EvidenceRecorder&) = delete;
  EvidenceRecorder& operator=(const EvidenceRecorder&) = delete;

  // Adds the ring's branch to `pipeline` from a free request pad of `tee` (a
  // tee already in the pipeline, on raw video): queue (leaky, counted) !
  // encoder ! appsink into the ring. False + why (an element not installed).
  bool attach(GstElement* pipeline, GstElement* tee, std::string* why);
  // Records an event: `frame` (raw video, `info`) is the snapshot's frame
  // (the QA app passes its copy of the frame where the part was best seen)
  // and `box` the crop, in that frame's pixels (an empty box: no crop). The
  // clip is timed by e.pts_ns (running time, evidence_store.h): from pre_s
  // before to post_s after, written
  // once the ring has reached pts + post_s (or at finish()). Returns at once
  // with the store's record (n and the paths). Never blocks, never throws.
  evidence::EventRecord record(evidence::EventRecord e, GstBuffer* frame, const GstVideoInfo& info,
                               const cv::Rect& box);
  // At EOS / stop: pending clips written with what the ring has (shorter:
  // counted), every file written or counted; waits for the writer.
  void finish();
  // The store's, with the recorder's own losses folded into write_failures.
  evidence::EvidenceCounters counters() const;
  RecorderLosses losses() const;
  std::size_t ring_bytes() const;
  std::size_t ring_frames() const;
  const evidence::EvidenceStore& store() const { return *store_; }

 private:
  struct Job;
  struct PendingClip {
    std::uint64_t n;
    std::int64_t from_ns, to_ns;
    std::string path;  // the clip's, for messages
  };
  static GstFlowReturn on_sample(GstElement* sink, gpointer self);
  static GstPadProbeReturn count_in(GstPad*, GstPadProbeInfo*, gpointer self);
  static GstPadProbeReturn count_out(GstPad*, GstPadProbeInfo*, gpointer self);
  void take_sample(GstSample* sample);
  void ask_keyframe(bool keyframe, std::int64_t pts, std::int64_t duration);
  void release_due_clips(std::int64_t newest_ns, bool all);
  void enqueue(Job job);
  void work();
  void run_job(Job& job);
  void write_images(Job& job);
  void write_clip(Job& job);

  std::shared_ptr<evidence::EvidenceStore> store_;
  const RecorderOptions options_;
  evidence::EncodedRing ring_;
  GstElement* queue_ = nullptr;      // owned refs, for the counts
  GstElement* appsink_ = nullptr;    // H.264 only: keyframes are asked through it
  std::int64_t last_keyframe_ = -1;  // the appsink's thread only
  bool keyframe_asked_ = false;
  std::atomic<std::uint64_t> queued_in_{0}, queued_out_{0}, encoded_{0}, encoded_bytes_{0};
  std::atomic<std::uint64_t> clips_short_{0}, snapshots_dropped_{0};
  std::atomic<std::uint64_t> snapshots_waiting_{0};
  std::atomic<std::size_t> ring_peak_{0};  // written by the appsink's thread only

  mutable std::mutex mu_;  // pending_, jobs_, caps_, stop_
  std::condition_variable wake_, idle_;
  std::vector<PendingClip> pending_;
  std::deque<Job> jobs_;
  bool busy_ = false, stop_ = false;
  GstCaps* caps_ = nullptr;  // the encoded frames' caps, from the first sample
  std::thread worker_;
};

}  // namespace torchinfer
