// Entry point of libtorchinfer-runtime: registers the elements. The plugin
// file itself is only a loader (plugin.cpp), so that OpenMP settings can be
// put in place before libtorch pulls in libgomp.
#include <gst/gst.h>

#include "gst/torchinfer/torchinfer-meta.h"
#include "gsttorchanalytics.h"
#include "gsttorchcodes.h"
#include "gsttorchinfer.h"
#include "gsttorchmetaconvert.h"
#include "gsttorchnms.h"
#include "gsttorchoverlay.h"
#include "gsttorchpublish.h"
#include "gsttorchtrack.h"

extern "C" __attribute__((visibility("default"))) gboolean torchinfer_runtime_register(
    GstPlugin* plugin) {
  gst_torch_analytics_meta_register();
  gst_torch_classification_meta_register();
  gst_torch_anomaly_meta_register();
  gst_torchtrack_events_meta_register();
  gst_torch_codes_meta_register();
  gboolean ok = GST_ELEMENT_REGISTER(torchinfer, plugin);
  ok &= GST_ELEMENT_REGISTER(torchmetaconvert, plugin);
  ok &= GST_ELEMENT_REGISTER(torchnms, plugin);
  ok &= GST_ELEMENT_REGISTER(torchoverlay, plugin);
  ok &= GST_ELEMENT_REGISTER(torchpublish, plugin);
  ok &= GST_ELEMENT_REGISTER(torchtrack, plugin);
  ok &= GST_ELEMENT_REGISTER(torchanalytics, plugin);
  ok &= GST_ELEMENT_REGISTER(torchcodes, plugin);
  return ok;
}
