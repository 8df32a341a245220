#include "server/core/line_metrics.h"

#include <functional>

#include "server/core/exposition.h"

namespace torchinfer::server {

namespace {

using F = StreamFigures;
using Samples = std::function<void(Exposition&, const F&, const std::string& name)>;

// One family: its header, then each stream's samples (those with `has`).
void family(Exposition& w, const MetricsSnapshot& m, bool F::*has, const std::string& name,
            const char* type, const char* help, const Samples& samples) {
  bool any = false;
  for (const auto& s : m.streams) any = any || s.*has;
  if (!any) return;
  w.family(name, type, help);
  for (const auto& s : m.streams)
    if (s.*has) samples(w, s, name);
}

Labels stream(const F& s) {
  return {{"stream", s.id}};
}

Samples one(std::function<double(const F&)> get) {
  return [get](Exposition& w, const F& s, const std::string& name) {
    w.sample(name, stream(s), get(s));
  };
}

Samples by(std::map<std::string, std::uint64_t> F::*values, const char* label) {
  return [values, label](Exposition& w, const F& s, const std::string& name) {
    for (const auto& [k, v] : s.*values) w.sample(name, stream(s) + Labels{{label, k}}, v);
  };
}

void parts_and_plc(Exposition& w, const MetricsSnapshot& m) {
  family(w, m, &F::parts, "torchinfer_parts_decided_total", "counter",
         "Parts decided, by verdict (pass, reject, incomplete).", by(&F::parts_decided, "verdict"));
  family(w, m, &F::plc, "torchinfer_plc_pulses_total", "counter",
         "Pulses sent to the PLC, by output (reject, pass, recheck).",
         by(&F::plc_pulses, "output"));
  family(w, m, &F::plc, "torchinfer_plc_pulses_lost_total", "counter",
         "Pulses due while the PLC was unreachable, or whose write failed.",
         one([](const F& s) { return static_cast<double>(s.plc_pulses_lost); }));
  family(w, m, &F::plc, "torchinfer_plc_late_parts_total", "counter",
         "Parts whose verdict came after their pulse moment (the fail-safe output applies).",
         one([](const F& s) { return static_cast<double>(s.plc_late_parts); }));
  family(w, m, &F::plc, "torchinfer_plc_write_failures_total", "counter",
         "Modbus writes to the PLC that failed.",
         one([](const F& s) { return static_cast<double>(s.plc_write_failures); }));
  family(w, m, &F::plc, "torchinfer_plc_connected", "gauge",
         "1 while the PLC connection is up, else 0.",
         one([](const F& s) { return s.plc_connected ? 1.0 : 0.0; }));
  family(w, m, &F::plc, "torchinfer_plc_encoder_age_seconds", "gauge",
         "Seconds since the last belt encoder reading (absent before the first, or without an "
         "encoder).",
         [](Exposition& x, const F& s, const std::string& name) {
           if (s.plc_encoder_age_s >= 0) x.sample(name, stream(s), s.plc_encoder_age_s);
         });
}

void codes(Exposition& w, const MetricsSnapshot& m) {
  family(w, m, &F::codes, "torchinfer_codes_read_total", "counter",
         "Views (detections or whole frames) torchcodes read a code in.",
         one([](const F& s) { return static_cast<double>(s.codes_read); }));
  family(w, m, &F::codes, "torchinfer_codes_failed_total", "counter",
         "Views torchcodes read without a code (none found, outside the frame, reader error).",
         one([](const F& s) { return static_cast<double>(s.codes_failed); }));
  family(w, m, &F::codes, "torchinfer_codes_tried_total", "counter",
         "Views torchcodes read (read + failed).",
         one([](const F& s) { return static_cast<double>(s.codes_tried); }));
  family(w, m, &F::codes, "torchinfer_codes_late_total", "counter",
         "Reads on torchcodes' workers that finished after their frame had gone.",
         one([](const F& s) { return static_cast<double>(s.codes_late); }));
  family(w, m, &F::codes, "torchinfer_codes_read_seconds_total", "counter",
         "Seconds the streaming thread spent in torchcodes; per read: divide by "
         "torchinfer_codes_tried_total.",
         one([](const F& s) { return s.codes_read_seconds; }));
}

}  // namespace

std::string render_line_metrics(const MetricsSnapshot& m) {
  Exposition w;
  parts_and_plc(w, m);
  codes(w, m);
  return w.str();
}

}  // namespace torchinfer::server
