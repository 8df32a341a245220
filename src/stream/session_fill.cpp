// StreamSession's fill path: a frame's targets (one per inferred region; a
// full frame is one target without a crop) into batch slots, each through
// acquire -> map (first slot) -> preprocess or defer -> commit, with one set
// of error paths for both modes.
#include <algorithm>
#include <exception>
#include <utility>

#include "stream/stream_session.h"

namespace torchinfer {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

// One frame's fill in progress: who holds the pixels' mapping, so that every
// way out unmaps before the frame can leave.
struct StreamSession::Filling {
  std::shared_ptr<Record> rec;
  std::unique_ptr<FramePixels> owned;  // until the record takes the mapping over
  std::size_t n = 0;                   // targets
  FrameView view;
  bool mapped = false;  // by this thread
  bool held = false;    // deferred: the record holds the mapping for the n slots

  // Targets k.. will not be committed: their share of the mapping goes.
  void let_go(std::size_t k) {
    if (mapped) owned->unmap();
    mapped = false;
    if (held) rec->release(static_cast<int>(n - k));
  }
};

void StreamSession::give_up_slot(std::uint64_t seq, std::size_t slot) {
  queue_->complete(seq, [slot](Item& it) {
    it.rec->slots[slot].delivered = false;
    return --it.pending == 0;
  });
}

// A frame with a slot committed is inferred; the others leave for `why`.
void StreamSession::give_up_from(Filling& f, std::size_t k, SkipReason why) {
  f.let_go(k);
  // Written before the entry completes: the output thread reads it after.
  if (k == 0) f.rec->skip = why;
  for (std::size_t j = k; j < f.n; ++j) give_up_slot(f.rec->seq, to_infer_[j].slot);
}

void StreamSession::prepare(const Batcher::Slot& slot) {
  if (slot.model != pre_model_) {
    pre_ = std::make_unique<Preprocessor>(opts_.preprocess_for(slot.model->config));
    pre_model_ = slot.model;
  }
}

// Whole frame (crop = nullptr) or one region into the slot, for the slot's
// model (a reload may have changed its input size).
FrameTransform StreamSession::preprocess_into(const Batcher::Slot& slot, const FrameView& view,
                                              const Crop* crop, double& ms) {
  prepare(slot);
  const auto t0 = Clock::now();
  FrameTransform tf;
  if (slot.model->config.input_uint8) {
    auto* dst = static_cast<std::uint8_t*>(slot.data);
    tf = crop ? pre_->run(view, *crop, dst) : pre_->run(view, dst);
  } else {
    auto* dst = static_cast<float*>(slot.data);
    tf = crop ? pre_->run(view, *crop, dst) : pre_->run(view, dst);
  }
  ms = ms_since(t0);
  return tf;
}

// Maps the frame for its first slot; deferred, the record takes the
// mapping over for all n slots.
bool StreamSession::map_frame(Filling& f) {
  if (!(f.mapped = f.owned->map(&f.view))) return false;
  if (opts_.preprocess_in_batch) {
    f.mapped = false;
    f.rec->pixels = std::move(f.owned);
    f.rec->view = f.view;
    f.rec->crops.assign(f.rec->slots.size(), Crop{});
    f.rec->holds = static_cast<int>(f.n);
    f.held = true;
  }
  return true;
}

// The target into the slot, now or (preprocess_in_batch) when its batch
// runs; false, with why, when the frame cannot be prepared (the slot is
// then not committed).
bool StreamSession::fill_target(Filling& f, std::size_t k, Batcher::Slot& slot,
                                std::string* error) {
  const FillTarget& t = to_infer_[k];
  const Crop* crop = t.crop.width > 0 ? &t.crop : nullptr;
  SlotResult& s = f.rec->slots[t.slot];
  try {
    prepare(slot);
    if (opts_.preprocess_in_batch) {
      pre_->check(f.view, crop);  // a frame it would refuse fails here, on its own thread
    } else {
      s.transform = preprocess_into(slot, f.view, crop, s.preprocess_ms);
      f.rec->saturation.add(pre_->saturation());
    }
  } catch (const std::exception& e) {
    *error = e.what();
    return false;
  }
  if (opts_.preprocess_in_batch) {
    f.rec->crops[t.slot] = t.crop;
    commit_deferred(slot, f.rec, t.slot);
    return true;
  }
  // The frame may leave (and be written downstream) once its last slot is
  // committed: unmapped before that.
  if (k + 1 == f.n) f.let_go(k + 1);
  commit_slot(slot, f.rec, t.slot);
  return true;
}

SubmitResult StreamSession::fill(const std::shared_ptr<Record>& rec, InStream& stream,
                                 std::uint64_t frame_no, std::unique_ptr<FramePixels> pixels,
                                 bool skip_when_busy) {
  Filling f;
  f.rec = rec;
  f.owned = std::move(pixels);
  f.n = to_infer_.size();
  for (std::size_t k = 0; k < f.n; ++k) {
    // skip_when_busy skips whole frames: once a frame has its first slot,
    // its other regions wait for theirs (bounded by its region count).
    Batcher::Slot slot = batcher_->acquire(!skip_when_busy || k > 0, flushing_);
    if (!slot) {
      if (flushing_) {
        f.let_go(k);
        return {SubmitStatus::kFlushing, {}};
      }
      give_up_from(f, k, SkipReason::kBusy);
      return {SubmitStatus::kBusy, {}};
    }
    if (k == 0 && !map_frame(f)) {
      batcher_->commit(slot, nullptr);
      give_up_from(f, k, SkipReason::kFailed);
      return {SubmitStatus::kMapFailed, {}};
    }
    std::string error;
    if (!fill_target(f, k, slot, &error)) {
      batcher_->commit(slot, nullptr);
      give_up_from(f, k, SkipReason::kFailed);
      return {SubmitStatus::kPrepareFailed, std::move(error)};
    }
    if (const auto& id = to_infer_[k].object_id) stream.submitted.put(*id, frame_no, frame_no);
  }
  return {SubmitStatus::kQueued, {}};
}

// The result lands in its frame's slot; the frame leaves once its last slot
// has delivered. The slot's transform and preprocessing time were written
// before the commit, which orders them before the output thread's read.
void StreamSession::commit_slot(Batcher::Slot& slot, const std::shared_ptr<Record>& rec,
                                std::size_t index) {
  Record* r = rec.get();
  batcher_->commit(
      slot,
      [r, index](FrameResult&& res) {
        r->queue->complete(r->seq, [&](Item& it) {
          SlotResult& s = it.rec->slots[index];
          s.result = std::move(res);
          s.delivered = true;
          return --it.pending == 0;
        });
      },
      nullptr, rec);
}

void StreamSession::commit_deferred(Batcher::Slot& slot, const std::shared_ptr<Record>& rec,
                                    std::size_t index) {
  Record* r = rec.get();
  // The batch's worker writes the transform (band 0) before forward() and
  // the result after it: the output thread reads both once the slot
  // completes.
  auto prepare = [r, index](void* dst, const LoadedModel& model, int worker, int band,
                            int bands) -> std::string {
    std::unique_ptr<Preprocessor> spare;
    Preprocessor& pre = r->team->get(model, worker, spare);
    const Crop& crop = r->crops[index];
    const FrameTransform tf =
        pre.run_band(r->view, crop.width > 0 ? &crop : nullptr, dst, band, bands);
    if (band == 0) r->slots[index].transform = tf;
    r->add_band_saturation(pre.saturation());
    return {};
  };
  batcher_->commit(
      slot,
      [r, index](FrameResult&& res) {
        r->release(1);  // unmapped before the frame can leave
        r->queue->complete(r->seq, [&](Item& it) {
          // Under the queue's lock: the frame's other slots (other
          // batches) may complete at the same time. This slot's bands have
          // all added theirs; the last slot to complete writes the total.
          it.rec->saturation = {r->band_clamped.load(), r->band_peak.load()};
          SlotResult& s = it.rec->slots[index];
          s.preprocess_ms = res.prepare_ms;
          s.result = std::move(res);
          s.delivered = true;
          return --it.pending == 0;
        });
      },
      std::move(prepare), rec);
}

}  // namespace torchinfer
