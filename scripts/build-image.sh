#!/usr/bin/env bash
# Builds the torchinfer-server image from deploy/container/Containerfile with
# podman (Debian 12: apt-get install podman; its build is buildah's).
#   scripts/build-image.sh [TAG]          default tag localhost/torchinfer:latest
# Where no registry is reachable, the debian:bookworm base is made here with
# debootstrap from this machine's configured Debian apt sources and
# `podman import`ed as localhost/debian:bookworm (TORCHINFER_BASE=local forces
# that; it needs root and debootstrap).
# The build compiles the whole project (about 35 min on 2 shared cores, see
# docs/deployment.md); a rebuild after a source change reuses ccache objects
# from a build cache mount. Environment:
#   TORCHINFER_BASE=auto|local|registry   where the base comes from (auto)
#   TORCHINFER_BUILD_NETWORK=host|default the build's RUN network (detected)
#   TORCHINFER_BUILD_ISOLATION=oci|chroot the build's RUN isolation (detected)
#   TORCHINFER_NO_CCACHE=1                build without the ccache mount's objects
# Prints the base's debootstrap time, the build time and the sizes of the
# final image and of the build stage.
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=${1:-localhost/torchinfer:latest}
BASE_MODE=${TORCHINFER_BASE:-auto}
LOCAL_BASE=localhost/debian:bookworm
REGISTRY_BASE=docker.io/library/debian:bookworm
BUILD_STAGE_TAG=${TAG%:*}-build:${TAG##*:}

command -v podman >/dev/null || { echo "build-image: podman is not installed (apt-get install podman)" >&2; exit 1; }

# The configured Debian bookworm sources (not third-party or other releases),
# from apt's own view of them, as one-line entries: "deb URL SUITE COMPONENT".
debian_sources() {
  apt-cache policy 2>/dev/null | awk '
    /^ *[0-9]+ https?:\/\// {url = $2; split($3, s, "/"); suite = s[1]; comp = s[2]}
    /^ +release .*o=Debian,.*n=bookworm[,-]/ && url {print "deb " url " " suite " " comp; url = ""}' | sort -u
}

make_local_base() {
  command -v debootstrap >/dev/null || { echo "build-image: no registry and no debootstrap (apt-get install debootstrap)" >&2; exit 1; }
  [ "$(id -u)" -eq 0 ] || { echo "build-image: debootstrap needs root" >&2; exit 1; }
  local root mirror sources t0
  sources=$(debian_sources)
  mirror=$(awk '$3 == "bookworm" {print $2; exit}' <<<"$sources")
  [ -n "$mirror" ] || { mirror=http://deb.debian.org/debian; sources="deb $mirror bookworm main"; }
  root=$(mktemp -d /var/tmp/torchinfer-bookworm-XXXXXX)
  echo "build-image: making $LOCAL_BASE with debootstrap from $mirror"
  t0=$(date +%s)
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 \
    || { echo "build-image: debootstrap failed, see $root.log" >&2; tail -5 "$root.log" >&2; exit 1; }
  # The image's apt sees the same Debian sources as this machine (updates
  # and security included), and keeps no package lists or caches.
  echo "$sources" > "$root/etc/apt/sources.list"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
  # PATH as the registry's debian image sets it: an imported tarball has no
  # environment, and `kube play` runs the command without a default PATH.
  tar --numeric-owner -C "$root" -c . | podman import -q --change 'CMD ["bash"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$LOCAL_BASE" >/dev/null
  rm -rf "$root" "$root.log"
  echo "build-image: base $LOCAL_BASE made in $(($(date +%s) - t0)) s"
}

base=$REGISTRY_BASE
case "$BASE_MODE" in
  local) make_local_base; base=$LOCAL_BASE ;;
  registry) podman pull -q "$base" >/dev/null ;;
  auto)
    if ! podman image exists "$base" 2>/dev/null && ! podman pull -q "$base" >/dev/null 2>&1; then
      echo "build-image: $REGISTRY_BASE cannot be pulled (no registry reachable?): using $LOCAL_BASE"
      podman image exists "$LOCAL_BASE" 2>/dev/null || make_local_base
      base=$LOCAL_BASE
    fi ;;
  *) echo "build-image: TORCHINFER_BASE=$BASE_MODE: expected auto, local or registry" >&2; exit 1 ;;
esac

# What this host needs to run containers (runtime, rlimits; CONTAINERS_CONF),
# then what a build container needs: a plain Debian 12 host runs RUN steps
# in their own network namespace (netavark bridge) under crun and needs
# neither. Where a RUN still fails: the host network, then chroot isolation.
# shellcheck source=scripts/podman-host.sh
. scripts/podman-host.sh
trap 'rm -f "${PODMAN_HOST_CONF:-}"' EXIT
podman_host_setup "$base"
[ -z "$PODMAN_HOST_FIXES" ] || echo "build-image: this host needs $PODMAN_HOST_FIXES ($CONTAINERS_CONF)"
build_flags=()
probe_build() {
  local dir
  dir=$(mktemp -d)
  printf 'FROM %s\nRUN getent hosts deb.debian.org >/dev/null || true\n' "$base" > "$dir/Containerfile"
  podman build "$@" -q --layers=false -f "$dir/Containerfile" -t localhost/torchinfer-probe "$dir" >/dev/null 2>&1
  local rc=$?
  podman rmi -f localhost/torchinfer-probe >/dev/null 2>&1 || true
  rm -rf "$dir"
  return $rc
}
if [ -n "${TORCHINFER_BUILD_NETWORK:-}" ] || [ -n "${TORCHINFER_BUILD_ISOLATION:-}" ]; then
  [ -z "${TORCHINFER_BUILD_NETWORK:-}" ] || build_flags+=(--network "$TORCHINFER_BUILD_NETWORK")
  [ -z "${TORCHINFER_BUILD_ISOLATION:-}" ] || build_flags+=(--isolation "$TORCHINFER_BUILD_ISOLATION")
elif probe_build; then
  :
elif probe_build --network host; then
  build_flags=(--network host)
elif probe_build --network host --isolation chroot; then
  build_flags=(--network host --isolation chroot)
else
  echo "build-image: cannot run a build container here (podman info, and try: podman build --network host --isolation chroot)" >&2
  exit 1
fi
[ ${#build_flags[@]} -eq 0 ] || echo "build-image: builds here need ${build_flags[*]}"

ccache_arg=()
[ -z "${TORCHINFER_NO_CCACHE:-}" ] || ccache_arg=(--build-arg CCACHE=0)

build() {
  # --format docker: OCI images drop HEALTHCHECK.
  podman build --format docker --layers --ignorefile deploy/container/containerignore \
    "${build_flags[@]}" "${ccache_arg[@]}" --build-arg BASE="$base" \
    -f deploy/container/Containerfile "$@" .
}
start=$(date +%s)
build -t "$TAG"
end=$(date +%s)
# The build stage again, from the layer cache (seconds), for its size.
build --target build -t "$BUILD_STAGE_TAG" >/dev/null
mb() { echo $(($(podman image inspect "$1" --format '{{.Size}}') / 1000000)); }
echo "build-image: $TAG built in $((end - start)) s, $(mb "$TAG") MB (build stage $BUILD_STAGE_TAG: $(mb "$BUILD_STAGE_TAG") MB)"
