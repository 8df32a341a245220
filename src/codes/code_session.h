// One stream's code reading, frame by frame: which of the frame's regions
// are read (their class, their track's memory), whether the whole frame is
// read, and what each region carries (the code read now, or its track's
// code read before). No GStreamer types: the owner lists the frame's
// regions in its own order and gets one answer per region, in that order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codes/code_reader.h"
#include "codes/track_codes.h"

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
  // Throws std::invalid_argument for unknown formats.
  explicit CodeSession(const CodeSessionOptions& options);

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

  CodeSessionOptions options_;
  CodeReader reader_;
  TrackCodes tracks_;
  std::uint64_t frame_ = 0;
};

}  // namespace torchinfer
