// The frame accounting invariant (issue 24, item 2), checked after every
// test that counts frames: each frame that entered torchinfer is inferred,
// skipped for one reason, dropped, or in flight at the moment of reading
// (common/stream_stats.h). The element's stats, the server's /streams and
// the core's snapshots convert to FrameCounts (counts_of overloads next to
// each test family's helpers) and go through frames_add_up().
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <sstream>
#include <string>

#include "common/stream_stats.h"

namespace torchinfer::test {

struct FrameCounts {
  std::uint64_t in = 0, inferred = 0, skipped = 0, dropped = 0, in_flight = 0;
  std::array<std::uint64_t, kSkipReasons> skipped_by{};
  // Frames that left torchinfer (element, core); the server reports the
  // end of its pipeline instead, which trails it (`out_trails`).
  std::uint64_t out = 0;
  bool out_trails = false;
};

// The most frames a stream may hold inside the element: a torchinfer queue
// (8 batch buffers of 64 frames, intervals of 1000 aside) is far below it;
// a frame counted twice makes in_flight wrap around to ~2^64.
constexpr std::uint64_t kMostInFlight = 1 << 20;

enum class Settled { kNo, kYes };

inline std::string describe(const FrameCounts& c) {
  std::ostringstream o;
  o << "in " << c.in << " = inferred " << c.inferred << " + skipped " << c.skipped << " (";
  for (std::size_t r = 0; r < kSkipReasons; ++r)
    o << (r ? ", " : "") << to_string(static_cast<SkipReason>(r)) << " " << c.skipped_by[r];
  o << ") + dropped " << c.dropped << " + in flight " << c.in_flight << "; out " << c.out;
  return o.str();
}

// `settled`: the stream has drained (EOS out, drain query, stop), so
// nothing may be in flight.
inline ::testing::AssertionResult frames_add_up(const FrameCounts& c,
                                                Settled settled = Settled::kNo) {
  std::uint64_t by_reason = 0;
  for (std::uint64_t n : c.skipped_by) by_reason += n;
  if (by_reason != c.skipped)
    return ::testing::AssertionFailure() << "skipped reasons do not sum up: " << describe(c);
  if (c.in_flight > kMostInFlight)
    return ::testing::AssertionFailure() << "frames counted twice: " << describe(c);
  if (c.in != c.inferred + c.skipped + c.dropped + c.in_flight)
    return ::testing::AssertionFailure() << "frames unaccounted for: " << describe(c);
  if (c.out_trails ? c.out > c.inferred + c.skipped : c.out != c.inferred + c.skipped)
    return ::testing::AssertionFailure() << "frames out do not match: " << describe(c);
  if (settled == Settled::kYes && c.in_flight != 0)
    return ::testing::AssertionFailure() << "frames still in flight once drained: " << describe(c);
  return ::testing::AssertionSuccess();
}

inline FrameCounts counts_of(const StatsSnapshot& s) {
  FrameCounts c;
  c.in = s.frames_in;
  c.inferred = s.inferred;
  c.skipped = s.skipped;
  c.dropped = s.dropped;
  c.in_flight = s.in_flight;
  c.skipped_by = s.skipped_by;
  c.out = s.frames_out;
  return c;
}

}  // namespace torchinfer::test
