#include "server/line_metrics.h"

#include <cstdio>
#include <functional>
#include <sstream>

namespace torchinfer::server {

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

using Samples = std::function<void(const StreamFigures&, const std::string& labels,
                                   std::ostringstream& out, const std::string& name)>;

// One family: its header, then each stream's samples (those with `has`).
void family(std::ostringstream& out, const MetricsSnapshot& m, bool StreamFigures::*has,
            const std::string& name, const char* type, const char* help, const Samples& samples) {
  bool any = false;
  for (const auto& s : m.streams) any = any || s.*has;
  if (!any) return;
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  for (const auto& s : m.streams)
    if (s.*has) samples(s, "stream=\"" + escape_label(s.id) + "\"", out, name);
}

Samples one(std::function<double(const StreamFigures&)> get) {
  return [get](const StreamFigures& s, const std::string& labels, std::ostringstream& out,
               const std::string& name) {
    out << name << "{" << labels << "} " << num(get(s)) << "\n";
  };
}

Samples by(std::map<std::string, std::uint64_t> StreamFigures::*values, const char* label) {
  return [values, label](const StreamFigures& s, const std::string& labels, std::ostringstream& out,
                         const std::string& name) {
    for (const auto& [k, v] : s.*values)
      out << name << "{" << labels << "," << label << "=\"" << escape_label(k) << "\"} " << v
          << "\n";
  };
}

}  // namespace

std::string render_line_metrics(const MetricsSnapshot& m) {
  std::ostringstream out;
  using F = StreamFigures;
  family(out, m, &F::parts, "torchinfer_parts_decided_total", "counter",
         "Parts decided, by verdict (pass, reject, incomplete).", by(&F::parts_decided, "verdict"));
  family(out, m, &F::plc, "torchinfer_plc_pulses_total", "counter",
         "Pulses sent to the PLC, by output (reject, pass, recheck).",
         by(&F::plc_pulses, "output"));
  family(out, m, &F::plc, "torchinfer_plc_pulses_lost_total", "counter",
         "Pulses due while the PLC was unreachable, or whose write failed.",
         one([](const F& s) { return static_cast<double>(s.plc_pulses_lost); }));
  family(out, m, &F::plc, "torchinfer_plc_late_parts_total", "counter",
         "Parts whose verdict came after their pulse moment (the fail-safe output applies).",
         one([](const F& s) { return static_cast<double>(s.plc_late_parts); }));
  family(out, m, &F::plc, "torchinfer_plc_write_failures_total", "counter",
         "Modbus writes to the PLC that failed.",
         one([](const F& s) { return static_cast<double>(s.plc_write_failures); }));
  family(out, m, &F::plc, "torchinfer_plc_connected", "gauge",
         "1 while the PLC connection is up, else 0.",
         one([](const F& s) { return s.plc_connected ? 1.0 : 0.0; }));
  family(out, m, &F::plc, "torchinfer_plc_encoder_age_seconds", "gauge",
         "Seconds since the last belt encoder reading (absent before the first, or without an "
         "encoder).",
         [](const F& s, const std::string& labels, std::ostringstream& o, const std::string& name) {
           if (s.plc_encoder_age_s >= 0)
             o << name << "{" << labels << "} " << num(s.plc_encoder_age_s) << "\n";
         });
  family(out, m, &F::codes, "torchinfer_codes_read_total", "counter",
         "Views (detections or whole frames) torchcodes read a code in.",
         one([](const F& s) { return static_cast<double>(s.codes_read); }));
  family(out, m, &F::codes, "torchinfer_codes_failed_total", "counter",
         "Views torchcodes read without a code (none found, outside the frame, reader error).",
         one([](const F& s) { return static_cast<double>(s.codes_failed); }));
  family(out, m, &F::codes, "torchinfer_codes_tried_total", "counter",
         "Views torchcodes read (read + failed).",
         one([](const F& s) { return static_cast<double>(s.codes_tried); }));
  family(out, m, &F::codes, "torchinfer_codes_late_total", "counter",
         "Reads on torchcodes' workers that finished after their frame had gone.",
         one([](const F& s) { return static_cast<double>(s.codes_late); }));
  family(out, m, &F::codes, "torchinfer_codes_read_seconds_total", "counter",
         "Seconds the streaming thread spent in torchcodes; per read: divide by "
         "torchinfer_codes_tried_total.",
         one([](const F& s) { return s.codes_read_seconds; }));
  return out.str();
}

}  // namespace torchinfer::server
