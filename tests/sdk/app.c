/* A minimal application built against an installed torchinfer (public
 * header + gstreamer-torchinfer-1.0.pc, never the source tree): runs
 *   SOURCE ! torchinfer model=MODEL ! torchnms ! fakesink
 * and prints, per frame, the GstTorchTensorMeta and every detection ROI.
 *
 * Build:  cc app.c -o torchinfer-sdk-app $(pkg-config --cflags --libs gstreamer-torchinfer-1.0)
 * Run:    ./torchinfer-sdk-app MODEL.pt ["videotestsrc num-buffers=3 ! video/x-raw,..."]
 */
#include <gst/gst.h>
#include <gst/torchinfer/torchinfer-helpers.h>
#include <gst/torchinfer/torchinfer-meta.h>
#include <gst/video/video.h>

static guint frame_count = 0;

static void print_tensor_meta(GstTorchTensorMeta* meta) {
  g_print("frame %u: tensors %u input %ux%u frame %ux%u inferred %d\n", frame_count,
          meta->n_tensors, meta->input_width, meta->input_height, meta->frame_width,
          meta->frame_height, meta->inferred);
  for (guint i = 0; i < meta->n_tensors; i++) {
    const GstTorchTensor* t = &meta->tensors[i];
    GString* dims = g_string_new(NULL);
    for (guint d = 0; d < t->n_dims; d++)
      g_string_append_printf(dims, "%s%" G_GINT64_FORMAT, d ? "," : "", t->dims[d]);
    g_print("frame %u: tensor %s %s [%s] %" G_GSIZE_FORMAT " bytes\n", frame_count, t->name,
            gst_torch_dtype_to_string(t->dtype), dims->str, t->size);
    g_string_free(dims, TRUE);
  }
}

/* Detections in the order torchnms attached them (best first), read with
 * the installed helper API. */
static gboolean print_detection(GstVideoRegionOfInterestMeta* roi, const GstTorchDetection* det,
                                gpointer user_data) {
  (void)user_data;
  g_print("frame %u: detection %s (%d) %.3f box %.4f,%.4f-%.4f,%.4f pixels %u,%u %ux%u\n",
          frame_count, det->label, det->label_id, det->confidence, det->x_min, det->y_min,
          det->x_max, det->y_max, roi->x, roi->y, roi->w, roi->h);
  return TRUE;
}

static guint print_detections(GstBuffer* buffer) {
  return gst_torch_buffer_foreach_detection(buffer, print_detection, NULL);
}

static GstPadProbeReturn on_buffer(GstPad* pad, GstPadProbeInfo* info, gpointer user_data) {
  (void)pad;
  (void)user_data;
  GstBuffer* buffer = GST_PAD_PROBE_INFO_BUFFER(info);
  GstTorchTensorMeta* meta = gst_buffer_get_torch_tensor_meta(buffer);
  if (meta)
    print_tensor_meta(meta);
  else
    g_print("frame %u: no tensor meta\n", frame_count);
  guint n = print_detections(buffer);
  g_print("frame %u: %u detections\n", frame_count, n);
  frame_count++;
  return GST_PAD_PROBE_OK;
}

/* Which file the torchinfer element came from: shows which install is used. */
static void print_plugin_file(void) {
  GstElementFactory* factory = gst_element_factory_find("torchinfer");
  if (!factory) return;
  GstPlugin* plugin = gst_plugin_feature_get_plugin(GST_PLUGIN_FEATURE(factory));
  if (plugin) {
    g_print("plugin %s\n", gst_plugin_get_filename(plugin));
    gst_object_unref(plugin);
  }
  gst_object_unref(factory);
}

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  if (argc < 2) {
    g_printerr("usage: %s MODEL.pt [SOURCE]\n", argv[0]);
    return 2;
  }
  const gchar* source = argc > 2 ? argv[2]
                                 : "videotestsrc num-buffers=3 ! "
                                   "video/x-raw,format=YUY2,width=640,height=512";
  gchar* model = g_strescape(argv[1], NULL);
  gchar* launch = g_strdup_printf("%s ! torchinfer model=\"%s\" ! torchnms ! fakesink name=sink",
                                  source, model);
  g_free(model);
  GError* error = NULL;
  GstElement* pipeline = gst_parse_launch(launch, &error);
  g_free(launch);
  if (!pipeline || error) {
    g_printerr("cannot build the pipeline: %s\n", error ? error->message : "unknown error");
    g_clear_error(&error);
    if (pipeline) gst_object_unref(pipeline);
    return 1;
  }
  print_plugin_file();

  GstElement* sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad* pad = gst_element_get_static_pad(sink, "sink");
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, NULL, NULL);
  gst_object_unref(pad);
  gst_object_unref(sink);

  int status = 0;
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus* bus = gst_element_get_bus(pipeline);
  GstMessage* msg =
      gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    gchar* debug = NULL;
    gst_message_parse_error(msg, &error, &debug);
    g_printerr("error from %s: %s\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(msg)), error->message);
    g_clear_error(&error);
    g_free(debug);
    status = 1;
  }
  gst_message_unref(msg);
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  g_print("frames %u\n", frame_count);
  return status;
}
