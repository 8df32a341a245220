// StreamSession's region-of-interest mode: which of a frame's regions go to
// the model (plan_regions, streaming thread), the reuse of a tracked
// object's latest result and the regions' statistics (output thread).
#include <algorithm>

#include "engine/engine.h"
#include "stream/stream_session.h"

namespace torchinfer {
// With its own frame's outputs only, so that a kept result from a batch of
// many regions (tiles, objects) does not keep the whole batch's outputs.
// Only then can a later frame carry a tile's result: a frame not due, a
// tile the gate judged still, a frame skipped busy. Otherwise every tile is
// inferred on every frame, and keeping (copying) its result is wasted work.
bool StreamSession::tiles_carried() const {
  return opts_.inference_interval > 1 || opts_.gate.enabled || skip_when_busy_;
}

StreamSession::CachedResult StreamSession::cached(const SlotResult& slot,
                                                  const FrameInference& rec) {
  CachedResult c{slot, rec.pts, rec.frame_width, rec.frame_height};
  const FrameResult& r = slot.result;
  if (r.output && r.output->batch() > 1) {
    c.slot.result.output = r.output->frame_copy(r.index);
    c.slot.result.index = 0;
  }
  return c;
}

void StreamSession::plan_regions(FrameInference& rec, bool infer, InStream& stream,
                                 std::uint64_t frame_no,
                                 const std::vector<RegionOfInterest>* regions) {
  rec.region_mode = true;
  if (!regions) return;
  const int every = std::max(1, opts_.regions.reclassify_interval);
  rec.regions.reserve(regions->size());
  const std::vector<GateDecision>* gate =
      stream.tiles_judged ? &stream.tile_gate.decisions() : nullptr;
  for (std::size_t i = 0; i < regions->size(); ++i) {
    const RegionOfInterest& roi = (*regions)[i];
    RegionResult r = plan_region(roi, opts_.regions, rec.frame_width, rec.frame_height);
    if (opts_.tiles) {
      // A tile is remembered by its index (roi_id); reclassify-interval is
      // for tracked objects, not tiles.
      r.object_id = roi.roi_id;
      r.still = gate && i < gate->size() && (*gate)[i] == GateDecision::kStill;
      if (r.fate == RegionFate::kInferred && (!infer || r.still)) r.fate = RegionFate::kReuse;
    } else if (r.fate == RegionFate::kInferred) {
      if (!infer) {
        r.fate = r.object_id ? RegionFate::kReuse : RegionFate::kNotInferred;
      } else if (r.object_id) {
        const std::uint64_t* last = stream.submitted.touch(*r.object_id, frame_no);
        if (last && frame_no - *last < static_cast<std::uint64_t>(every))
          r.fate = RegionFate::kReuse;
      }
    }
    if (r.fate == RegionFate::kInferred) {
      r.slot = static_cast<int>(rec.slots.size());
      rec.slots.emplace_back();
      to_infer_.push_back({static_cast<std::size_t>(r.slot), r.box, r.object_id});
    }
    rec.regions.push_back(r);
  }
  stream.submitted.forget_stale(frame_no);
}

void StreamSession::resolve_regions(FrameInference& rec, OutStream& stream) {
  const std::uint64_t frame = ++stream.frames;
  for (RegionResult& r : rec.regions) {
    if (r.fate == RegionFate::kInferred && r.slot >= 0 && rec.slots[r.slot].delivered) {
      r.result_pts = rec.pts;
      if (r.object_id && (!opts_.tiles || tiles_carried()))
        stream.results.put(*r.object_id, frame, cached(rec.slots[r.slot], rec));
      continue;
    }
    if (!r.object_id) continue;
    CachedResult* c = stream.results.touch(*r.object_id, frame);
    // A region due for reuse, or one whose batch slot was dropped (busy),
    // from a frame of this size: after a new size a tile of the same index
    // covers other pixels, and its boxes would land elsewhere.
    const bool same_size =
        c && c->frame_width == rec.frame_width && c->frame_height == rec.frame_height;
    if (same_size && (r.fate == RegionFate::kReuse || r.fate == RegionFate::kInferred)) {
      r.slot = static_cast<int>(rec.slots.size());
      rec.slots.push_back(c->slot);
      r.reused = true;
      r.result_pts = c->pts;
    }
  }
  stream.results.forget_stale(frame);
}

void StreamSession::count_regions(const FrameInference& rec) {
  std::uint64_t inferred = 0, reused = 0, filtered = 0, skipped = 0, dropped = 0;
  bool first = true;
  for (const RegionResult& r : rec.regions) {
    switch (r.fate) {
      case RegionFate::kFiltered:
        ++filtered;
        break;
      case RegionFate::kOutside:
      case RegionFate::kTooSmall:
        ++skipped;
        break;
      case RegionFate::kInferred:
      case RegionFate::kReuse:
      case RegionFate::kNotInferred:
        if (r.reused) {
          ++reused;
        } else if (r.fate == RegionFate::kInferred) {
          const SlotResult& s = rec.slots[r.slot];
          if (!s.delivered) {
            ++dropped;
            break;
          }
          ++inferred;
          // Batch figures once per frame, like a full-frame frame's.
          if (first) {
            stats_.batch(s.result.batch_fill, s.result.queue_ms, s.preprocess_ms,
                         s.result.inference_ms);
            first = false;
          }
          last_inference_ms_ = s.result.inference_ms;
        }
        break;
    }
  }
  stats_.regions(inferred, reused, filtered, skipped, dropped);
}

}  // namespace torchinfer
