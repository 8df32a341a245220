#!/usr/bin/env bash
# meson test --wrapper: ASan's runtime first in the test process and in every
# process it starts (gst-launch-1.0, the plugin scanner), but not in meson
# or the Python model generators.
LD_PRELOAD=$(gcc -print-file-name=libasan.so) exec "$@"
