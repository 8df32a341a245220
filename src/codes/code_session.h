// One stream's code reading, frame by frame: which of the frame's regions
// are read (their class, their track's memory), whether the whole frame is
// read, and what each region carries (the code read now, or its track's
// code read before). No GStreamer types: the owner lists the frame's
// regions in its own order and gets one answer per region, in that order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "codes/code_reader.h"
#include "codes/code_workers.h"
#include "codes/track_codes.h"
#include "codes/view_quality.h"

namespace torchinfer {

struct CodeRegion {
  CodeBox box;  // frame pixels
  std::string label;
  std::optional<std::int64_t> track;  // the tracker's object id, if any
};

enum class FullFrameMode { kNever, kNoRegion, kAlways };

struct CodeSessionOptions {
  CodeOptions reader;
  std::vector<std::string> classes;   // labels whose regions are read; empty = all
  std::uint64_t reread_interval = 0;  // frames; 0 = never re-read
  FullFrameMode full_frame = FullFrameMode::kNoRegion;
  // 0: read on the caller's thread. Else reads run on this many threads
  // (code_workers.h) and process() waits for them at most budget_ms.
  unsigned workers = 0;
  double budget_ms = 0;
  std::size_t max_pending = 64;  // reads queued or running at once
};

struct RegionCode {
  CodeResult code;
  std::uint64_t frame = 0;  // when it was read (the session's frame count, from 1)
};

struct FrameCodes {
  std::vector<std::optional<RegionCode>> regions;  // one per region given
  bool full_frame = false;                         // the whole frame was read
  std::vector<CodeResult> frame_codes;             // what it gave
};

// "a,b , c" -> {"a", "b", "c"}; empty items dropped.
std::vector<std::string> split_labels(const std::string& list);

class CodeSession {
 public:
  // Throws std::invalid_argument for unknown formats. `read` replaces how
  // the workers read a job (tests hold a read back with it).
  explicit CodeSession(const CodeSessionOptions& options, CodeWorkers::Read read = nullptr);
  ~CodeSession();

  // Reads `frame` (the next frame of the stream) inside `regions`.
  FrameCodes process(const LumaView& frame, const std::vector<CodeRegion>& regions);

  // A frame that could not be looked at (its pixels unreadable): counted
  // as one failed read.
  void unreadable_frame();

  const CodeTotals& totals() const { return tracks_.totals(); }
  std::uint64_t frames() const { return frame_; }

 private:
  bool wanted(const std::string& label) const;
  std::optional<RegionCode> region_code(const LumaView& frame, const CodeRegion& r);
  // Reading on workers.
  struct Pending {
    std::optional<std::int64_t> track;
    std::uint64_t frame = 0;
    std::optional<std::size_t> region;  // index on its frame; none = the whole frame
  };
  FrameCodes process_on_workers(const LumaView& frame, const std::vector<CodeRegion>& regions);
  std::vector<DueView> due_views(const LumaView& frame, const std::vector<CodeRegion>& regions,
                                 FrameCodes& out);
  std::optional<std::uint64_t> submit(const LumaView& frame, const std::optional<CodeBox>& region,
                                      Pending p);
  void apply(const CodeJobDone& d, FrameCodes& out);
  std::optional<RegionCode> known(std::int64_t track) const;

  CodeSessionOptions options_;
  CodeReader reader_;
  TrackCodes tracks_;
  std::uint64_t frame_ = 0;
  std::unique_ptr<CodeWorkers> workers_;
  std::unordered_map<std::uint64_t, Pending> pending_;  // by job id
  std::unordered_set<std::int64_t> in_flight_;          // tracks with a read pending
  std::uint64_t next_job_ = 0;
};

}  // namespace torchinfer
