#include <gst/gst.h>

#include "gst/torchinfer/torchinfer-meta.h"
#include "gsttorchinfer.h"
#include "gsttorchmetaconvert.h"

#ifndef PACKAGE
#define PACKAGE "torchinfer"
#endif

static gboolean plugin_init(GstPlugin* plugin) {
  gst_torch_classification_meta_register();
  gboolean ok = GST_ELEMENT_REGISTER(torchinfer, plugin);
  ok &= GST_ELEMENT_REGISTER(torchmetaconvert, plugin);
  return ok;
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, torchinfer,
                  "PyTorch (TorchScript) inference on raw video, optimised for x86 CPUs",
                  plugin_init, TORCHINFER_VERSION, "LGPL", "torchinfer",
                  "https://gstreamer.freedesktop.org/")
