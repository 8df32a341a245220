// Reading GstStructure fields that hold arrays of structures (torchanalytics'
// counts, lines and zones): one helper for the plugin, the QA app and the
// server. Header-only: the apps link the meta library, not the plugin's.
#pragma once

#include <gst/gst.h>

namespace torchinfer::gst {

// Calls f(structure) for each structure in the array field `name` of s;
// nothing when the field is missing or not an array.
template <class F>
void each_structure(const GstStructure* s, const char* name, F f) {
  const GValue* a = gst_structure_get_value(s, name);
  if (!a || !GST_VALUE_HOLDS_ARRAY(a)) return;
  for (guint i = 0; i < gst_value_array_get_size(a); ++i) {
    const GValue* v = gst_value_array_get_value(a, i);
    if (GST_VALUE_HOLDS_STRUCTURE(v)) f(gst_value_get_structure(v));
  }
}

}  // namespace torchinfer::gst
