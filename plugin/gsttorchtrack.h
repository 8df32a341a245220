#ifndef GST_TORCHTRACK_H
#define GST_TORCHTRACK_H

#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

#define GST_TYPE_TORCHTRACK (gst_torchtrack_get_type())
G_DECLARE_FINAL_TYPE(GstTorchTrack, gst_torchtrack, GST, TORCHTRACK, GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE(torchtrack);

G_END_DECLS

#endif
