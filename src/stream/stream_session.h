// One video stream's path through inference, from the moment its frame is
// mapped until its result is ready to be attached: which frames go to the
// model (inference-interval, drop policy), preprocessing into batch slots of
// the shared Batcher, the in-order queue that holds frames and serialized
// events until their results are in, reuse of the latest result on frames
// that were not inferred, flushing, draining and the stream's statistics.
//
// Threads: submit_frame()/push_event()/drain() run on the streaming thread,
// pop()/finish() on the output thread; set_flushing()/resume()/stop_output()
// and the stats getters from any thread. The owner's buffers and events
// travel as OwnedRef, so nothing here knows GStreamer.
//
// A frame contributes 0..N slots to batches (N = 1 for full-frame inference):
// it leaves the queue once every slot it asked for has its result or was
// given up, so a region-of-interest mode adds regions without another queue.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "batching/batcher.h"
#include "batching/in_order_queue.h"
#include "common/stream_stats.h"
#include "preprocess/preprocess.h"
#include "stream/owned_ref.h"
#include "stream/regions.h"

namespace torchinfer {

constexpr std::uint64_t kNoTimestamp = ~std::uint64_t{0};

// One slot's result: what the batcher returned for the pixels it was given.
struct SlotResult {
  FrameResult result;
  FrameTransform transform;  // frame pixels -> model input
  double preprocess_ms = 0;
  bool delivered = false;  // the batch ran (result or error); false: never ran
};

// A frame's inference results on their way to the output thread.
struct FrameInference {
  int frame_width = 0, frame_height = 0;
  std::uint64_t pts = kNoTimestamp;  // of the frame the results were computed on
  std::vector<SlotResult> slots;     // full-frame mode: one
  // Region mode: one entry per region the owner passed, in its order.
  bool region_mode = false;
  std::vector<RegionResult> regions;

  // Every slot that ran gave a result (at least one ran).
  bool ok() const;
  // The first error of a slot, "" if none.
  std::string error() const;
};

struct SessionOptions {
  int inference_interval = 1;                   // infer every Nth frame
  bool skip_when_busy = false;                  // drop instead of waiting (live sources)
  std::chrono::milliseconds stats_interval{0};  // 0 = no periodic snapshot
  // The preprocessing for a model (its config plus the owner's overrides);
  // called again after a model reload.
  std::function<PreprocessOptions(const ModelConfig&)> preprocess_for;
  // inference-region=roi-list: each frame's regions are inferred instead of
  // the whole frame (the preprocessing's own crop is not used).
  bool region_mode = false;
  RegionOptions regions;
  // Preprocessing runs on the model's inference threads just before each
  // batch's forward() (Batcher SlotPrepare) instead of on the streaming
  // thread: for when those threads take every core, where a streaming
  // thread preprocessing meanwhile would stall the whole team. Frames stay
  // mapped until their batch runs.
  bool preprocess_in_batch = false;
};

// preprocess-on=auto: the inference threads preprocess when they leave no
// core spare for the streaming threads (a stream preprocessing then takes a
// core from the team, and every thread of the team waits for that one).
inline bool preprocess_in_batch_by_default(int inference_threads, int usable_cpus) {
  return inference_threads >= usable_cpus;
}

// What the owner must do with a frame handed to submit_frame().
enum class SubmitStatus {
  kQueued,         // preprocessed into a batch slot; leaves with its result
  kSkipped,        // not inferred (interval); leaves with the latest result
  kDropped,        // the model was busy; counted; leaves (or left) without inference
  kFlushing,       // the stream is flushing: the frame was discarded
  kStopped,        // the output stopped (downstream error/EOS): see output_code()
  kMapFailed,      // the frame's pixels could not be read
  kPrepareFailed,  // preprocessing threw: see SubmitResult::error
  kNoRegions       // region mode: nothing to infer; passes through in order
};

struct SubmitResult {
  SubmitStatus status = SubmitStatus::kQueued;
  std::string error;
};

// A frame or event ready to leave, in stream order.
struct StreamOutput {
  OwnedRef obj;
  bool is_event = false;
  // Frames: the results to attach (this frame's own or, not inferred, the
  // latest before it for a frame of the same size); null if none yet.
  std::shared_ptr<const FrameInference> results;
  bool inferred = false;  // `results` were computed on this frame
  std::string error;      // inference failed on this frame: the stream must stop
  std::chrono::steady_clock::time_point in_time;
};

// The pixels of a frame handed to the session, read only when the frame
// goes to the model. unmap() comes before the slot is committed: from then
// on the output thread may send the frame on.
class FramePixels {
 public:
  virtual ~FramePixels() = default;
  // False when the pixels cannot be read.
  virtual bool map(FrameView* view) = 0;
  virtual void unmap() = 0;
};

class StreamSession {
 public:
  using Clock = std::chrono::steady_clock;

  StreamSession();
  ~StreamSession();
  StreamSession(const StreamSession&) = delete;
  StreamSession& operator=(const StreamSession&) = delete;

  // Begins a run on `batcher` (possibly shared with other streams); resets
  // the counters. The queue holds every frame the batch buffers can hold,
  // the frames passing between inferred ones, and a few events.
  void start(std::shared_ptr<Batcher> batcher, SessionOptions options);
  // Ends the run: drops what is queued and releases the batcher (the last
  // holder waits for the batch in flight).
  void stop();

  std::shared_ptr<Batcher> batcher() const;
  void set_skip_when_busy(bool skip) { skip_when_busy_ = skip; }
  bool skip_when_busy() const { return skip_when_busy_; }

  // Streaming thread. `frame` is the queue's own reference (the caller
  // must not touch the frame after this returns unless it kept another).
  // In region mode `regions` lists the frame's regions of interest (null or
  // empty: none); each gets a RegionResult, in order, on the frame's
  // FrameInference. A frame with N regions to infer fills N batch slots,
  // possibly several batches: it blocks only on batch buffers, never on its
  // own queue entry. skip_when_busy drops a frame whose first region finds
  // no free slot (all its regions); a frame that got one waits for the rest.
  // `pixels` are read before this returns, or (preprocess_in_batch) kept
  // mapped until the frame's batches have run.
  SubmitResult submit_frame(OwnedRef frame, int width, int height, std::uint64_t pts,
                            std::unique_ptr<FramePixels> pixels,
                            const std::vector<RegionOfInterest>* regions = nullptr);
  // Queues a serialized event behind the frames before it; false when
  // flushing.
  bool push_event(OwnedRef event);
  // A new frame format or the end of a stream: the partial batch runs now
  // rather than at its timeout.
  void submit_partial();
  // Waits until everything queued has left (serialized queries); false if
  // the stream started flushing meanwhile.
  bool drain();
  std::size_t capacity() const { return queue_->capacity(); }

  // Output thread: the next item in order, or nothing when flushing or
  // stopped.
  std::optional<StreamOutput> pop();
  // Counts a frame that left (`valid` false: its inferred outputs held NaN
  // or infinity); returns a statistics snapshot when the stats interval has
  // passed since the last one.
  std::optional<StatsSnapshot> finish(const StreamOutput& out, bool valid = true);

  // Flush start / pad deactivation: discards what is queued and unblocks
  // every waiting call.
  void set_flushing();
  // Flush stop / activation: accepts frames again, forgets the latest
  // result (a seek starts afresh).
  void resume();
  bool flushing() const { return flushing_; }
  // The output side stopped with the owner's `code` (non-zero); frames are
  // refused from now on and the streaming thread is unblocked.
  void stop_output(int code, bool discard_queue);
  // A new segment or stream went out after the output stopped with `code`
  // (downstream's EOS, queue kept): frames are taken again. Any other code
  // stays.
  void accept_again(int code);
  int output_code() const { return output_code_; }

  StatsSnapshot snapshot(bool reset_rate);
  double last_inference_ms() const;
  // Frames that left with their own results since start (cheap: no
  // percentiles, unlike snapshot()).
  std::uint64_t frames_inferred() const;

 private:
  struct Record;
  struct Item {
    OwnedRef obj;
    bool is_event = false;
    int pending = 0;  // slots whose batch has not run yet
    std::shared_ptr<Record> rec;
    Clock::time_point in_time;
  };
  using Queue = InOrderQueue<Item>;

  struct CachedResult {
    SlotResult slot;
    std::uint64_t pts = kNoTimestamp;
  };
  class TeamPreprocessors;

  void give_up_slot(std::uint64_t seq, std::size_t slot);
  // A cleared record: a pooled one nobody holds any more, else a new one.
  std::shared_ptr<Record> new_record();
  SubmitResult fill_slot(const std::shared_ptr<Record>& rec, Batcher::Slot& slot,
                         std::unique_ptr<FramePixels> pixels);
  // Plans the frame's regions into rec; returns the slots to fill (region
  // indices in rec->regions).
  std::vector<std::size_t> plan_regions(FrameInference& rec, bool infer, std::uint64_t frame_no,
                                        const std::vector<RegionOfInterest>* regions);
  SubmitResult fill_regions(const std::shared_ptr<Record>& rec,
                            const std::vector<std::size_t>& to_infer, std::uint64_t frame_no,
                            std::unique_ptr<FramePixels> pixels);
  void prepare(const Batcher::Slot& slot);
  FrameTransform preprocess_into(const Batcher::Slot& slot, const FrameView& view, const Crop* crop,
                                 double& ms);
  // The slot was preprocessed (its transform and time are in rec's slot).
  void commit_slot(Batcher::Slot& slot, const std::shared_ptr<Record>& rec, std::size_t index);
  // preprocess_in_batch: the slot is preprocessed when its batch runs, from
  // rec's mapped frame (and crop).
  void commit_deferred(Batcher::Slot& slot, const std::shared_ptr<Record>& rec, std::size_t index);
  // Output thread: remembers inferred regions' results and attaches the
  // latest result to regions that reuse one.
  void resolve_regions(FrameInference& rec);
  void count_regions(const FrameInference& rec);

  std::shared_ptr<Queue> queue_;  // shared with batch callbacks that may outlive a run
  std::shared_ptr<Batcher> batcher_;
  SessionOptions opts_;
  std::atomic<bool> flushing_{true};
  std::atomic<int> output_code_{0};
  std::atomic<bool> skip_when_busy_{false};

  // The inference threads' preprocessors (preprocess_in_batch); shared with
  // batches that may outlive a run.
  std::shared_ptr<TeamPreprocessors> team_pre_;

  // Streaming thread only.
  std::vector<std::shared_ptr<Record>> records_;  // the pool new_record() recycles
  std::size_t next_record_ = 0;
  std::shared_ptr<const LoadedModel> pre_model_;
  std::unique_ptr<Preprocessor> pre_;
  std::uint64_t frame_counter_ = 0;
  // Frame number at which each tracked object was last sent to the model.
  ObjectMemory<std::uint64_t> submitted_{300, kMaxRememberedObjects};

  // Output thread only.
  std::shared_ptr<const FrameInference> last_;
  ObjectMemory<CachedResult> results_{300, kMaxRememberedObjects};
  std::uint64_t out_frames_ = 0;
  Clock::time_point last_stats_{};

  mutable std::mutex stats_mu_;  // guards stats_, last_inference_ms_, frames_inferred_
  StreamStats stats_;
  double last_inference_ms_ = 0;
  std::uint64_t frames_inferred_ = 0;
};

}  // namespace torchinfer
