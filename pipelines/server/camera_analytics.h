// A camera's torchanalytics (its "track": true cameras have one after
// torchtrack): the layout handed to the element, the counts read back.
//
// The layout goes to the element as its config file, <output_dir>/<id>.
// analytics.json, written whole (g_file_set_contents: a new file renamed
// over the old one) and read by the element's `config` setter at once while
// PLAYING: class filters and zone holes need the file form, and the change
// takes effect at the element's next frame without restarting the pipeline.
// Lines and zones whose name, geometry and classes stay keep their counts;
// changed ones start again from 0; removed ones are gone
// (src/analytics/analytics.h, StreamAnalytics::set_config).
#pragma once

#include <gst/gst.h>

#include <string>
#include <vector>

#include "analytics/analytics.h"

namespace torchinfer::server {

// Writes the layout to `path` and points the element at it. False with the
// reason (the folder or file cannot be written; the element refused it).
bool apply_layout(GstElement* analytics, const std::string& path, const AnalyticsConfig& layout,
                  std::string* why);

// The element's latest counts (its `counts` property; the first stream it
// saw: a camera has one). Empty before its first frame.
void read_counts(GstElement* analytics, std::vector<LineCounts>& lines,
                 std::vector<ZoneCounts>& zones);

}  // namespace torchinfer::server
