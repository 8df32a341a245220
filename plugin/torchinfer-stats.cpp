#include "torchinfer-stats.h"

namespace torchinfer::gst {

GstStructure* stats_structure(const char* name, const StatsSnapshot& s) {
  // frames-in = frames-inferred + frames-skipped + frames-dropped +
  // frames-in-flight, all read at one moment (common/stream_stats.h).
  GstStructure* st = gst_structure_new(
      name, "frames-in", G_TYPE_UINT64, s.frames_in, "frames-out", G_TYPE_UINT64, s.frames_out,
      "frames-inferred", G_TYPE_UINT64, s.inferred, "frames-skipped", G_TYPE_UINT64, s.skipped,
      "frames-dropped", G_TYPE_UINT64, s.dropped, "frames-in-flight", G_TYPE_UINT64, s.in_flight,
      "frames-in-flight-limit", G_TYPE_UINT64, s.in_flight_limit, "frames-invalid", G_TYPE_UINT64,
      s.invalid, "frames-saturated", G_TYPE_UINT64, s.saturated, "mean-batch-fill", G_TYPE_DOUBLE,
      s.mean_batch_fill, "fps", G_TYPE_DOUBLE, s.fps, nullptr);
  for (std::size_t r = 0; r < kSkipReasons; ++r) {
    const std::string field =
        std::string("frames-skipped-") + to_string(static_cast<SkipReason>(r));
    gst_structure_set(st, field.c_str(), G_TYPE_UINT64, s.skipped_by[r], nullptr);
  }
  if (s.region_mode)
    gst_structure_set(st, "regions-inferred", G_TYPE_UINT64, s.regions_inferred, "regions-reused",
                      G_TYPE_UINT64, s.regions_reused, "regions-filtered", G_TYPE_UINT64,
                      s.regions_filtered, "regions-skipped", G_TYPE_UINT64, s.regions_skipped,
                      "regions-dropped", G_TYPE_UINT64, s.regions_dropped, nullptr);
  const struct {
    const char* stage;
    const StagePercentiles& p;
  } stages[] = {{"queue", s.queue},
                {"preprocess", s.preprocess},
                {"inference", s.inference},
                {"total", s.total}};
  for (const auto& x : stages) {
    const std::string base = std::string(x.stage) + "-ms-";
    gst_structure_set(st, (base + "p50").c_str(), G_TYPE_DOUBLE, x.p.p50, (base + "p95").c_str(),
                      G_TYPE_DOUBLE, x.p.p95, (base + "p99").c_str(), G_TYPE_DOUBLE, x.p.p99,
                      nullptr);
  }
  return st;
}

}  // namespace torchinfer::gst
