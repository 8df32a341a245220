// Frames a GigE Vision / USB3 Vision camera sent that never reached the
// analysis, told from the camera's own frame (block) ids. Aravis hands every
// frame it started to receive as a buffer with a status; a frame of which
// not even a packet arrived leaves a gap in the ids. So:
//   lost = incomplete (a buffer whose status is not success: missing
//          packets, timeout, ...) + missing (ids skipped between complete
//          frames that no incomplete buffer accounts for).
// GigE Vision 1.x block ids are 16 bits, count 1..65535 and wrap to 1 (0 is
// never used); GigE Vision 2 and USB3 Vision ids are 64 bits. A new
// acquisition (a reconnect) starts the ids afresh: restart() says so.
// Not thread-safe: the acquisition thread owns it; figures() is copied out
// under the glue's lock.
#pragma once

#include <cstdint>
#include <optional>

namespace torchinfer::server {

struct FrameLossFigures {
  std::uint64_t received = 0;    // complete frames handed to the analysis
  std::uint64_t incomplete = 0;  // buffers that arrived with missing data
  std::uint64_t missing = 0;     // ids that never arrived at all
  std::uint64_t lost() const { return incomplete + missing; }
};

class FrameLossCounter {
 public:
  // One buffer of the stream, in arrival order.
  void on_buffer(std::uint64_t frame_id, bool complete);
  // The next buffer starts a new acquisition: no gap is counted before it.
  void restart() {
    last_.reset();
    incomplete_since_last_ = 0;
  }
  const FrameLossFigures& figures() const { return f_; }

 private:
  // Ids between `last` and `id` (exclusive), 16-bit wrap included; 0 for a
  // repeated or earlier id (a camera that restarted its count).
  static std::uint64_t skipped(std::uint64_t last, std::uint64_t id);

  FrameLossFigures f_;
  std::optional<std::uint64_t> last_;  // the last complete frame's id
  std::uint64_t incomplete_since_last_ = 0;
};

}  // namespace torchinfer::server
