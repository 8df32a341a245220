// A frame between a stream's streaming thread and its output thread: its
// entry in the in-order queue and the record its batch slots write into.
//
// Who maps and unmaps a frame. The streaming thread maps a frame's pixels
// (FramePixels::map) only when the frame goes to the model, at its first
// slot. Preprocessing on the streaming thread: it unmaps them before it
// commits the frame's last slot. Preprocessing on the inference threads
// (preprocess_in_batch): the record takes the mapping over, `holds` counts
// the slots still to run, and the slot that brings `holds` to 0 (delivered
// or given up) unmaps, in the batch's callback, before it completes the
// queue entry. Either way the pixels are unmapped before the frame can
// leave the queue, so the output thread may make the buffer writable and
// send it on; a frame that never got a slot is never mapped.
//
// When a record may be reused. Records are pooled (RecordPool) so that a
// frame allocates nothing. Holders: the queue entry (until the output
// thread popped it and dropped the FrameInference it handed out), each
// batch the frame has a slot in (the Batcher keeps the record referenced
// until the slot's callback returned or the batch was dropped), and the
// output thread's latest result kept for reuse. A record is reused only
// when the pool's own reference is the last one (use_count() == 1); the
// acquire fence there orders the other holders' last writes before the
// clear.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "batching/in_order_queue.h"
#include "common/stream_stats.h"
#include "stream/frame_inference.h"
#include "stream/owned_ref.h"
#include "stream/team_preprocessors.h"

namespace torchinfer {

struct FrameRecord;

struct QueuedItem {
  OwnedRef obj;
  bool is_event = false;
  int pending = 0;  // slots whose batch has not run yet
  std::shared_ptr<FrameRecord> rec;
  std::chrono::steady_clock::time_point in_time;
};
using FrameQueue = InOrderQueue<QueuedItem>;

// A frame's results plus what its slots need until their batches ran.
// Batch callbacks hold a raw pointer (so that std::function stores them
// without allocating) and the batch holds the record itself.
struct FrameRecord : FrameInference {
  std::shared_ptr<FrameQueue> queue;  // where the slots' results go
  std::uint64_t seq = 0;              // the frame's entry in it
  std::uint64_t stream = 0;           // the session's number of the frame's stream
  std::uint64_t epoch = 0;            // StreamSession::resume() count when submitted
  // Why the frame is not inferred, once known (set by the streaming thread
  // before the entry completes; read by the output thread after the pop).
  std::optional<SkipReason> skip;
  // preprocess_in_batch: the inference threads' preprocessors, the frame,
  // mapped until every slot it gave a batch was delivered or given up, and
  // each slot's crop (width 0: the options' own).
  std::shared_ptr<TeamPreprocessors> team;
  std::unique_ptr<FramePixels> pixels;
  FrameView view;
  std::vector<Crop> crops;
  std::atomic<int> holds{0};  // slots not yet delivered or given up
  // preprocess_in_batch: the bands' clamped pixels, added by the inference
  // threads as they finish; copied to `saturation` when each slot completes.
  std::atomic<std::uint64_t> band_clamped{0};
  std::atomic<std::uint32_t> band_peak{0};

  ~FrameRecord() { unmap(); }
  void unmap() {
    if (!pixels) return;
    pixels->unmap();
    pixels.reset();
  }
  // `n` slots are done with the pixels; the last one unmaps them, before
  // its result can let the frame leave.
  void release(int n) {
    if (n > 0 && holds.fetch_sub(n) == n) unmap();
  }
  // An inference thread's band (any thread, concurrently).
  void add_band_saturation(const Saturation& s) {
    if (!s.any()) return;
    band_clamped.fetch_add(s.pixels, std::memory_order_relaxed);
    std::uint32_t seen = band_peak.load(std::memory_order_relaxed);
    while (seen < s.peak &&
           !band_peak.compare_exchange_weak(seen, s.peak, std::memory_order_relaxed)) {
    }
  }
  // Once the frame has left: its outputs live on in the frame's metas
  // (which hold them themselves), so the record need not. A pooled record
  // would otherwise keep a frame's outputs until it is reused -- dozens of
  // frames, and a 12 MP frame's tiles are 100+ MB each.
  void release_outputs() {
    for (SlotResult& s : slots) s.result.output.reset();
  }
  // Keeps the vectors' capacity: a reused record allocates nothing.
  void clear() {
    frame_width = frame_height = 0;
    pts = kNoTimestamp;
    slots.clear();
    region_mode = false;
    regions.clear();
    saturation = {};
    band_clamped = 0;
    band_peak = 0;
    unmap();
    crops.clear();
    holds = 0;
    stream = epoch = 0;
    skip.reset();
  }
};

// The streaming thread's pool of records (see the reuse rule above).
class RecordPool {
 public:
  // Made now, not on demand: a batch worker that still holds a delivered
  // frame's record (several with lanes) must not make a frame allocate.
  void reset(std::size_t size) {
    records_.clear();
    records_.reserve(size);
    while (records_.size() < size) records_.push_back(std::make_shared<FrameRecord>());
    next_ = 0;
  }
  void clear() { records_.clear(); }
  // A cleared record: a pooled one nobody else holds, else a new one.
  std::shared_ptr<FrameRecord> take() {
    // Frames leave in order, so the oldest record is the likeliest free one.
    for (std::size_t tries = 0; tries < std::min<std::size_t>(records_.size(), 4); ++tries) {
      std::shared_ptr<FrameRecord>& r = records_[next_];
      next_ = (next_ + 1) % records_.size();
      if (r.use_count() == 1) {
        // The last other holder let go on another thread: see its writes.
        std::atomic_thread_fence(std::memory_order_acquire);
        r->clear();
        return r;
      }
    }
    auto r = std::make_shared<FrameRecord>();
    if (records_.size() < records_.capacity()) records_.push_back(r);
    return r;
  }

 private:
  std::vector<std::shared_ptr<FrameRecord>> records_;
  std::size_t next_ = 0;
};

}  // namespace torchinfer
