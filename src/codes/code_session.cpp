#include "codes/code_session.h"

#include <algorithm>
#include <sstream>

namespace torchinfer {

std::vector<std::string> split_labels(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    const auto e = item.find_last_not_of(" \t");
    out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

CodeSession::CodeSession(const CodeSessionOptions& options)
    : options_(options), reader_(options.reader), tracks_(options.reread_interval) {}

bool CodeSession::wanted(const std::string& label) const {
  return options_.classes.empty() || std::find(options_.classes.begin(), options_.classes.end(),
                                               label) != options_.classes.end();
}

std::optional<RegionCode> CodeSession::region_code(const LumaView& frame, const CodeRegion& r) {
  if (r.track && !tracks_.due(*r.track, frame_)) {
    const TrackCode* t = tracks_.find(*r.track);
    return RegionCode{*t->code, *t->read_at};
  }
  const CodeRead read = reader_.read(frame, r.box);
  tracks_.record(r.track, frame_, read);
  if (!read.codes.empty()) return RegionCode{read.codes.front(), frame_};
  // A failed re-read: the track's code read before still names the part.
  if (r.track)
    if (const TrackCode* t = tracks_.find(*r.track); t && t->code)
      return RegionCode{*t->code, *t->read_at};
  return std::nullopt;
}

FrameCodes CodeSession::process(const LumaView& frame, const std::vector<CodeRegion>& regions) {
  ++frame_;
  FrameCodes out;
  out.regions.resize(regions.size());
  const bool whole = options_.full_frame == FullFrameMode::kAlways ||
                     (options_.full_frame == FullFrameMode::kNoRegion && regions.empty());
  if (whole) {
    const CodeRead read = reader_.read(frame, std::nullopt);
    tracks_.record(std::nullopt, frame_, read);
    out.full_frame = true;
    out.frame_codes = read.codes;
    return out;
  }
  for (std::size_t i = 0; i < regions.size(); ++i)
    if (wanted(regions[i].label)) out.regions[i] = region_code(frame, regions[i]);
  return out;
}

void CodeSession::unreadable_frame() {
  ++frame_;
  CodeRead r;
  r.status = CodeReadStatus::kRefused;
  tracks_.record(std::nullopt, frame_, r);
}

}  // namespace torchinfer
