#include "camera_analytics.h"

#include <glib/gstdio.h>

#include "gst/torchinfer/torchinfer-helpers.h"
#include "server/core/stream_analytics.h"

namespace torchinfer::server {

namespace {

using gst_torch::foreach_structure;

std::uint64_t count(const GstStructure* s, const char* name) {
  guint64 v = 0;
  gst_structure_get_uint64(s, name, &v);
  return v;
}

std::string name_of(const GstStructure* s) {
  const gchar* n = gst_structure_get_string(s, "name");
  return n ? n : "";
}

}  // namespace

bool apply_layout(GstElement* analytics, const std::string& path, const AnalyticsConfig& layout,
                  std::string* why) {
  gchar* dir = g_path_get_dirname(path.c_str());
  const bool made = g_mkdir_with_parents(dir, 0755) == 0;
  g_free(dir);
  const std::string text = layout_json(layout).dump(1) + "\n";
  GError* err = nullptr;
  if (!made || !g_file_set_contents(path.c_str(), text.c_str(), text.size(), &err)) {
    *why = "cannot write the lines and zones to " + path + ": " +
           (err ? err->message : g_strerror(errno)) + "; check the server's output_dir";
    if (err) g_error_free(err);
    return false;
  }
  // The setter reads the file now (while running) or at the element's start.
  // It parses with the parser that checked the layout, so only an I/O
  // failure can make it refuse, and that it reports as a warning.
  g_object_set(analytics, "config", path.c_str(), nullptr);
  return true;
}

void read_counts(GstElement* analytics, std::vector<LineCounts>& lines,
                 std::vector<ZoneCounts>& zones) {
  GstStructure* all = nullptr;
  g_object_get(analytics, "counts", &all, nullptr);
  if (!all) return;
  // The camera's pipeline has one stream: the first one's counts.
  foreach_structure(all, "streams", [&](const GstStructure* s) {
    foreach_structure(s, "lines", [&](const GstStructure* l) {
      LineCounts c;
      c.name = name_of(l);
      c.total = {count(l, "forward"), count(l, "backward")};
      foreach_structure(l, "by-class", [&](const GstStructure* k) {
        const gchar* label = gst_structure_get_string(k, "label");
        c.by_class[label ? label : ""] = {count(k, "forward"), count(k, "backward")};
      });
      lines.push_back(std::move(c));
    });
    foreach_structure(s, "zones", [&](const GstStructure* z) {
      zones.push_back({name_of(z), count(z, "inside"), count(z, "entered"), count(z, "exited")});
    });
    return false;
  });
  gst_structure_free(all);
}

}  // namespace torchinfer::server
