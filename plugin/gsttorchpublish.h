#ifndef GST_TORCHPUBLISH_H
#define GST_TORCHPUBLISH_H

#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

#define GST_TYPE_TORCHPUBLISH (gst_torchpublish_get_type())
G_DECLARE_FINAL_TYPE(GstTorchPublish, gst_torchpublish, GST, TORCHPUBLISH, GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE(torchpublish);

G_END_DECLS

#endif
