#!/usr/bin/env bash
# meson test --wrapper: ASan's runtime first in the test process and in every
# process it starts (gst-launch-1.0, the plugin scanner, the apps), but not
# in meson or the Python model generators. libstdc++ is preloaded too: ASan
# resolves its __cxa_throw interceptor at start-up, and in an uninstrumented
# gst-launch-1.0 libstdc++ arrives only later with the plugin, so the first
# C++ exception would abort ("real___cxa_throw != 0").
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so.6)" exec "$@"
