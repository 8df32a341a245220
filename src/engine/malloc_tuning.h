// glibc malloc settings the plugin loader sets for the process: freed
// memory is kept for the next frame instead of going back to the system.
// Header-only and free of GStreamer and libtorch, like wait_policy.h.
//
// Why: a forward() allocates its activations (megabytes) and frees them
// after the call, and frames come and go as buffers of a few megabytes.
// glibc serves blocks above its mmap threshold with fresh mappings and gives
// freed memory above its trim threshold back to the system, so the next
// frame faults the same amount in again and the kernel zeroes every page
// (clear_page). Both thresholds start low (128 KiB) and only rise by
// themselves after a large mapped block is freed. On the gate bench
// (docs/tuning.md, "glibc malloc") a gated camera spent 0.3-0.4 ms a frame
// on this, 13-15 % of its CPU; with the thresholds below, none of it.
// What the user set (GLIBC_TUNABLES, MALLOC_*_) is always kept, and
// TORCHINFER_MALLOC=system keeps glibc's own behaviour.
#pragma once

#include <cstring>
#include <string>

namespace torchinfer {

// Blocks up to this size come from the heap, not a mapping of their own
// (a 1080p frame, YUY2 4 MB, is one; a 12 MP RGB frame, 36 MB, is not).
constexpr int kMallocMmapThreshold = 8 << 20;
// Freed memory at the heap's top is given back only past this much.
constexpr int kMallocTrimThreshold = 256 << 20;

struct MallocChoice {
  bool apply = false;
  std::string reason;  // for the loader's log
};

// env(name) returns the environment variable or nullptr.
template <class Env>
MallocChoice choose_malloc_tuning(Env env) {
  if (const char* v = env("TORCHINFER_MALLOC"); v && std::strcmp(v, "system") == 0)
    return {false, "glibc's own (TORCHINFER_MALLOC=system)"};
  for (const char* name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"})
    if (env(name)) return {false, std::string("as the user set it (") + name + ")"};
  if (const char* t = env("GLIBC_TUNABLES"); t && std::strstr(t, "glibc.malloc."))
    return {false, "as the user set it (GLIBC_TUNABLES)"};
  return {true, "freed memory kept: mmap threshold " + std::to_string(kMallocMmapThreshold >> 20) +
                    " MiB, trim threshold " + std::to_string(kMallocTrimThreshold >> 20) + " MiB"};
}

}  // namespace torchinfer
