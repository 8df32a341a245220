#include "lineio/belt_clock.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace torchinfer {

namespace {
// 20 s of samples at a 5 ms poll: covers any frame a decision still refers
// to (decisions come within a second or two of their frame).
constexpr std::size_t kHistory = 4096;
}  // namespace

EncoderUnwrap::EncoderUnwrap(int bits) {
  if (bits != 16 && bits != 32)
    throw std::invalid_argument("encoder width must be 16 or 32 bits, not " + std::to_string(bits));
  mask_ = bits == 16 ? 0xffffu : 0xffffffffu;
}

std::int64_t EncoderUnwrap::update(std::uint32_t raw) {
  raw = static_cast<std::uint32_t>(raw & mask_);
  if (first_) {
    first_ = false;
    last_ = raw;
    total_ = raw;
    return total_;
  }
  const std::uint64_t range = mask_ + 1;
  std::int64_t step = static_cast<std::int64_t>((static_cast<std::uint64_t>(raw) - last_) & mask_);
  if (static_cast<std::uint64_t>(step) >= range / 2) step -= static_cast<std::int64_t>(range);
  last_ = raw;
  total_ += step;
  return total_;
}

BeltClock::BeltClock(std::int64_t speed_window_ns) : window_ns_(speed_window_ns) {}

BeltClock BeltClock::from_speed(double counts_per_s, std::int64_t t0_ns) {
  BeltClock c;
  c.fixed_ = true;
  c.fixed_speed_ = counts_per_s;
  c.history_.push_back({t0_ns, 0});
  return c;
}

BeltClock::BeltClock(const BeltClock& other) {
  std::lock_guard<std::mutex> lock(other.mu_);
  history_ = other.history_;
  window_ns_ = other.window_ns_;
  fixed_ = other.fixed_;
  fixed_speed_ = other.fixed_speed_;
}

bool BeltClock::add_sample(std::int64_t t_ns, std::int64_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fixed_) return false;
  if (!history_.empty() && t_ns <= history_.back().t_ns) return false;
  history_.push_back({t_ns, count});
  if (history_.size() > kHistory) history_.pop_front();
  return true;
}

bool BeltClock::ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !history_.empty();
}

double BeltClock::speed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return speed_locked();
}

double BeltClock::speed_locked() const {
  if (fixed_) return fixed_speed_;
  if (history_.size() < 2) return 0;
  // The speed over at least the window and at least kMinCounts counts (a
  // slow belt moves a count or two in the window: whole counts would make
  // its speed jump by half), but never over more than kMaxBack.
  constexpr std::int64_t kMinCounts = 16;
  constexpr std::int64_t kMaxBack = 2'000'000'000;
  const Sample& last = history_.back();
  auto by_time = std::upper_bound(history_.begin(), history_.end(), last.t_ns - window_ns_,
                                  [](std::int64_t t, const Sample& s) { return t < s.t_ns; });
  // Counts only grow on a belt that runs forward; a step back of jitter
  // only moves this choice by a sample.
  auto by_count = std::upper_bound(history_.begin(), history_.end(), last.count - kMinCounts,
                                   [](std::int64_t c, const Sample& s) { return c < s.count; });
  auto oldest = std::lower_bound(history_.begin(), history_.end(), last.t_ns - kMaxBack,
                                 [](const Sample& s, std::int64_t t) { return s.t_ns < t; });
  auto it = std::max(std::min(by_time, by_count), oldest + 1);
  const Sample& first = *(it - 1);
  if (first.t_ns == last.t_ns) return 0;
  return static_cast<double>(last.count - first.count) * 1e9 /
         static_cast<double>(last.t_ns - first.t_ns);
}

double BeltClock::position_at(std::int64_t t_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  return position_locked(t_ns);
}

double BeltClock::position_locked(std::int64_t t_ns) const {
  if (history_.empty()) return 0;
  const double v = speed_locked();
  if (fixed_ || t_ns >= history_.back().t_ns)
    return static_cast<double>(history_.back().count) +
           v * static_cast<double>(t_ns - history_.back().t_ns) * 1e-9;
  if (t_ns <= history_.front().t_ns)
    return static_cast<double>(history_.front().count) -
           v * static_cast<double>(history_.front().t_ns - t_ns) * 1e-9;
  auto hi = std::lower_bound(history_.begin(), history_.end(), t_ns,
                             [](const Sample& s, std::int64_t t) { return s.t_ns < t; });
  const Sample& b = *hi;
  const Sample& a = *(hi - 1);
  const double f = static_cast<double>(t_ns - a.t_ns) / static_cast<double>(b.t_ns - a.t_ns);
  return static_cast<double>(a.count) + f * static_cast<double>(b.count - a.count);
}

std::int64_t BeltClock::time_at(double count, std::int64_t now_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  const double here = position_locked(now_ns);
  if (here >= count) return now_ns;
  const double v = speed_locked();
  if (v <= 0) return std::numeric_limits<std::int64_t>::max();
  const double dt = (count - here) / v * 1e9;
  if (dt > 1e17) return std::numeric_limits<std::int64_t>::max();
  return now_ns + static_cast<std::int64_t>(std::ceil(dt));
}

void BeltClock::restart() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!fixed_) history_.clear();
}

std::int64_t BeltClock::last_sample_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return history_.empty() ? std::numeric_limits<std::int64_t>::min() : history_.back().t_ns;
}

}  // namespace torchinfer
