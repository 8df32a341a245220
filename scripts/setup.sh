#!/usr/bin/env bash
# Installs the Debian 12 packages torchinfer needs to build, run its demo and
# run its tests, then configures and builds it in ./build. Idempotent: apt is
# only called for packages that are missing, and meson only reconfigures
# what changed.
#
# Usage: setup.sh [TARGET...]: builds only the named ninja targets and what
# they need (scripts/demo.sh: the plugin, its runtime and the QA app, not
# the tests); no target: everything (scripts/test.sh).
#
# Once every package was found installed, build/setup-packages.stamp keeps
# the package list, and later runs skip the package check while the list
# is unchanged (delete the stamp to check again).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential meson ninja-build pkg-config ccache  # ccache: rebuilds of a clean clone reuse objects
  universal-ctags  # scripts/check_house.sh: each function's first and last line
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-x fonts-dejavu-core
  gstreamer1.0-plugins-bad libgstrtspserver-1.0-dev  # RTSP: openh264enc/dec, h264parse; gst-rtsp-server
  gstreamer1.0-libav gstreamer1.0-plugins-ugly  # tests/bench/rtsp_density.py: avdec_h264 (the decoder the field benchmarks), x264enc for its clip
  libopencv-dev libtorch-dev libdnnl-dev nlohmann-json3-dev zlib1g-dev
  libzip-dev  # the TorchScript archive checks (src/engine/zip_check.cpp)
  libgtest-dev libgmock-dev libbenchmark-dev
  libmosquitto-dev mosquitto mosquitto-clients  # mosquitto_sub in docs/elements.md
  python3-torch python3-torchvision python3-numpy python3-pil
  python3-opencv python3-matplotlib  # tests/bench/compare.sh: naive Python baseline, plots
  libsoup-3.0-dev chromium chromium-driver prometheus  # torchinfer-server: HTTP server; dashboard test; promtool
  prometheus-cpp-dev  # torchinfer-server's /metrics text (TextSerializer)
  curl jq  # tests/bench/server_churn.sh
  python3-yaml  # tests/deploy/check_manifests.py: the Kubernetes manifests parse
  libaravis-dev libusb-1.0-0-dev aravis-tools aravis-tools-cli  # aravis:// cameras; arv-fake-gv-camera-0.8 for tests, arv-tool-0.8
  libzxing-dev python3-zxing-cpp  # torchcodes: DataMatrix/QR/1D reading; tests render their symbols
  nodejs  # the OPC UA bridge (deploy/opcua-bridge; Debian 12's 18 or NodeSource's 20); npm: below
  libmodbus-dev python3-pymodbus python3-serial-asyncio  # PLC output (docs/line-io.md); pymodbus plays the PLC in tests (it imports serial_asyncio)
)

stamp=build/setup-packages.stamp
wanted="$(printf '%s\n' "${PACKAGES[@]}")"
missing=()
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The OPC UA bridge's node-opcua and mqtt, at the versions its
# package-lock.json pins, from the npm registry: only when node_modules is
# missing or the lock changed. Debian's npm only when there is no npm: a
# NodeSource nodejs brings its own and conflicts with Debian's. Not for
# named targets (scripts/demo.sh): the demo does not use the bridge.
if [ $# -eq 0 ]; then
  bridge=deploy/opcua-bridge
  if ! command -v npm >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "setup: installing npm"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm
  fi
  lock_sum="$(sha256sum "$bridge/package-lock.json" | cut -d' ' -f1)"
  if [ "$(cat "$bridge/node_modules/.torchinfer-lock.sha256" 2>/dev/null)" != "$lock_sum" ]; then
    echo "setup: npm ci in $bridge"
    (cd "$bridge" && npm ci --omit=dev --no-audit --no-fund)
    echo "$lock_sum" >"$bridge/node_modules/.torchinfer-lock.sha256"
  fi
fi

if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release
fi
# Here every package is installed (apt-get would have failed otherwise).
[ -f "$stamp" ] && [ "$(cat "$stamp")" == "$wanted" ] || printf '%s\n' "$wanted" >"$stamp"
# Use both cores but no more: the machine may be a 2-core line PC.
ninja -C build -j "$(nproc)" "$@"
