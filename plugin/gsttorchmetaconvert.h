#ifndef GST_TORCHMETACONVERT_H
#define GST_TORCHMETACONVERT_H

#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

#define GST_TYPE_TORCHMETACONVERT (gst_torchmetaconvert_get_type())
G_DECLARE_FINAL_TYPE(GstTorchMetaConvert, gst_torchmetaconvert, GST, TORCHMETACONVERT,
                     GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE(torchmetaconvert);

G_END_DECLS

#endif
