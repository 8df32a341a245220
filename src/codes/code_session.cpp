#include "codes/code_session.h"

#include <algorithm>
#include <chrono>
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

CodeSession::CodeSession(const CodeSessionOptions& options, CodeWorkers::Read read)
    : options_(options), reader_(options.reader), tracks_(options.reread_interval) {
  if (options_.workers == 0) return;
  if (!read) read = [this](const CodeJob& j) { return read_job(reader_, j); };
  workers_ = std::make_unique<CodeWorkers>(options_.workers, options_.max_pending, std::move(read));
}

// workers_ goes first (members end in reverse order): its threads read
// with reader_.
CodeSession::~CodeSession() = default;

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
  // An invalid view is refused on this thread, like without workers.
  if (workers_ && check_luma_view(frame).empty()) return process_on_workers(frame, regions);
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

std::optional<RegionCode> CodeSession::known(std::int64_t track) const {
  const TrackCode* t = tracks_.find(track);
  if (t && t->code) return RegionCode{*t->code, *t->read_at};
  return std::nullopt;
}

std::optional<std::uint64_t> CodeSession::submit(const LumaView& frame,
                                                 const std::optional<CodeBox>& region, Pending p) {
  const std::optional<CodeBox> area =
      region ? code_search_area(*region, options_.reader.padding, frame.width, frame.height)
             : CodeBox{0, 0, double(frame.width), double(frame.height)};
  if (!area) {  // nothing of it inside the frame: refused here, as without workers
    CodeRead refused;
    refused.status = CodeReadStatus::kRefused;
    tracks_.record(p.track, frame_, refused);
    return std::nullopt;
  }
  const std::uint64_t id = ++next_job_;
  if (!workers_->submit(copy_area(frame, *area, id))) {
    tracks_.count_deferred();
    return std::nullopt;
  }
  if (p.track) in_flight_.insert(*p.track);
  pending_.emplace(id, p);
  return id;
}

// A finished read: counted and remembered for its track; put on `out` when
// it belongs to the frame being processed, else it is late.
void CodeSession::apply(const CodeJobDone& d, FrameCodes& out) {
  const auto it = pending_.find(d.id);
  if (it == pending_.end()) return;
  const Pending p = it->second;
  pending_.erase(it);
  if (p.track) in_flight_.erase(*p.track);
  tracks_.record(p.track, p.frame, d.read);
  if (p.frame != frame_) {
    tracks_.count_late();
    return;
  }
  if (!p.region) {
    out.full_frame = true;
    out.frame_codes = d.read.codes;
  } else if (!d.read.codes.empty()) {
    out.regions[*p.region] = RegionCode{d.read.codes.front(), p.frame};
  } else if (p.track) {
    out.regions[*p.region] = known(*p.track);
  }
}

// The views of this frame to submit, best first (view_quality.h); the
// others get their track's known code now.
std::vector<DueView> CodeSession::due_views(const LumaView& frame,
                                            const std::vector<CodeRegion>& regions,
                                            FrameCodes& out) {
  std::vector<DueView> due;
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const CodeRegion& r = regions[i];
    if (!wanted(r.label)) continue;
    if (r.track && in_flight_.count(*r.track)) {
      tracks_.count_deferred();
    } else if (!r.track || tracks_.due(*r.track, frame_)) {
      const TrackCode* t = r.track ? tracks_.find(*r.track) : nullptr;
      const auto area = code_search_area(r.box, options_.reader.padding, frame.width, frame.height);
      due.push_back({i, !t || !t->code, area ? view_quality(frame, *area) : 0.0});
      continue;
    }
    if (r.track) out.regions[i] = known(*r.track);
  }
  order_best_first(due);
  return due;
}

FrameCodes CodeSession::process_on_workers(const LumaView& frame,
                                           const std::vector<CodeRegion>& regions) {
  const auto start = CodeWorkers::Clock::now();
  FrameCodes out;
  out.regions.resize(regions.size());
  for (const CodeJobDone& d : workers_->collect({}, start)) apply(d, out);  // earlier frames'
  std::vector<std::uint64_t> ids;
  const bool whole = options_.full_frame == FullFrameMode::kAlways ||
                     (options_.full_frame == FullFrameMode::kNoRegion && regions.empty());
  if (whole) {
    if (auto id = submit(frame, std::nullopt, {std::nullopt, frame_, std::nullopt}))
      ids.push_back(*id);
  } else {
    // Best first: the pool's slots and the budget go to the views most
    // likely to read; a view the full pool refuses is deferred (counted).
    for (const DueView& v : due_views(frame, regions, out)) {
      const CodeRegion& r = regions[v.region];
      if (auto id = submit(frame, r.box, {r.track, frame_, v.region}))
        ids.push_back(*id);
      else if (r.track)
        out.regions[v.region] = known(*r.track);
    }
  }
  const auto budget = std::chrono::duration<double, std::milli>(options_.budget_ms);
  const auto deadline = start + std::chrono::duration_cast<CodeWorkers::Clock::duration>(budget);
  for (const CodeJobDone& d : workers_->collect(ids, deadline)) apply(d, out);
  return out;
}

void CodeSession::unreadable_frame() {
  ++frame_;
  CodeRead r;
  r.status = CodeReadStatus::kRefused;
  tracks_.record(std::nullopt, frame_, r);
}

}  // namespace torchinfer
