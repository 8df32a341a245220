// The torchcodes element's settings, live figures and properties. Each
// property is described once, in torchcodes-properties.cpp (see
// property-table.h).
#pragma once

#include <gst/gst.h>

#include <string>

#include "property-table.h"

namespace torchinfer::gst::codes {

enum Prop {
  PROP_0,
  PROP_FORMATS,
  PROP_OBJECT_CLASS,
  PROP_PADDING,
  PROP_REREAD_INTERVAL,
  PROP_TRY_HARDER,
  PROP_TRY_ROTATE,
  PROP_TRY_INVERT,
  PROP_FULL_FRAME,
  PROP_READ,
  PROP_FAILED,
  PROP_TRIED,
  PROP_SKIPPED_KNOWN,
  PROP_WORKERS,
  PROP_BUDGET_MS,
  PROP_LATE,
  PROP_DEFERRED,
};

enum GstTorchCodesFullFrame {
  GST_TORCHCODES_FULL_FRAME_NEVER,
  GST_TORCHCODES_FULL_FRAME_NO_ROI,  // frames without a detection ROI
  GST_TORCHCODES_FULL_FRAME_ALWAYS,
};

constexpr double kDefaultPadding = 0.1;
constexpr double kDefaultBudgetMs = 20;

// All of them apply from the next start.
struct Settings {
  std::string formats;       // empty = all
  std::string object_class;  // comma-separated labels; empty = all
  double padding = kDefaultPadding;
  guint reread_interval = 0;  // frames; 0 = never
  bool try_harder = true, try_rotate = true, try_invert = false;
  GstTorchCodesFullFrame full_frame = GST_TORCHCODES_FULL_FRAME_NO_ROI;
  guint workers = 0;  // 0: read on the streaming thread
  double budget_ms = kDefaultBudgetMs;
};

// The element's live figures since start (views read, with / without a
// code, views of tracks whose code was known and fresh; with workers, reads
// finished after their frame and due views not read).
struct Status {
  guint64 read = 0, failed = 0, tried = 0, skipped_known = 0, late = 0, deferred = 0;
};

const PropertyTable<Settings, Status>& properties();

// Also marks the enum type as plugin API (documented with the element).
void install_properties(GObjectClass* klass);

}  // namespace torchinfer::gst::codes
