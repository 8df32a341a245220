#!/usr/bin/env bash
# Builds the torchinfer-server image from deploy/container/Containerfile with
# podman (or buildah), Debian 12 packages: apt-get install podman (or buildah).
#   scripts/build-image.sh [TAG]          default tag localhost/torchinfer:latest
# Where no registry is reachable, the debian:bookworm base is made here with
# debootstrap from this machine's configured apt mirror and `podman import`ed
# (TORCHINFER_BASE=local forces that; it needs root and debootstrap).
# Prints the image size and the build time. The build compiles the whole
# project: expect tens of minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=${1:-localhost/torchinfer:latest}
BASE_MODE=${TORCHINFER_BASE:-auto}
LOCAL_BASE=localhost/debian:bookworm

tool=""
for t in podman buildah; do command -v "$t" >/dev/null && { tool=$t; break; }; done
[ -n "$tool" ] || { echo "build-image: neither podman nor buildah is installed (apt-get install podman)" >&2; exit 1; }

# The first deb line of the apt sources (one-line or deb822 format).
apt_mirror() {
  local m
  m=$(grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | grep -v security | awk '{for(i=2;i<=NF;i++) if ($i ~ /^https?:/) {print $i; exit}}' | head -1)
  [ -n "$m" ] || m=$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources | grep -v security | awk '{print $2}' | head -1)
  echo "${m:-http://deb.debian.org/debian}"
}

make_local_base() {
  command -v debootstrap >/dev/null || { echo "build-image: no registry and no debootstrap (apt-get install debootstrap)" >&2; exit 1; }
  [ "$(id -u)" -eq 0 ] || { echo "build-image: debootstrap needs root" >&2; exit 1; }
  local root mirror
  root=$(mktemp -d /tmp/torchinfer-bookworm-XXXXXX)
  mirror=$(apt_mirror)
  echo "build-image: making $LOCAL_BASE with debootstrap from $mirror"
  debootstrap --variant=minbase bookworm "$root" "$mirror"
  # The image's own apt sees the same mirror.
  echo "deb $mirror bookworm main" > "$root/etc/apt/sources.list"
  tar -C "$root" -c . | podman import - "$LOCAL_BASE"
  rm -rf "$root"
}

base=docker.io/library/debian:bookworm
if [ "$BASE_MODE" = local ]; then
  make_local_base; base=$LOCAL_BASE
elif [ "$BASE_MODE" = auto ] && ! podman image exists "$base" 2>/dev/null && ! podman pull -q "$base" >/dev/null 2>&1; then
  podman image exists "$LOCAL_BASE" 2>/dev/null || make_local_base
  base=$LOCAL_BASE
fi

start=$(date +%s)
# --format docker: OCI images drop HEALTHCHECK.
if [ "$tool" = podman ]; then
  podman build --format docker --build-arg BASE="$base" -f deploy/container/Containerfile -t "$TAG" .
else
  buildah bud --format docker --build-arg BASE="$base" -f deploy/container/Containerfile -t "$TAG" .
fi
end=$(date +%s)
size=$(podman image inspect "$TAG" --format '{{.Size}}' 2>/dev/null || echo 0)
echo "build-image: $TAG built in $((end - start)) s, $((size / 1000000)) MB"
