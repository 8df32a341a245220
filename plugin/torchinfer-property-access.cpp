#include "torchinfer-property-access.h"

#include <cstdio>

#include "common/error.h"

namespace torchinfer::gst {
namespace {

void reject(GParamSpec* pspec, const char* value, const std::string& why) {
  g_warning("torchinfer: rejected value '%s' for property '%s': %s", value ? value : "(null)",
            g_param_spec_get_name(pspec), why.c_str());
}

}  // namespace

// "" clears; anything else must parse as 1 or 3 numbers.
bool set_float_list(std::string& field, const GValue* value, GParamSpec* pspec, bool positive) {
  const char* text = g_value_get_string(value);
  std::string s = text ? text : "";
  if (!s.empty()) {
    try {
      for (float v : parse_float_list(s))
        if (positive && !(v > 0.f))
          throw Error(ErrorKind::kConfigInvalid, "values must be positive");
    } catch (const std::exception& e) {
      reject(pspec, text, e.what());
      return false;
    }
  }
  field = s;
  return true;
}

// "x,y,width,height" in frame pixels; "" clears.
bool set_crop(Settings& s, const GValue* value, GParamSpec* pspec) {
  const char* text = g_value_get_string(value);
  if (!text || !*text) {
    s.crop = Crop{};
    return true;
  }
  int v[4];
  char tail = 0;
  if (std::sscanf(text, "%d , %d , %d , %d %c", &v[0], &v[1], &v[2], &v[3], &tail) != 4 ||
      v[0] < 0 || v[1] < 0 || v[2] < 1 || v[3] < 1) {
    reject(pspec, text, "expected \"x,y,width,height\" with x,y >= 0 and width,height >= 1");
    return false;
  }
  s.crop = Crop{v[0], v[1], v[2], v[3]};
  return true;
}

void get_crop(const Settings& s, const Status&, GValue* value) {
  const Crop& c = s.crop;
  if (c.width > 0)
    g_value_take_string(value, g_strdup_printf("%d,%d,%d,%d", c.x, c.y, c.width, c.height));
  else
    g_value_set_string(value, nullptr);
}

}  // namespace torchinfer::gst
