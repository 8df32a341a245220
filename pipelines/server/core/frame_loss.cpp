#include "server/core/frame_loss.h"

namespace torchinfer::server {

namespace {
constexpr std::uint64_t kMax16 = 65535;  // GigE Vision 1.x block ids: 1..65535
}

std::uint64_t FrameLossCounter::skipped(std::uint64_t last, std::uint64_t id) {
  if (last > kMax16 || id > kMax16) return id > last ? id - last - 1 : 0;
  // 16-bit ids go round: 65534, 65535, 1, 2 (0 is never used, so no gap).
  // A step forward of more than half the range is a step back (a camera
  // that restarted its count, a late buffer), not 30000 lost frames: the
  // stream would have been declared lost long before.
  if (id == 0 || id == last) return 0;
  const std::uint64_t forward = id > last ? id - last : (kMax16 - last) + id;
  return forward > kMax16 / 2 ? 0 : forward - 1;
}

// An incomplete buffer's id is not trusted: Aravis sets it from the
// frame's leader packet, so a frame whose leader was lost carries the id of
// the buffer's previous frame. Between two complete frames, the ids in
// between are the incomplete buffers that came meanwhile, and the rest
// never arrived.
void FrameLossCounter::on_buffer(std::uint64_t frame_id, bool complete) {
  if (!complete) {
    f_.incomplete++;
    incomplete_since_last_++;
    return;
  }
  if (last_) {
    const std::uint64_t between = skipped(*last_, frame_id);
    f_.missing += between > incomplete_since_last_ ? between - incomplete_since_last_ : 0;
  }
  incomplete_since_last_ = 0;
  last_ = frame_id;
  f_.received++;
}

}  // namespace torchinfer::server
