// The belt's position in encoder counts as a function of steady-clock time,
// so that a part seen in a frame can be followed to the ejector whatever the
// belt's speed does meanwhile (docs/line-io.md). Two sources: the samples of
// an encoder the PLC publishes, or, without one, a set speed. Thread-safe:
// the output's thread adds samples while the caller schedules parts.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>

namespace torchinfer {

// A 16- or 32-bit counter register made into a 64-bit count that does not
// wrap. Assumes the belt moves less than half the counter's range between
// two reads (at 16 bits and a 5 ms poll: 6.5 million counts per second), so
// a step back smaller than that is a step back, not a wrap.
class EncoderUnwrap {
 public:
  explicit EncoderUnwrap(int bits);  // 16 or 32; anything else throws
  std::int64_t update(std::uint32_t raw);

 private:
  std::uint64_t mask_;
  bool first_ = true;
  std::uint32_t last_ = 0;
  std::int64_t total_ = 0;
};

class BeltClock {
 public:
  // Encoder mode: positions come from add_sample(). speed_window_ns: how far
  // back the speed is measured (long enough that one count of jitter is
  // small against the counts it spans).
  explicit BeltClock(std::int64_t speed_window_ns = 50'000'000);
  // Set-speed mode: position = counts_per_s * (t - t0).
  static BeltClock from_speed(double counts_per_s, std::int64_t t0_ns);

  BeltClock(const BeltClock& other);
  BeltClock& operator=(const BeltClock&) = delete;

  // A reading taken at t_ns (the middle of the request's round trip).
  // Samples older than the last one are refused (false).
  bool add_sample(std::int64_t t_ns, std::int64_t count);
  // False until the first sample (encoder mode).
  bool ready() const;
  // Interpolated between the two samples around t, extrapolated at the
  // current speed outside the history.
  double position_at(std::int64_t t_ns) const;
  // Counts per second over the speed window (longer while the belt moves
  // fewer than 16 counts in it, up to 2 s); 0 before two samples.
  double speed() const;
  // When the belt is predicted to reach `count`, at the current speed;
  // `now_ns` when it is already there, INT64_MAX when the belt stands.
  std::int64_t time_at(double count, std::int64_t now_ns) const;
  // Time of the last sample (INT64_MIN before any; t0 in set-speed mode).
  std::int64_t last_sample_ns() const;
  bool from_encoder() const { return !fixed_; }
  // Forgets the readings (encoder mode): the counter restarted.
  void restart();

 private:
  struct Sample {
    std::int64_t t_ns;
    std::int64_t count;
  };
  double speed_locked() const;
  double position_locked(std::int64_t t_ns) const;

  mutable std::mutex mu_;
  std::deque<Sample> history_;
  std::int64_t window_ns_;
  bool fixed_ = false;
  double fixed_speed_ = 0;
};

}  // namespace torchinfer
