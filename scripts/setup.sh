#!/usr/bin/env bash
# Installs the Debian 12 packages torchinfer needs to build, run its demo and
# run its tests, then configures and builds it in ./build. Idempotent: apt is
# only called for packages that are missing, and meson only reconfigures
# what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential meson ninja-build pkg-config ccache  # ccache: rebuilds of a clean clone reuse objects
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-x fonts-dejavu-core
  gstreamer1.0-plugins-bad libgstrtspserver-1.0-dev  # RTSP: openh264enc/dec, h264parse; gst-rtsp-server
  libopencv-dev libtorch-dev libdnnl-dev nlohmann-json3-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libmosquitto-dev mosquitto mosquitto-clients  # mosquitto_sub in docs/elements.md
  python3-torch python3-torchvision python3-numpy python3-pil
  python3-opencv python3-matplotlib  # tests/bench/compare.sh: naive Python baseline, plots
  libsoup-3.0-dev chromium chromium-driver prometheus  # torchinfer-server: HTTP server; dashboard test; promtool
  curl jq  # tests/bench/server_churn.sh
  python3-yaml  # tests/deploy/check_manifests.py: the Kubernetes manifests parse
  libaravis-dev libusb-1.0-0-dev aravis-tools aravis-tools-cli  # aravis:// cameras; arv-fake-gv-camera-0.8 for tests, arv-tool-0.8
  libmodbus-dev python3-pymodbus python3-serial-asyncio  # PLC output (docs/line-io.md); pymodbus plays the PLC in tests (it imports serial_asyncio)
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release
fi
# Use both cores but no more: the machine may be a 2-core line PC.
ninja -C build -j "$(nproc)"
