#ifndef GST_TORCHANALYTICS_H
#define GST_TORCHANALYTICS_H

#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

#define GST_TYPE_TORCHANALYTICS (gst_torchanalytics_get_type())
G_DECLARE_FINAL_TYPE(GstTorchAnalytics, gst_torchanalytics, GST, TORCHANALYTICS, GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE(torchanalytics);

G_END_DECLS

#endif
