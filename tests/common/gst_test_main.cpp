// GoogleTest main for tests that use GStreamer: gst_init once, and make
// g_warning/g_critical visible as failures unless a test expects them.
#include <gst/gst.h>
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int ret = RUN_ALL_TESTS();
  // Lets GST_TRACERS=leaks report what is still alive (scripts/sanitize.sh).
  gst_deinit();
  return ret;
}
