# shellcheck shell=bash disable=SC2034  # PODMAN_* are read by the sourcing script
# Sourced by scripts/build-image.sh and scripts/test-fleet.sh: finds what
# podman needs to run containers on this host and, where the defaults fail,
# writes a containers.conf with the fix and exports CONTAINERS_CONF (podman
# and its builds read it; nothing under /etc is changed).
#   podman_host_setup IMAGE    IMAGE: any local image with /bin/sh
# On a plain Debian 12 host the defaults work (overlay storage, crun,
# cgroupfs or systemd cgroups, netavark bridge) and nothing is set. Each fix
# below is applied only when a one-line `podman run` shows the matching
# failure (docs/deployment.md, "On a restricted host"):
#   - crun 1.8 refuses a hybrid cgroup layout (v1 controllers plus a
#     cgroup2 mount with controllers: "cgroups in hybrid mode not
#     supported"): runc instead (apt-get install runc).
#   - root without CAP_SYS_RESOURCE (a container or a sandboxed VM) cannot
#     raise rlimits, and podman asks for nofile/nproc above the hard limits:
#     default_ulimits within them.
#   - no netfilter for the bridge: slirp4netns for pods
#     (PODMAN_KUBE_NETWORK), the host network for builds.
# Sets PODMAN_HOST_FIXES (what was applied, for the log) and
# PODMAN_KUBE_NETWORK (empty: podman's default).

podman_host_try() { # podman run flags...; prints podman's error on failure
  # shellcheck disable=SC2069  # stderr to the caller, stdout discarded
  podman run --rm --no-healthcheck --entrypoint /bin/sh "$@" "$PODMAN_HOST_IMAGE" -c true 2>&1 >/dev/null
}

podman_host_conf() { # runtime nofile nproc
  printf '[containers]\n' > "$PODMAN_HOST_CONF"
  [ -z "$2" ] || printf 'default_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n' "$2" "$2" "$3" "$3" >> "$PODMAN_HOST_CONF"
  printf '[engine]\n' >> "$PODMAN_HOST_CONF"
  [ -z "$1" ] || printf 'runtime = "%s"\n' "$1" >> "$PODMAN_HOST_CONF"
  export CONTAINERS_CONF=$PODMAN_HOST_CONF
}

podman_host_setup() {
  PODMAN_HOST_IMAGE=$1
  PODMAN_HOST_FIXES=""
  PODMAN_KUBE_NETWORK=""
  local err runtime="" nofile="" nproc="" nprocs
  # nproc: this shell's hard limit, then lower until conmon (whose own nproc
  # may be below this shell's) can set it.
  nprocs=("$(ulimit -Hu)" 32768 4096)
  podman info >/dev/null 2>&1 || { echo "podman-host: 'podman info' fails (storage driver? see /etc/containers/storage.conf):" >&2; podman info 2>&1 | tail -3 >&2; return 1; }
  PODMAN_HOST_CONF=$(mktemp /tmp/torchinfer-containers-XXXXXX.conf)
  # One failure shows at a time (crun sets rlimits before cgroups): fix
  # what the error names and run again.
  while ! err=$(podman_host_try --network none); do
    if grep -q "hybrid mode not supported" <<<"$err" && [ -z "$runtime" ]; then
      command -v runc >/dev/null || { echo "podman-host: crun refuses this host's hybrid cgroups and runc is missing (apt-get install runc)" >&2; return 1; }
      runtime=runc
    elif grep -qi "rlimit" <<<"$err" && [ ${#nprocs[@]} -gt 0 ]; then
      nofile=$(ulimit -Hn) nproc=${nprocs[0]}
      nprocs=("${nprocs[@]:1}")
    else
      echo "podman-host: cannot run a container here:" >&2; tail -3 <<<"$err" >&2; return 1
    fi
    podman_host_conf "$runtime" "$nofile" "$nproc"
  done
  PODMAN_HOST_FIXES="${runtime:+runtime $runtime}${nofile:+${runtime:+, }ulimits nofile=$nofile nproc=$nproc}"
  [ -n "$PODMAN_HOST_FIXES" ] || { rm -f "$PODMAN_HOST_CONF"; unset CONTAINERS_CONF; }
  podman_host_network
}

podman_host_network() {
  [ -z "${PODMAN_HOST_FORCE_SLIRP:-}" ] && podman_host_try >/dev/null && return
  podman_host_try --network slirp4netns >/dev/null || { echo "podman-host: neither the bridge nor slirp4netns networks work here" >&2; return 1; }
  PODMAN_KUBE_NETWORK=slirp4netns
  PODMAN_HOST_FIXES="${PODMAN_HOST_FIXES:+$PODMAN_HOST_FIXES, }pods on slirp4netns"
}
