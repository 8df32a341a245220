// GoogleTest main for tests that use GStreamer: gst_init once, and make
// g_warning/g_critical visible as failures unless a test expects them.
#include <gst/gst.h>
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  gst_init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
