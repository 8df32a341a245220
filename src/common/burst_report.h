// Turns a per-frame good/bad signal into one report per burst of bad
// frames: a model that emits NaN for a few seconds must not flood the bus
// with a warning per frame, nor go quiet after the first one for ever.
#pragma once

#include <cstdint>

namespace torchinfer {

class BurstReport {
 public:
  // Records one frame. True when it is a bad frame right after a good one
  // (or the first frame): the moment to report, once per burst.
  bool record(bool bad) {
    if (!bad) {
      if (current_ > 0) previous_ = current_;
      current_ = 0;
      return false;
    }
    ++total_bad_;
    if (current_++ > 0) return false;
    ++bursts_;
    return true;
  }

  std::uint64_t current_burst() const { return current_; }    // bad frames in the burst going on
  std::uint64_t previous_burst() const { return previous_; }  // the last finished burst, 0 if none
  std::uint64_t bursts() const { return bursts_; }            // started so far
  std::uint64_t total_bad() const { return total_bad_; }

 private:
  std::uint64_t current_ = 0, previous_ = 0, bursts_ = 0, total_bad_ = 0;
};

}  // namespace torchinfer
