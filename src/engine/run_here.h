// RunInferenceHere: a scope in which Engine::run() runs forward() on the
// calling thread (engine.h explains why). Header-only, so that the batcher,
// which opens the scope on its worker, needs no libtorch to build or test.
#pragma once

#include <cstdint>

#include "common/error.h"

namespace torchinfer {

namespace run_here_detail {
// Whether this thread runs forward() itself, and which engine (by id, never
// reused) set up this thread's OpenMP team last.
inline thread_local bool active = false;
inline thread_local std::uint64_t team_engine = 0;
}  // namespace run_here_detail

// While alive, Engine::run() calls made by the thread that created it run
// forward() on that thread rather than on the engine's own: one hand-off
// and two wake-ups less per batch. On its first run() for an engine (and
// again after another engine ran here), the thread sets its OpenMP thread
// count and pins itself and its team to the engine's `cores`, as the
// engine's own thread did at load; EngineInfo::thread_ids still names the
// engine's own team. Loading, warm-up, first_touch() and destruction stay
// on the engine's thread. Not nestable; one per thread.
class RunInferenceHere {
 public:
  RunInferenceHere() {
    if (run_here_detail::active)
      throw Error(ErrorKind::kInvalidArgument, "RunInferenceHere is not nestable");
    run_here_detail::active = true;
  }
  ~RunInferenceHere() {
    run_here_detail::active = false;
    run_here_detail::team_engine = 0;
  }
  RunInferenceHere(const RunInferenceHere&) = delete;
  RunInferenceHere& operator=(const RunInferenceHere&) = delete;
  // True on a thread inside such a scope.
  static bool active() { return run_here_detail::active; }
};

}  // namespace torchinfer
