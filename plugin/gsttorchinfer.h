#ifndef GST_TORCHINFER_H
#define GST_TORCHINFER_H

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_TYPE_TORCHINFER (gst_torchinfer_get_type())
G_DECLARE_FINAL_TYPE(GstTorchInfer, gst_torchinfer, GST, TORCHINFER, GstElement)

GST_ELEMENT_REGISTER_DECLARE(torchinfer);

G_END_DECLS

#endif
