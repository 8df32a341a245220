#include "qa/qa_counts.h"

#include <cstdint>

#include "parts/qa_frames.h"

namespace torchinfer::qa {

void print_counts(const QaCounts& c, const QaRunInfo& run, bool codes) {
  std::string by;
  for (const auto& [label, n] : c.rejected_by_defect)
    by += (by.empty() ? " (" : ", ") + label + " " + std::to_string(n);
  if (!by.empty()) by += ")";
  const std::string without =
      codes ? ", " + std::to_string(c.without_code) + " without a readable code" : "";
  g_printerr(
      "qa-line: counts: %d passed, %d rejected%s, %d incomplete, %d duplicates%s; %" G_GINT64_FORMAT
      " frames, %" G_GINT64_FORMAT " analysed%s\n",
      c.passed, c.rejected, by.c_str(), c.incomplete, c.duplicates, without.c_str(), run.frames,
      run.frames_inferred, run.interrupted ? "; stopped by signal" : "");
}

nlohmann::ordered_json codes_facts(GstElement* pipeline, const QaCounts& c) {
  const int decided = c.passed + c.rejected + c.incomplete;
  nlohmann::ordered_json j;
  j["parts_with_code"] = decided - c.without_code;
  j["parts_without_code"] = c.without_code;
  guint64 tried = 0, read = 0, failed = 0, skipped = 0;
  if (GstElement* e = gst_bin_get_by_name(GST_BIN(pipeline), kCodesElement)) {
    g_object_get(e, "tried", &tried, "read", &read, "failed", &failed, "skipped-known", &skipped,
                 nullptr);
    gst_object_unref(e);
  }
  j["views_tried"] = tried;
  j["views_read"] = read;
  j["views_failed"] = failed;
  j["views_skipped_known"] = skipped;
  g_printerr("qa-line: codes: %d of %d parts with a code, %d without; views: %" G_GUINT64_FORMAT
             " tried, %" G_GUINT64_FORMAT " read, %" G_GUINT64_FORMAT " failed, %" G_GUINT64_FORMAT
             " skipped (code known)\n",
             decided - c.without_code, decided, c.without_code, static_cast<guint64>(tried),
             static_cast<guint64>(read), static_cast<guint64>(failed),
             static_cast<guint64>(skipped));
  return j;
}

std::string code_note(const QaDecision& d, bool codes) {
  if (!codes) return "";
  if (!d.code) return ", no readable code";
  return ", code " + d.code->format + " '" + d.code->text + "'";
}

}  // namespace torchinfer::qa
