/* Public metadata of the torchinfer plugin (installed header).
 *
 * GstTorchTensorMeta: the model outputs for one video frame, plus what an
 * application needs to interpret them (model input size, frame->model
 * transform, timing). Tensor memory is shared with the batch output and kept
 * alive by a reference the meta holds: no copy per frame.
 *
 * Classification results are a GstCustomMeta named
 * GST_TORCH_CLASSIFICATION_META_NAME whose GstStructure "classification" has
 * the top-1 result as "label" (string), "label_id" (int), "confidence"
 * (double), and the whole top-k, best first, as the arrays "labels",
 * "label_ids", "confidences". Any application (C or Python through GI) reads
 * it with gst_buffer_get_custom_meta() + gst_custom_meta_get_structure().
 *
 * Detections (torchnms) are one GstVideoRegionOfInterestMeta per object: the
 * pixel box in frame coordinates (rounded outwards), roi_type = the label,
 * and a GstStructure param named "detection" with "label" (string),
 * "label_id" (int), "confidence" (double) and "x_min", "y_min", "x_max",
 * "y_max" (doubles, normalised to 0..1 of the frame; exact, not rounded) —
 * ROI ids are 0, 1, ... in the order attached, best first;
 * the layout DL Streamer uses. gst_buffer_add_torch_detection() and
 * gst_torch_detection_from_roi() write and read it; any application can read
 * it with stock API (gst_video_region_of_interest_meta_get_param()).
 *
 * Classified regions (torchinfer inference-region=roi-list): each ROI meta
 * the element inferred gets a param GstStructure named "classification"
 * (GST_TORCH_ROI_CLASSIFICATION_STRUCTURE_NAME) with "label" (string),
 * "label_id" (int), "confidence" (double), the top-k arrays "labels",
 * "label_ids", "confidences" (best first), "model" (string: model file),
 * "model-instance-id" (string, "" when unset), "element" (string: the
 * torchinfer element's name), "inferred" (boolean: FALSE when the result
 * was reused from an earlier frame, reclassify-interval) and "result-pts"
 * (guint64: PTS of the frame it was computed on). One structure per
 * classifying element: a second element adds its own (several structures
 * named "classification" on one ROI, told apart by "element"); the same
 * element running again replaces its own. The raw outputs are a
 * GstTorchTensorMeta per region with roi_id = the ROI meta's id.
 *
 * Anomaly results (torchinfer with task "anomaly"): the frame, or in
 * roi-list mode each inferred ROI, gets a "classification" as above with
 * label "normal" (label_id 0) or "anomalous" (label_id 1), confidence =
 * score when anomalous, 1 - score when normal (score clamped to 0..1), and
 * an "anomaly" GstStructure (GST_TORCH_ANOMALY_STRUCTURE_NAME): on the frame
 * in a GstCustomMeta named GST_TORCH_ANOMALY_META_NAME, on a ROI as a param.
 * Its fields: "score" (double: normalised 0..1 with the sidecar's
 * thresholds, else the raw score), "raw_score" (double: the model's score,
 * or its map's maximum), "anomalous" (boolean: score >= "threshold"),
 * "threshold" (double), "normalized" (boolean), "map" (string: the name of
 * the tensor in the GstTorchTensorMeta that holds the [1,1,h,w] map, "" when
 * the model gives none) and, to threshold the map the same way,
 * "map_threshold" (double: cells whose value, normalised when "normalized",
 * is >= it are anomalous) with, when normalised, "map_norm_threshold",
 * "map_norm_min", "map_norm_max" (doubles, raw units: normalised =
 * clamp((raw - map_norm_threshold) / (map_norm_max - map_norm_min) + 0.5,
 * 0, 1)). On a ROI it also has "model", "model-instance-id", "element",
 * "inferred" and "result-pts" like its "classification". A result with
 * NaN/infinite outputs gets neither structure (valid = FALSE on its meta).
 */
#ifndef GST_TORCHINFER_META_H
#define GST_TORCHINFER_META_H

#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

#define GST_TORCH_MAX_DIMS 8

typedef enum {
  GST_TORCH_DTYPE_FLOAT32,
  GST_TORCH_DTYPE_FLOAT64,
  GST_TORCH_DTYPE_INT32,
  GST_TORCH_DTYPE_INT64,
  GST_TORCH_DTYPE_UINT8,
  GST_TORCH_DTYPE_INT8,
  GST_TORCH_DTYPE_BOOL,
} GstTorchDType;

typedef struct {
  gchar* name; /* "output", "output0".., or the model's dict key */
  GstTorchDType dtype;
  guint n_dims;
  gint64 dims[GST_TORCH_MAX_DIMS]; /* this frame's slice: dims[0] == 1 */
  gconstpointer data;              /* row-major, contiguous */
  gsize size;                      /* bytes */
} GstTorchTensor;

/* model_x = frame_x * scale_x + offset_x (same for y); letterbox padding
 * appears as the offsets. Map a model point back with (m - offset) / scale. */
typedef struct {
  gdouble scale_x, scale_y;
  gdouble offset_x, offset_y;
} GstTorchTransform;

/* Why a frame carries a result it was not inferred on
 * (GstTorchTensorMeta.skip_reason; the stats' frames-skipped-* names). */
typedef enum {
  GST_TORCH_SKIP_NONE,       /* inferred (or a reader older than the field) */
  GST_TORCH_SKIP_INTERVAL,   /* not due: inference-interval */
  GST_TORCH_SKIP_BUSY,       /* drop-policy skip: the model was busy */
  GST_TORCH_SKIP_NO_REGIONS, /* roi-list: no region due */
  GST_TORCH_SKIP_FAILED,     /* its pixels could not be read */
  GST_TORCH_SKIP_STILL,      /* inference-gate=motion: nothing moved since result_pts */
} GstTorchSkipReason;

typedef struct {
  GstMeta meta;

  gchar* model; /* model file path */
  gchar* model_instance_id;
  guint input_width, input_height; /* model input size */
  guint frame_width, frame_height; /* frame the tensors were computed from */
  GstTorchTransform transform;
  guint64 preprocess_ns;
  guint64 inference_ns; /* forward() of the batch this frame was in */
  guint batch_size;     /* frames in that batch (all streams sharing the model) */
  guint batch_index;    /* this frame's position in it */
  guint64 queue_ns;     /* from preprocessed to the batch starting */
  /* FALSE on frames that were not inferred (inference-interval, or skipped
   * under load by drop-policy): they carry the latest result of their
   * stream, computed on the frame whose PTS is result_pts. */
  gboolean inferred;
  GstClockTime result_pts;

  guint n_tensors;
  GstTorchTensor* tensors;

  /*< private >*/
  GBytes* owner; /* keeps the tensors' memory alive */

  /*< public >*/
  /* FALSE when a float output of this frame holds NaN or infinity: the
   * tensors are attached as computed, but they mean nothing, so torchinfer
   * attaches no classification and torchnms no detections for the frame.
   * Added last to keep the layout of the fields above. */
  gboolean valid;
  /* -1: a result for the whole frame (or its crop). Otherwise the id of the
   * GstVideoRegionOfInterestMeta whose pixels were inferred
   * (inference-region=roi-list); frame_width/height stay the frame's and
   * transform maps frame pixels to the model input of that region. */
  gint roi_id;
  /* inferred FALSE: why. GST_TORCH_SKIP_STILL (inference-gate=motion) means
   * nothing moved since result_pts: the result describes this frame too,
   * and torchtrack holds its tracks still rather than predicting them on.
   * Added last to keep the layout of the fields above. */
  GstTorchSkipReason skip_reason;
  /* inference-region=tiles: tile_count tiles of the frame were inferred and
   * this is tile tile_index of them (row by row); roi_id is -1 and transform
   * maps frame pixels to the model input of that tile. torchnms decodes the
   * tiles of a frame together and merges their detections across the tile
   * borders. -1 and 0 on every other meta. */
  gint tile_index;
  guint tile_count;
} GstTorchTensorMeta;

#define GST_TORCH_TENSOR_META_API_TYPE (gst_torch_tensor_meta_api_get_type())
#define GST_TORCH_TENSOR_META_INFO (gst_torch_tensor_meta_get_info())
#define GST_TORCH_CLASSIFICATION_META_NAME "GstTorchClassificationMeta"

GType gst_torch_tensor_meta_api_get_type(void);
const GstMetaInfo* gst_torch_tensor_meta_get_info(void);

/* Adds a meta with n_tensors zeroed tensors; takes a reference on owner.
 * Fill tensors[i] (name via g_strdup) and the other fields afterwards. */
GstTorchTensorMeta* gst_buffer_add_torch_tensor_meta(GstBuffer* buffer, guint n_tensors,
                                                     GBytes* owner);

/* The first tensor meta of the whole frame (roi_id -1), or NULL. Per-region
 * tensor metas (roi-list) and tiles' (tile_count > 0) are skipped: iterate them with
 * gst_buffer_iterate_meta_filtered(), or look one up with
 * gst_buffer_get_torch_tensor_meta_for_roi(). */
GstTorchTensorMeta* gst_buffer_get_torch_tensor_meta(GstBuffer* buffer);

/* The tensor meta computed on the ROI meta with this id; with model
 * non-NULL, only one whose model path equals it (two classifiers on one
 * object). NULL if none. */
GstTorchTensorMeta* gst_buffer_get_torch_tensor_meta_for_roi(GstBuffer* buffer, gint roi_id,
                                                             const gchar* model);

/* The tensor called name, or NULL. */
const GstTorchTensor* gst_torch_tensor_meta_get_tensor(GstTorchTensorMeta* meta, const gchar* name);

const gchar* gst_torch_dtype_to_string(GstTorchDType dtype);

#define GST_TORCH_DETECTION_STRUCTURE_NAME "detection"

/* One detection; label points into the ROI meta's structure (valid while
 * the buffer lives). Coordinates are normalised to the frame (0..1). */
typedef struct {
  const gchar* label;
  gint label_id;
  gdouble confidence;
  gdouble x_min, y_min, x_max, y_max;
} GstTorchDetection;

/* Adds a region-of-interest meta for a box given in frame pixels, with its
 * "detection" param. NULL if the buffer is not writable or the frame size
 * is 0. */
GstVideoRegionOfInterestMeta* gst_buffer_add_torch_detection(GstBuffer* buffer, const gchar* label,
                                                             gint label_id, gdouble confidence,
                                                             gdouble x_min, gdouble y_min,
                                                             gdouble x_max, gdouble y_max,
                                                             guint frame_width, guint frame_height);

/* Fills out from the ROI's "detection" param; FALSE if it has none or a field
 * is missing. */
gboolean gst_torch_detection_from_roi(GstVideoRegionOfInterestMeta* roi, GstTorchDetection* out);

/* Line and zone counts (torchanalytics): a GstCustomMeta of this name on
 * every frame the element passes, whose GstStructure "torchanalytics" has
 * "stream-id" (string) and the counts so far of that stream, cumulative:
 * "lines", an array of structures "line" with "name" (string), "forward",
 * "backward" (guint64), "by-class", an array of structures "class" with
 * "label" (string), "forward", "backward" (guint64), and "points" (array of
 * doubles x1, y1, x2, y2: frame pixels); "zones", an array of structures
 * "zone" with "name" (string), "inside" (guint64: tracked objects inside
 * now), "entered", "exited" (guint64) and "points" (x1, y1, x2, y2, ...: the
 * outline in frame pixels); and "events", an array of the
 * structures of the element messages this frame caused
 * ("torchanalytics-crossing", "-zone-entered", "-zone-exited"; see
 * docs/elements.md). Each detection ROI the element saw gets a param
 * structure "analytics" with "zones", an array of the names (strings) of
 * the zones it is in. */
#define GST_TORCH_ANALYTICS_META_NAME "GstTorchAnalyticsMeta"
#define GST_TORCH_ANALYTICS_ROI_STRUCTURE_NAME "analytics"

/* Registers the analytics custom meta; idempotent. */
void gst_torch_analytics_meta_register(void);

#define GST_TORCH_ROI_CLASSIFICATION_STRUCTURE_NAME "classification"

/* Iterates the "classification" params of a ROI (one per classifying
 * element, in the order attached): start with *state = NULL; returns NULL
 * after the last. The structures belong to the ROI meta. */
const GstStructure* gst_torch_roi_iterate_classifications(GstVideoRegionOfInterestMeta* roi,
                                                          gpointer* state);

/* The "classification" param a given element (its name) attached, or with
 * element NULL the first one; NULL if none. */
const GstStructure* gst_torch_roi_get_classification(GstVideoRegionOfInterestMeta* roi,
                                                     const gchar* element);

/* Registers the classification custom meta; idempotent. */
void gst_torch_classification_meta_register(void);

#define GST_TORCH_ANOMALY_META_NAME "GstTorchAnomalyMeta"
#define GST_TORCH_ANOMALY_STRUCTURE_NAME "anomaly"

/* Registers the anomaly custom meta; idempotent. */
void gst_torch_anomaly_meta_register(void);

/* The frame's "anomaly" structure, or NULL. It belongs to the buffer. */
const GstStructure* gst_buffer_get_torch_anomaly(GstBuffer* buffer);

/* The "anomaly" param a given element (its name) attached to the ROI, or
 * with element NULL the first one; NULL if none. */
const GstStructure* gst_torch_roi_get_anomaly(GstVideoRegionOfInterestMeta* roi,
                                              const gchar* element);

/* Codes read by torchcodes (DataMatrix, QR, 1D; zxing-cpp). Each detection
 * ROI whose code is known gets a param structure "code" with "format"
 * (string, zxing-cpp's name: "DataMatrix", "QRCode", "Code128", ...),
 * "text" (string, UTF-8, at most 1024 bytes), "x_min", "y_min", "x_max",
 * "y_max" (doubles, frame pixels: the symbol's corners) and "frame" (guint64:
 * the element's frame count when it was read; a track's code rides on its
 * later frames too). A frame read whole (full-frame) gets a GstCustomMeta
 * of this name whose structure "codes" has "codes", an array of such "code"
 * structures (empty when none was found). */
#define GST_TORCH_CODES_META_NAME "GstTorchCodesMeta"
#define GST_TORCH_CODES_STRUCTURE_NAME "codes"
#define GST_TORCH_CODE_STRUCTURE_NAME "code"

/* Registers the codes custom meta; idempotent. */
void gst_torch_codes_meta_register(void);

/* The frame's "codes" structure, or NULL. It belongs to the buffer. */
const GstStructure* gst_buffer_get_torch_codes(GstBuffer* buffer);

/* The ROI's "code" param, or NULL. It belongs to the ROI meta. */
const GstStructure* gst_torch_roi_get_code(GstVideoRegionOfInterestMeta* roi);

/* Masks (torchnms with decoder yolov8-seg): each detection ROI gets a
 * param structure "mask" (GST_TORCH_MASK_STRUCTURE_NAME) with "x", "y",
 * "width", "height" (uint: the frame-pixel grid the mask covers, the
 * detection's box rounded outwards, as the ROI meta's own), "area"
 * (guint64: pixels set), "threshold" (double: torchnms' mask-threshold),
 * "encoding" (string "rle-rows") and "rle" (array of uint): run lengths in
 * row-major order over the grid (row 0 left to right, then row 1, ...),
 * alternating unset, set, unset, ..., starting with unset (a first run of
 * 0 when the first pixel is set); they sum to width * height. Pixel
 * (x + i, y + j) is set when the pixel index j * width + i falls in a set
 * run. */
#define GST_TORCH_MASK_STRUCTURE_NAME "mask"

/* The ROI's "mask" param, or NULL. It belongs to the ROI meta. */
const GstStructure* gst_torch_roi_get_mask(GstVideoRegionOfInterestMeta* roi);

/* Rotated boxes (torchnms decoder=yolov8-obb): each such detection ROI
 * also gets a param GstStructure named "rotated_box" with "cx", "cy"
 * (centre, frame pixels), "width", "height" (frame pixels, along the box's
 * own axes; the width axis is the box's x axis) and "angle" (degrees,
 * clockwise in image coordinates, i.e. from +x towards +y, in [-90, 90)),
 * all doubles. The ROI's pixel box and the "detection" box are the
 * axis-aligned bounds of the rotated box, clipped to the frame; the rotated
 * box itself is not clipped. torchinfer inference-region=roi-list cuts a
 * deskewed crop of it (docs/elements.md). */
#define GST_TORCH_ROTATED_BOX_STRUCTURE_NAME "rotated_box"

typedef struct {
  gdouble cx, cy, width, height, angle;
} GstTorchRotatedBox;

/* Adds the "rotated_box" param; FALSE (nothing added) for a non-finite
 * value or a width or height not above 0. */
gboolean gst_torch_roi_add_rotated_box(GstVideoRegionOfInterestMeta* roi,
                                       const GstTorchRotatedBox* box);

/* Fills out from the ROI's "rotated_box" param; FALSE if it has none, or a
 * field is missing, not finite, or a size not above 0. */
gboolean gst_torch_roi_get_rotated_box(GstVideoRegionOfInterestMeta* roi, GstTorchRotatedBox* out);

G_END_DECLS

#endif
