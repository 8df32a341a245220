// The torchinfer element's property table (entries in
// torchinfer-properties.cpp, rules in property-table.h) and the Status its
// read-only properties read.
#pragma once

#include <cstdint>

#include "common/stream_stats.h"
#include "property-table.h"
#include "torchinfer-settings.h"
#include "torchinfer-stats.h"

namespace torchinfer::gst {

// What the read-only properties read, asked only when one is read: the
// element answers from its stream session and its latest load, live; tests
// answer with fixed figures.
class Status {
 public:
  virtual Stats load() const = 0;  // figures of the latest (re)load
  virtual std::uint64_t frames_inferred() const = 0;
  virtual double last_inference_ms() const = 0;
  virtual StatsSnapshot stream() const = 0;  // counters and latency percentiles

 protected:
  ~Status() = default;
};

const PropertyTable<Settings, Status>& properties();

}  // namespace torchinfer::gst
