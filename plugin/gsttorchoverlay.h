#ifndef GST_TORCHOVERLAY_H
#define GST_TORCHOVERLAY_H

#include <gst/video/gstvideofilter.h>

G_BEGIN_DECLS

#define GST_TYPE_TORCHOVERLAY (gst_torchoverlay_get_type())
G_DECLARE_FINAL_TYPE(GstTorchOverlay, gst_torchoverlay, GST, TORCHOVERLAY, GstVideoFilter)

GST_ELEMENT_REGISTER_DECLARE(torchoverlay);

G_END_DECLS

#endif
