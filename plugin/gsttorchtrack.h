#ifndef GST_TORCHTRACK_H
#define GST_TORCHTRACK_H

#include <gst/base/gstbasetransform.h>

#include "gst/torchinfer/torchinfer-helpers.h"

G_BEGIN_DECLS

#define GST_TYPE_TORCHTRACK (gst_torchtrack_get_type())
G_DECLARE_FINAL_TYPE(GstTorchTrack, gst_torchtrack, GST, TORCHTRACK, GstBaseTransform)

GST_ELEMENT_REGISTER_DECLARE(torchtrack);

/* Param structure torchtrack adds to each tracked detection ROI: "id" (int,
 * from 1 per stream), "predicted" (boolean), "age" (int, frames). The name
 * and "id" are what DL Streamer's RegionOfInterest.object_id() reads; apps
 * read it with gst_torch_roi_get_object_id() (torchinfer-helpers.h). */
#define GST_TORCHTRACK_OBJECT_ID_STRUCTURE_NAME GST_TORCH_OBJECT_ID_STRUCTURE_NAME

/* Frames on which tracks started or ended carry a GstCustomMeta of this
 * name: structure "torchtrack-events" whose "events" array holds the same
 * structures as the element messages (torchtrack-track-started / -ended).
 * Tracks ended by EOS or a flush have no frame: messages only. */
#define GST_TORCHTRACK_EVENTS_META_NAME "GstTorchTrackEventsMeta"

/* Registers that custom meta; idempotent (done when the plugin loads). */
void gst_torchtrack_events_meta_register(void);

G_END_DECLS

#endif
