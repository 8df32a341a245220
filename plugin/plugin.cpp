// The plugin file GStreamer loads. It does not link libtorch: libgomp reads
// its wait settings once, when it is loaded. Its default (spin ~3 ms before
// sleeping) costs 100x on a machine where anything else wants the cores
// (measured on 2 cores: 120 ms instead of 1.6 ms per inference), while a
// passive team sleeps between the dozens of parallel regions of one
// forward() and pays a futex wake-up for each (MobileNetV2 batch 1: half
// the speed of ACTIVE on idle cores). A short bounded spin covers the gaps
// inside a forward() and sleeps between batches and whenever the partner
// thread is descheduled: so set it unless the user chose a policy, then
// load the runtime with the elements. docs/tuning.md has the measurements.
#include <gmodule.h>
#include <gst/gst.h>

#ifndef PACKAGE
#define PACKAGE "torchinfer"
#endif

GST_DEBUG_CATEGORY_STATIC(torchinfer_loader_debug);
#define GST_CAT_DEFAULT torchinfer_loader_debug

namespace {

// libgomp spins of its busy-wait loop (~100 per microsecond on the 2-core
// EPYC measured) before a waiting thread sleeps; chosen by
// tests/bench/wait_policy.sh, which reads this line.
constexpr const char* kDefaultSpinCount = "10000";

// Installed: <libdir>/gstreamer-1.0/plugin and <libdir>/runtime; in the build
// folder: build/plugin/plugin and build/runtime. Outside the plugin folder so
// GStreamer's scanner never takes the runtime for a plugin.
gchar* runtime_path(GstPlugin* plugin) {
  if (const gchar* explicit_path = g_getenv("TORCHINFER_RUNTIME")) return g_strdup(explicit_path);
  const gchar* self = gst_plugin_get_filename(plugin);
  gchar* dir = g_path_get_dirname(self ? self : ".");
  gchar* path = g_build_filename(dir, "..", "libtorchinfer-runtime.so", nullptr);
  g_free(dir);
  return path;
}

}  // namespace

static gboolean plugin_init(GstPlugin* plugin) {
  GST_DEBUG_CATEGORY_INIT(torchinfer_loader_debug, "torchinfer-loader", 0,
                          "torchinfer plugin loader");
  if (!g_getenv("OMP_WAIT_POLICY") && !g_getenv("GOMP_SPINCOUNT"))
    g_setenv("GOMP_SPINCOUNT", kDefaultSpinCount, FALSE);
  gchar* path = runtime_path(plugin);
  GModule* module = g_module_open(path, G_MODULE_BIND_LOCAL);
  if (!module) {
    g_warning("torchinfer: cannot load its runtime '%s': %s", path, g_module_error());
    g_free(path);
    return FALSE;
  }
  g_module_make_resident(module);
  gboolean (*register_elements)(GstPlugin*) = nullptr;
  if (!g_module_symbol(module, "torchinfer_runtime_register",
                       reinterpret_cast<gpointer*>(&register_elements))) {
    g_warning("torchinfer: '%s' is not the torchinfer runtime", path);
    g_free(path);
    return FALSE;
  }
  GST_INFO("runtime %s, OMP_WAIT_POLICY=%s, GOMP_SPINCOUNT=%s", path, g_getenv("OMP_WAIT_POLICY"),
           g_getenv("GOMP_SPINCOUNT"));
  g_free(path);
  return register_elements(plugin);
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, torchinfer,
                  "PyTorch (TorchScript) inference on raw video, optimised for x86 CPUs",
                  plugin_init, TORCHINFER_VERSION, "LGPL", "torchinfer",
                  "https://gstreamer.freedesktop.org/")
