#ifndef GST_TORCHCODES_H
#define GST_TORCHCODES_H

#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

#define GST_TYPE_TORCHCODES (gst_torchcodes_get_type())
G_DECLARE_FINAL_TYPE(GstTorchCodes, gst_torchcodes, GST, TORCHCODES, GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE(torchcodes);

G_END_DECLS

#endif
