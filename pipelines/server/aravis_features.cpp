#include "aravis_features.h"

#include <cstdio>

namespace torchinfer::server::aravis {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

bool offers(const char** list, guint n, const std::string& value, std::string* all) {
  bool found = false;
  for (guint i = 0; i < n; ++i) {
    found = found || value == list[i];
    *all += (all->empty() ? "" : ", ") + std::string(list[i]);
  }
  return found;
}

}  // namespace

// The pixel format to ask for: the configured one if the camera offers it,
// else the camera's own if the analysis takes it. Empty with *why if neither.
std::string choose_format(ArvCamera* cam, const CameraSettings& set, std::string* why,
                          GError** err) {
  guint n = 0;
  const char** list = arv_camera_dup_available_pixel_formats_as_strings(cam, &n, err);
  if (*err) return "";
  std::string all, ours;
  const bool offered = offers(list, n, set.pixel_format, &all);
  for (guint i = 0; i < n; ++i)
    if (find_pixel_format(list[i])) ours += (ours.empty() ? "" : ", ") + std::string(list[i]);
  g_free(list);
  std::string format = set.pixel_format;
  if (format.empty()) {
    const char* current = arv_camera_get_pixel_format_as_string(cam, err);
    format = current ? current : "";
    if (*err) return "";
    if (find_pixel_format(format)) return format;
    *why = "pixel_format: the camera sends " + format +
           ", which the analysis does not take as it comes; set pixel_format to one of " + ours;
    return "";
  }
  if (offered) return format;
  *why = "pixel_format: the camera does not offer " + format + "; it offers " + all;
  return "";
}

// Exposure, gain and the trigger, each checked against what this camera
// allows so the message can say it.
bool apply_features(ArvCamera* cam, const CameraSettings& set, std::string* why, GError** err) {
  double lo = 0, hi = 0;
  if (set.exposure_us) {
    arv_camera_get_exposure_time_bounds(cam, &lo, &hi, err);
    if (*err) return false;
    if (*set.exposure_us < lo || *set.exposure_us > hi) {
      *why = "exposure_us: " + num(*set.exposure_us) + " is outside the camera's " + num(lo) +
             " to " + num(hi);
      return false;
    }
    if (arv_camera_is_exposure_auto_available(cam, nullptr))
      arv_camera_set_exposure_time_auto(cam, ARV_AUTO_OFF, err);
    if (!*err) arv_camera_set_exposure_time(cam, *set.exposure_us, err);
    if (*err) return false;
  }
  if (set.gain_db) {
    arv_camera_get_gain_bounds(cam, &lo, &hi, err);
    if (*err) return false;
    if (*set.gain_db < lo || *set.gain_db > hi) {
      *why = "gain_db: " + num(*set.gain_db) + " is outside the camera's " + num(lo) + " to " +
             num(hi);
      return false;
    }
    if (arv_camera_is_gain_auto_available(cam, nullptr))
      arv_camera_set_gain_auto(cam, ARV_AUTO_OFF, err);
    if (!*err) arv_camera_set_gain(cam, *set.gain_db, err);
    if (*err) return false;
  }
  // The camera keeps its trigger settings across connections: set them
  // every time, free-run included.
  if (set.trigger == TriggerMode::kFreeRun) {
    arv_camera_clear_triggers(cam, err);
    return !*err;
  }
  const std::string source = set.trigger == TriggerMode::kSoftware ? "Software" : set.trigger_line;
  guint n = 0;
  const char** list = arv_camera_dup_available_trigger_sources(cam, &n, err);
  if (*err) return false;
  std::string all;
  const bool ok = offers(list, n, source, &all);
  g_free(list);
  if (!ok) {
    *why = "trigger: the camera has no trigger source " + source + "; it has " + all;
    return false;
  }
  arv_camera_set_trigger(cam, source.c_str(), err);
  return !*err;
}

}  // namespace torchinfer::server::aravis
