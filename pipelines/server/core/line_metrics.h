// The Prometheus families of the cameras' part verdicts and PLC outputs
// (server/line_spec.h; docs/server.md "Metrics"), appended to
// render_prometheus()'s text. Only families some stream has are written.
#pragma once

#include <string>

#include "server/core/metrics_text.h"

namespace torchinfer::server {

std::string render_line_metrics(const MetricsSnapshot& m);

}  // namespace torchinfer::server
