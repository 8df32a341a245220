// The plugin file GStreamer loads. It does not link libtorch: libgomp reads
// its wait settings once, when it is loaded, and no fixed setting wins both
// ways — libgomp's default and ACTIVE spin, which costs 100x when anything
// else wants the cores (measured on 2 cores: 120 ms instead of 1.6 ms per
// inference), while PASSIVE pays a futex wake-up at each of the dozens of
// barriers of one forward() (MobileNetV2 batch 1: half the speed of ACTIVE
// on idle cores). So unless the user chose a policy, look at how busy this
// process's cores are for a moment and pick a bounded spin (idle) or
// PASSIVE (shared) — src/engine/wait_policy.h — then load the runtime.
#include <gmodule.h>
#include <gst/gst.h>
#include <malloc.h>
#include <sched.h>

#include <string>
#include <vector>

#include "engine/malloc_tuning.h"
#include "engine/wait_policy.h"

#ifndef PACKAGE
#define PACKAGE "torchinfer"
#endif

GST_DEBUG_CATEGORY_STATIC(torchinfer_loader_debug);
#define GST_CAT_DEFAULT torchinfer_loader_debug

namespace {

std::string read_proc_stat() {
  gchar* text = nullptr;
  if (!g_file_get_contents("/proc/stat", &text, nullptr, nullptr)) return {};
  std::string s(text);
  g_free(text);
  return s;
}

// Busy share of the cores this process may run on over 50 ms (5 jiffies of
// /proc/stat per core at the usual 100 Hz).
std::optional<double> sample_core_load() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  const std::string before = read_proc_stat();
  g_usleep(50000);
  return torchinfer::busy_share(before, read_proc_stat(), cpus);
}

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
  const char* policy = g_getenv("OMP_WAIT_POLICY");
  const char* spin = g_getenv("GOMP_SPINCOUNT");
  const torchinfer::WaitPolicyChoice wait = torchinfer::choose_wait_policy(
      policy, spin, policy || spin ? std::nullopt : sample_core_load());
  if (!wait.variable.empty()) g_setenv(wait.variable.c_str(), wait.value.c_str(), FALSE);
  // Freed frames and activations kept for the next frame (malloc_tuning.h).
  torchinfer::MallocChoice heap = torchinfer::choose_malloc_tuning(g_getenv);
  if (heap.apply && !(mallopt(M_MMAP_THRESHOLD, torchinfer::kMallocMmapThreshold) &&
                      mallopt(M_TRIM_THRESHOLD, torchinfer::kMallocTrimThreshold)))
    heap.reason = "glibc's own (mallopt refused the thresholds)";
  gchar* path = runtime_path(plugin);
  {
    // The elements live in the runtime, not in this file: without this, a
    // rebuilt or upgraded runtime with a new element keeps the registry's
    // old element list, because GStreamer rescans only changed plugin files.
    gchar* dir = g_path_get_dirname(path);
    gchar* name = g_path_get_basename(path);
    const gchar* env[] = {"TORCHINFER_RUNTIME", nullptr};
    const gchar* dirs[] = {dir, nullptr};
    const gchar* names[] = {name, nullptr};
    gst_plugin_add_dependency(plugin, env, dirs, names, GST_PLUGIN_DEPENDENCY_FLAG_NONE);
    g_free(dir);
    g_free(name);
  }
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
  GST_INFO("runtime %s; OpenMP wait policy: %s (OMP_WAIT_POLICY=%s, GOMP_SPINCOUNT=%s); malloc: %s",
           path, wait.reason.c_str(), g_getenv("OMP_WAIT_POLICY"), g_getenv("GOMP_SPINCOUNT"),
           heap.reason.c_str());
  g_free(path);
  return register_elements(plugin);
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, torchinfer,
                  "PyTorch (TorchScript) inference on raw video, optimised for x86 CPUs",
                  plugin_init, TORCHINFER_VERSION, "LGPL", "torchinfer",
                  "https://gstreamer.freedesktop.org/")
