// The frame accounting invariant (issue 24, item 2), checked after every
// test that counts frames: each frame that entered torchinfer is inferred,
// skipped for one reason, dropped, or in flight at the moment of reading
// (common/stream_stats.h). The element's stats, the server's /streams and
// the core's snapshots convert to FrameCounts (counts_of overloads next to
// each test family's helpers) and go through frames_add_up().
// in_flight is in − out − dropped by construction, so the sum alone cannot
// fail while a stream runs: a frame that leaks inside torchinfer shows as
// in flight for ever. Hence the bound by what the stream can really hold
// (its reported limit: queue + 2) and, once a stream ended or stopped,
// Settled::kYes (nothing in flight).
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
  // The most frames the stream can hold (stats' in-flight limit).
  std::uint64_t in_flight_limit = 0;
  std::array<std::uint64_t, kSkipReasons> skipped_by{};
  // Frames that left torchinfer (element, core); the server reports the
  // end of its pipeline instead, which trails it (`out_trails`).
  std::uint64_t out = 0;
  bool out_trails = false;
};

enum class Settled { kNo, kYes };

inline std::string describe(const FrameCounts& c) {
  std::ostringstream o;
  o << "in " << c.in << " = inferred " << c.inferred << " + skipped " << c.skipped << " (";
  for (std::size_t r = 0; r < kSkipReasons; ++r)
    o << (r ? ", " : "") << to_string(static_cast<SkipReason>(r)) << " " << c.skipped_by[r];
  o << ") + dropped " << c.dropped << " + in flight " << c.in_flight << " (limit "
    << c.in_flight_limit << "); out " << c.out;
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
  // A frame counted out twice wraps in_flight around to ~2^64; one that
  // never leaves keeps it up while the stream runs, past what it can hold
  // once a queue's worth leaks.
  if (c.in_flight > c.in_flight_limit)
    return ::testing::AssertionFailure()
           << "more frames in flight than the stream can hold (counted twice or leaked): "
           << describe(c);
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
  c.in_flight_limit = s.in_flight_limit;
  c.skipped_by = s.skipped_by;
  c.out = s.frames_out;
  return c;
}

}  // namespace torchinfer::test
