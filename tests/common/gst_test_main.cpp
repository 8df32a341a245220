// GoogleTest main for tests that use GStreamer: gst_init once, and make
// g_warning/g_critical visible as failures unless a test expects them.
#include <gst/gst.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <system_error>

int main(int argc, char** argv) {
  // Each run writes its scratch files (testing::TempDir()) into a folder of
  // its own: two test binaries running at once (meson's parallel runs, the
  // leak-check run) must not read each other's files.
  std::string scratch;
  if (!g_getenv("TEST_TMPDIR")) {
    if (gchar* dir = g_dir_make_tmp("torchinfer-test-XXXXXX", nullptr)) {
      scratch = dir;
      g_free(dir);
      g_setenv("TEST_TMPDIR", (scratch + "/").c_str(), TRUE);
    }
  }
  gst_init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int ret = RUN_ALL_TESTS();
  // Lets GST_TRACERS=leaks report what is still alive (scripts/sanitize.sh).
  gst_deinit();
  if (!scratch.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(scratch, ignored);
  }
  return ret;
}
