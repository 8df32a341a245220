#!/usr/bin/env bash
# The SDK as a user gets it: install the build into a scratch folder
# (meson install --destdir), build tests/sdk/app.c against the installed
# header and pkg-config file only, and run it with GStreamer finding the
# installed plugin only (never the build tree's). Checks the install layout,
# the .pc file, where every torchinfer file came from, and the app's exact
# output on yolo_candidates.pt.
#   test_install.sh BUILD_DIR SOURCE_DIR MODEL MESON
set -euo pipefail
build=$1
src=$2
model=$3
meson=$4

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
fail() { echo "FAIL: $*" >&2; exit 1; }

# meson test puts the build tree's library folders on LD_LIBRARY_PATH, which
# would outrank the install's RUNPATHs: drop them.
kept=()
IFS=: read -ra entries <<<"${LD_LIBRARY_PATH:-}"
for e in "${entries[@]}"; do
  case "$(realpath -m "$e")/" in "$(realpath -m "$build")/"*) ;; *) [ -n "$e" ] && kept+=("$e") ;; esac
done
if [ ${#kept[@]} -gt 0 ]; then
  LD_LIBRARY_PATH=$(IFS=:; echo "${kept[*]}")
  export LD_LIBRARY_PATH
else
  unset LD_LIBRARY_PATH
fi

"$meson" install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "meson install failed"; }

# Layout, relative to the configured prefix.
pc=$(find "$dest" -name gstreamer-torchinfer-1.0.pc)
[ -n "$pc" ] || fail "no gstreamer-torchinfer-1.0.pc installed"
prefix=$(pkg-config --variable=prefix "$pc")
libdir=$(pkg-config --variable=libdir "$pc")
[ "$pc" = "$dest$libdir/pkgconfig/gstreamer-torchinfer-1.0.pc" ] || fail ".pc at $pc, libdir $libdir"
for f in "$libdir/gstreamer-1.0/libgsttorchinfer.so" "$libdir/libtorchinfer-runtime.so" \
  "$libdir/libgsttorchinfer-meta-1.0.so" "$prefix/include/gstreamer-1.0/gst/torchinfer/torchinfer-meta.h" \
  "$prefix/include/gstreamer-1.0/gst/torchinfer/torchinfer-helpers.h"; do
  [ -f "$dest$f" ] || fail "not installed: $f"
done
# Nothing but the loader in the plugin folder: GStreamer would try to load
# anything else there as a plugin.
extra=$(ls "$dest$libdir/gstreamer-1.0" | grep -vx libgsttorchinfer.so || true)
[ -z "$extra" ] || fail "unexpected files in the plugin folder: $extra"

# The .pc names the GStreamer packages the header includes.
requires=$(pkg-config --print-requires "$pc" | awk '{print $1}' | sort | tr '\n' ' ')
[ "$requires" = "gstreamer-1.0 gstreamer-video-1.0 " ] || fail "Requires: $requires"

# The installed .pc holds the configured prefix; point a copy at the scratch
# folder, as relocating an install does.
mkdir "$tmp/pkgconfig"
sed "s|^prefix=.*|prefix=$dest$prefix|" "$pc" >"$tmp/pkgconfig/gstreamer-torchinfer-1.0.pc"
export PKG_CONFIG_PATH=$tmp/pkgconfig
cflags=$(pkg-config --cflags gstreamer-torchinfer-1.0)
case " $cflags " in *" -I$dest$prefix/include/gstreamer-1.0 "*) ;; *) fail "Cflags: $cflags" ;; esac
libs=$(pkg-config --libs gstreamer-torchinfer-1.0)
case " $libs " in *" -L$dest$libdir -lgsttorchinfer-meta-1.0 "*) ;; *) fail "Libs: $libs" ;; esac

make -s -f "$src/tests/sdk/Makefile" OUT="$tmp" >"$tmp/make.log" 2>&1 ||
  { cat "$tmp/make.log" >&2; fail "the app does not build against the install"; }
# The compiler saw the installed header, not the source tree's.
for h in torchinfer-meta.h torchinfer-helpers.h; do
  header=$(tr ' \\' '\n\n' <"$tmp/torchinfer-sdk-app.d" | grep "/$h\$")
  [ "$header" = "$dest$prefix/include/gstreamer-1.0/gst/torchinfer/$h" ] ||
    fail "header used: $header"
done
# The app and the runtime both resolve the metadata library in the install.
for bin in "$tmp/torchinfer-sdk-app" "$dest$libdir/libtorchinfer-runtime.so"; do
  got=$(ldd "$bin" | awk '/libgsttorchinfer-meta-1.0/ {print $3}')
  [ "$got" = "$dest$libdir/libgsttorchinfer-meta-1.0.so.0" ] || fail "$bin loads the meta library from '$got'"
done

# GStreamer sees the installed plugin folder and the system folders only,
# with a registry of its own (the test environment's points at the build).
run() {
  env -u GST_PLUGIN_PATH_1_0 -u TORCHINFER_RUNTIME \
    GST_PLUGIN_PATH="$dest$libdir/gstreamer-1.0" GST_REGISTRY="$tmp/registry.bin" \
    GST_DEBUG_NO_COLOR=1 "$@"
}
run gst-inspect-1.0 torchinfer >"$tmp/inspect.txt" 2>&1 || { cat "$tmp/inspect.txt" >&2; fail "gst-inspect-1.0 torchinfer"; }
grep -qx "  Filename                 $dest$libdir/gstreamer-1.0/libgsttorchinfer.so" "$tmp/inspect.txt" ||
  { cat "$tmp/inspect.txt" >&2; fail "gst-inspect-1.0 shows another plugin file"; }

run GST_DEBUG=torchinfer-loader:4 "$tmp/torchinfer-sdk-app" "$model" \
  "videotestsrc pattern=white num-buffers=2 ! video/x-raw,format=YUY2,width=640,height=512" \
  >"$tmp/out.txt" 2>"$tmp/err.txt" || { cat "$tmp/out.txt" "$tmp/err.txt" >&2; fail "the app failed"; }
grep -qF "runtime $dest$libdir/gstreamer-1.0/../libtorchinfer-runtime.so;" "$tmp/err.txt" ||
  { cat "$tmp/err.txt" >&2; fail "the loader did not open the installed runtime"; }

# yolo_candidates on a white 640x512 frame: the six boxes worked out in
# tests/pipelines/test_launch.cpp (Detection.Yolov5LayoutExactBoxesAt640x512).
expected=$tmp/expected.txt
echo "plugin $dest$libdir/gstreamer-1.0/libgsttorchinfer.so" >"$expected"
for i in 0 1; do
  cat >>"$expected" <<EOF
frame $i: tensors 1 input 320x256 frame 640x512 inferred 1
frame $i: tensor output float32 [1,8,8] 256 bytes
frame $i: detection bolt (0) 1.000 box 0.4375,0.4219-0.5625,0.5781 pixels 280,216 80x80
frame $i: detection nut (1) 0.950 box 0.8750,0.0000-1.0000,0.0781 pixels 560,0 80x40
frame $i: detection bolt (0) 0.900 box 0.1500,0.1562-0.3500,0.3438 pixels 96,80 128x96
frame $i: detection nut (1) 0.700 box 0.1625,0.1641-0.3625,0.3516 pixels 104,84 128x96
frame $i: detection washer (2) 0.600 box 0.6250,0.5078-0.8750,0.7422 pixels 400,260 160x120
frame $i: detection bolt (0) 0.500 box 0.0000,0.8594-0.1562,1.0000 pixels 0,440 100x72
frame $i: 6 detections
EOF
done
echo "frames 2" >>"$expected"
diff -u "$expected" "$tmp/out.txt" || fail "the app's output differs from the expected (diff above)"
echo "ok: installed SDK at $prefix (destdir), app built and run against it"
