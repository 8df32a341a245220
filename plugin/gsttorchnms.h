#ifndef GST_TORCHNMS_H
#define GST_TORCHNMS_H

#include <gst/base/gstbasetransform.h>

G_BEGIN_DECLS

#define GST_TYPE_TORCHNMS (gst_torchnms_get_type())
G_DECLARE_FINAL_TYPE(GstTorchNms, gst_torchnms, GST, TORCHNMS, GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE(torchnms);

G_END_DECLS

#endif
