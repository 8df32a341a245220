// One video stream's path through inference, from the moment its frame is
// mapped until its result is ready to be attached: which frames go to the
// model (inference-interval, drop policy), preprocessing into batch slots of
// the shared Batcher, the in-order queue that holds frames and serialized
// events until their results are in, reuse of the latest result on frames
// that were not inferred, flushing, draining and the stream's statistics
// (every frame accounted for: common/stream_stats.h).
//
// Threads. The session has two halves, each used by one thread at a time
// and checked (common/thread_owner.h):
//  - the streaming half: begin_stream(), submit_frame(), push_event(),
//    drain(); the frames' per-stream counters and object memory, the
//    record pool, the streaming thread's preprocessor;
//  - the output half: pop(), finish(), discard(); the latest results kept
//    for reuse.
// start() and stop() run while neither half is in use (state changes, with
// the pads' streaming stopped). set_flushing(), resume(), stop_output(),
// accept_again(), submit_partial() and the stats getters may come from any
// thread: they touch only atomics, the queue, the batcher and the stats
// (under their own locks); what resume() forgets, each half forgets itself
// when it next sees a frame submitted after it.
// The owner's buffers and events travel as OwnedRef, so nothing here knows
// GStreamer. Mapping, record reuse and the preprocessing team's rules are
// written in queued_frame.h and team_preprocessors.h.
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
#include "common/stream_stats.h"
#include "common/thread_owner.h"
#include "preprocess/preprocess.h"
#include "stream/frame_inference.h"
#include "stream/motion_gate.h"
#include "stream/owned_ref.h"
#include "stream/per_stream.h"
#include "stream/queued_frame.h"
#include "stream/regions.h"
#include "stream/tile_gate.h"

namespace torchinfer {

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
  // inference-region=tiles (region_mode too): the regions are the frame's
  // tiles, the same on every frame of a size. A tile not inferred on a
  // frame carries its latest result (RegionFate::kReuse), and the motion
  // gate judges each tile on its own (stream/tile_gate.h).
  bool tiles = false;
  // Preprocessing runs on the model's inference threads just before each
  // batch's forward() (Batcher SlotPrepare) instead of on the streaming
  // thread: for when those threads take every core, where a streaming
  // thread preprocessing meanwhile would stall the whole team. Frames stay
  // mapped until their batch runs.
  bool preprocess_in_batch = false;
  // inference-gate=motion (stream/motion_gate.h): frames due by
  // inference_interval go to the model only when something moved; still
  // ones leave with the latest result, skipped for SkipReason::kStill.
  MotionGateOptions gate;
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
  kBusy,           // the model was busy (skip when busy): leaves without inference
  kDropped,        // live and the queue is full: the frame was discarded (counted)
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
  // Not inferred: why (what finish() counts it as).
  SkipReason skip = SkipReason::kFailed;
  std::string error;  // inference failed on this frame: the stream must stop
  std::chrono::steady_clock::time_point in_time;
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

  // Streaming thread: the frames that follow belong to the stream with this
  // id (the stream-start's); until the first call, to one unnamed stream.
  void begin_stream(const std::string& stream_id);
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
  // Counts a frame that left, nothing for an event (`valid` false: its inferred outputs held NaN
  // or infinity); returns a statistics snapshot when the stats interval has
  // passed since the last one.
  std::optional<StatsSnapshot> finish(const StreamOutput& out, bool valid = true);
  // Counts a popped frame the owner did not send on (downstream stopped,
  // an error) as dropped.
  void discard(const StreamOutput& out);

  // Flush start / pad deactivation: discards what is queued and unblocks
  // every waiting call.
  void set_flushing();
  // Flush stop / activation: accepts frames again, forgets the latest
  // results and the objects' memory (a seek starts afresh). Any thread:
  // each half forgets its own state at the first frame submitted after
  // this.
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
  using Record = FrameRecord;
  using Item = QueuedItem;
  using Queue = FrameQueue;

  struct CachedResult {
    SlotResult slot;
    std::uint64_t pts = kNoTimestamp;
    int frame_width = 0, frame_height = 0;  // of the frame it was computed on
  };
  // A region's result as the stream keeps it for later frames.
  static CachedResult cached(const SlotResult& slot, const FrameInference& rec);
  // Options::tiles: whether a later frame may carry a tile's result.
  bool tiles_carried() const;
  // The streaming half's state of one stream.
  struct InStream {
    std::string id;
    std::uint64_t frames = 0;  // submitted since start (inference-interval)
    // Frame number at which each tracked object was last sent to the model.
    ObjectMemory<std::uint64_t> submitted{300, kMaxRememberedObjects};
    MotionGate gate;            // inference-gate=motion
    TileGate tile_gate;         // the same, per tile (Options::tiles)
    bool tiles_judged = false;  // this frame's tiles have tile_gate decisions
  };
  // The output half's state of one stream.
  struct OutStream {
    std::shared_ptr<FrameRecord> last;  // latest full-frame result
    ObjectMemory<CachedResult> results{300, kMaxRememberedObjects};
    std::uint64_t frames = 0;  // region-mode frames out (the memory's clock)
  };

  // One batch slot a frame asks for: a region's crop or, width 0, the
  // whole frame.
  struct FillTarget {
    std::size_t slot = 0;  // in the record's slots
    Crop crop;
    std::optional<std::int64_t> object_id;
  };
  struct Filling;

  InStream& in_stream();
  // inference-gate=motion: reads the frame's luma and judges it (a frame
  // that cannot be mapped is inferred: the fill path reports it).
  GateDecision judge_motion(InStream& stream, FramePixels* pixels);
  // inference-gate=motion on a frame due: whether it goes to the model
  // (judge_motion, or judge_tiles for tiles).
  bool gate_frame(InStream& stream, FramePixels* pixels,
                  const std::vector<RegionOfInterest>* regions);
  // The same per tile (Options::tiles): true if any tile is due; the
  // decisions stay in stream.tile_gate for plan_regions.
  bool judge_tiles(InStream& stream, FramePixels* pixels,
                   const std::vector<RegionOfInterest>& tiles);
  OutStream& out_stream(std::uint64_t stream);
  // The region-mode frame popped last, whose outputs go once it is
  // finished or discarded (FrameRecord::release_outputs).
  std::shared_ptr<FrameRecord> leaving_;
  void let_leave();
  // Counts a frame that will never leave; the stats lock is not held.
  void count_dropped(std::uint64_t n);
  std::size_t frames_among(const std::vector<Item>& items) const;
  std::shared_ptr<Record> plan_frame(int width, int height, std::uint64_t pts, bool infer,
                                     InStream& stream, std::uint64_t frame_no,
                                     const std::vector<RegionOfInterest>* regions);
  // Plans the frame's regions into rec and the slots to fill into to_infer_.
  void plan_regions(FrameInference& rec, bool infer, InStream& stream, std::uint64_t frame_no,
                    const std::vector<RegionOfInterest>* regions);
  // The fill path (session_fill.cpp): to_infer_'s targets into batch slots.
  SubmitResult fill(const std::shared_ptr<Record>& rec, InStream& stream, std::uint64_t frame_no,
                    std::unique_ptr<FramePixels> pixels, bool skip_when_busy);
  bool map_frame(Filling& f);
  bool fill_target(Filling& f, std::size_t k, Batcher::Slot& slot, std::string* error);
  void give_up_slot(std::uint64_t seq, std::size_t slot);
  // Targets k.. of the frame get no result; with none committed (k == 0) the
  // frame leaves without inference, for `why`.
  void give_up_from(Filling& f, std::size_t k, SkipReason why);
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
  void resolve_regions(FrameInference& rec, OutStream& stream);
  void count_regions(const FrameInference& rec);

  std::shared_ptr<Queue> queue_;  // shared with batch callbacks that may outlive a run
  std::shared_ptr<Batcher> batcher_;
  SessionOptions opts_;
  std::atomic<bool> flushing_{true};
  std::atomic<int> output_code_{0};
  std::atomic<bool> skip_when_busy_{false};
  std::atomic<std::uint64_t> epoch_{0};  // resume() calls

  // The inference threads' preprocessors (preprocess_in_batch); shared with
  // batches that may outlive a run.
  std::shared_ptr<TeamPreprocessors> team_pre_;

  // The streaming half (in_owner_).
  ThreadOwner in_owner_{"StreamSession's streaming-thread half"};
  RecordPool records_;
  std::shared_ptr<const LoadedModel> pre_model_;
  std::unique_ptr<Preprocessor> pre_;
  PerStream<InStream> in_streams_;
  std::uint64_t in_current_ = 0;  // key of the stream frames belong to now
  std::uint64_t in_next_ = 1;     // key of the next new stream
  std::uint64_t in_epoch_ = 0;
  std::uint64_t forget_after_ = 300;
  std::vector<FillTarget> to_infer_;  // plan_frame's output, reused

  // The output half (out_owner_).
  ThreadOwner out_owner_{"StreamSession's output-thread half"};
  PerStream<OutStream> out_streams_;
  std::uint64_t out_epoch_ = 0;
  Clock::time_point last_stats_{};

  mutable std::mutex stats_mu_;  // guards stats_, last_inference_ms_, frames_inferred_
  StreamStats stats_;
  double last_inference_ms_ = 0;
  std::uint64_t frames_inferred_ = 0;
};

}  // namespace torchinfer
