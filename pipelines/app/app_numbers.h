// Number options of the example apps, checked: atoi("-5") or atoi("abc")
// would silently run with a value nobody asked for, and GLib's double
// options take "nan" and "inf". No GStreamer here, so the plain CLIs
// (selfcheck, dump-frames) share it.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace torchinfer::app {

// Exit status of every app for a bad command line (unknown option, value
// out of range), as for GLib's option parser failures.
constexpr int kBadCommandLine = 2;

// `text` as an integer in [lo, hi]; false, with a message naming `option`,
// for junk, trailing characters or a value out of range.
inline bool parse_int(const std::string& option, const std::string& text, long lo, long hi,
                      long* out) {
  errno = 0;
  char* end = nullptr;
  const long v = text.empty() ? 0 : std::strtol(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < lo || v > hi) {
    std::fprintf(stderr, "error: %s '%s' is out of range: give an integer from %ld to %ld\n",
                 option.c_str(), text.c_str(), lo, hi);
    return false;
  }
  *out = v;
  return true;
}

// True if `v` is finite and within [lo, hi]; else says so for `option`.
inline bool check_range(const char* option, double v, double lo, double hi) {
  if (std::isfinite(v) && v >= lo && v <= hi) return true;
  std::fprintf(stderr, "error: %s %g is out of range: give a number from %g to %g\n", option, v, lo,
               hi);
  return false;
}

inline bool check_range(const char* option, long long v, long long lo, long long hi) {
  if (v >= lo && v <= hi) return true;
  std::fprintf(stderr, "error: %s %lld is out of range: give an integer from %lld to %lld\n",
               option, v, lo, hi);
  return false;
}

}  // namespace torchinfer::app
