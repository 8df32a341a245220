// How many lanes (copies of one model, each on its own cores, running
// batches at once: model_loader.h) `lanes=0` (automatic, the default) picks.
// Pure: the caller counts the cores.
//
// One lane's forward() at the small batches that many live cameras make
// splits poorly over its team (a barrier per layer), so cores idle while
// frames are skipped; more lanes fill them but give each frame a smaller
// team, which slows a lone camera on a big machine. The rule takes lanes of
// about sqrt(cores) threads, as many as fit: 2 cores -> 2 lanes of 1
// thread, 4 -> 2 x 2, 8 -> 4 x 2, 16 -> 4 x 4, 64 -> 8 x 8. Figures and
// reasons: docs/tuning.md, "lanes=0 (automatic)".
#pragma once

namespace torchinfer {

struct LanesInput {
  int physical_cores = 1;  // of `cores` if set, else of the process's affinity
  int threads = 0;         // the `threads` setting: 0 = automatic (one per core)
  int lanes = 0;           // the `lanes` setting: 0 = automatic, else kept
};

struct LanesPlan {
  int lanes = 1;
  // The smallest lane's threads (lanes share the threads out, differing by
  // one at most).
  int threads_per_lane = 1;
};

// Never more lanes than physical cores or than threads (each lane needs a
// core and a thread of its own), never fewer than 1. A lane count set by
// hand is returned as it is (the loader checks it).
LanesPlan choose_lanes(const LanesInput& in);

}  // namespace torchinfer
