#!/usr/bin/env bash
# Opt-in (not in CI: it installs packages and debootstraps Debian when no
# registry is reachable): builds the image, plays two shards with
# `podman kube play` (deploy/kubernetes/podman/fleet-2.yaml), and checks the
# image (non-root, HEALTHCHECK), the probes, the split of the 8 cameras (no
# overlap, no gap; each shard refuses the other's with 421 naming the owner)
# and the metrics (every sample labelled with its shard; promtool).
# Prints the image size, the build time, each pod's start to /readyz 200 and
# the whole run's time.
#   scripts/test-fleet.sh                 as root (podman's rootful store)
#   SKIP_BUILD=1 scripts/test-fleet.sh    reuse localhost/torchinfer:latest
# shellcheck disable=SC2086  # id lists are printed on one line on purpose
set -euo pipefail
cd "$(dirname "$0")/.."
t_run=$(date +%s)
IMAGE=localhost/torchinfer:latest
# Installed when missing (Debian 12): podman and what build-image.sh may need
# (debootstrap without a registry; runc where crun refuses the host's
# cgroups), curl and jq for the checks, promtool from prometheus.
need=()
for p in podman debootstrap runc curl jq prometheus; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "test-fleet: installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ -z "${SKIP_BUILD:-}" ]; then scripts/build-image.sh "$IMAGE"; fi
podman image exists "$IMAGE" || { echo "test-fleet: no $IMAGE (run without SKIP_BUILD)" >&2; exit 1; }
# shellcheck source=scripts/podman-host.sh
. scripts/podman-host.sh
podman_host_setup "$IMAGE" || exit 1
[ -z "$PODMAN_HOST_FIXES" ] || echo "test-fleet: this host needs $PODMAN_HOST_FIXES"

fail=0
bad() { echo "FAIL: $*"; fail=1; }
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

[ "$(podman image inspect "$IMAGE" --format '{{.Config.User}}')" = torchinfer ] || bad "the image does not run as user torchinfer"
podman image inspect "$IMAGE" --format '{{.Config.Healthcheck.Test}}' | grep -q /livez || bad "the image has no HEALTHCHECK on /livez"

play=$(mktemp /tmp/torchinfer-fleet-XXXXXX.yaml)
sed "s|@MODELS_DIR@|$PWD/models/demo|" deploy/kubernetes/podman/fleet-2.yaml > "$play"
kube_flags=()
[ -z "$PODMAN_KUBE_NETWORK" ] || kube_flags=(--network "$PODMAN_KUBE_NETWORK")
cleanup() {
  podman kube down "$play" >/dev/null 2>&1 || true
  rm -f "$play" "$play.err" "${PODMAN_HOST_CONF:-}"
}
trap cleanup EXIT
podman kube down "$play" >/dev/null 2>&1 || true

# kube play's stderr has an error per container where systemd is not PID 1
# (healthcheck timers, below): kept in a file, shown if the play fails.
start=$(date +%s.%N)
podman kube play "${kube_flags[@]}" "$play" >/dev/null 2>"$play.err" || { cat "$play.err"; exit 1; }
# Both shards polled together: the first 200 of /startupz (models loaded,
# the API up) and of /readyz (every camera running), from the play.
declare -A owned started ready
since() { awk "BEGIN {printf \"%.1f\", $(date +%s.%N) - $start}"; }
while [ $(($(date +%s) - ${start%.*})) -lt 180 ]; do
  for k in 0 1; do
    url=http://127.0.0.1:$((18080 + k))
    [ -n "${started[$k]:-}" ] || [ "$(code "$url/startupz")" != 200 ] || started[$k]=$(since)
    [ -n "${ready[$k]:-}" ] || [ "$(code "$url/readyz")" != 200 ] || ready[$k]=$(since)
    # The API can come up between the two requests: ready implies started.
    [ -n "${started[$k]:-}" ] || [ -z "${ready[$k]:-}" ] || started[$k]=${ready[$k]}
  done
  [ -z "${ready[0]:-}" ] || [ -z "${ready[1]:-}" ] || break
  sleep 0.2
done
for k in 0 1; do
  url=http://127.0.0.1:$((18080 + k))
  if [ -z "${ready[$k]:-}" ]; then
    bad "shard $k not ready in 180 s: $(curl -s "$url/readyz")"
    podman logs --tail 20 "torchinfer-$k-server" 2>&1 | sed 's/^/  /'
    continue
  fi
  echo "shard $k: pod start to /startupz 200: ${started[$k]} s, to /readyz 200: ${ready[$k]} s"
  for probe in livez startupz; do
    c=$(code "$url/$probe"); [ "$c" = 200 ] || bad "shard $k /$probe $c"
  done
  # kube play turns the livenessProbe into a podman healthcheck (curl in
  # the container); its timer needs systemd, so run it once by hand.
  hc=$(podman healthcheck run "torchinfer-$k-server" 2>&1) || bad "shard $k: livenessProbe as podman healthcheck: $hc"
  [ "$(podman exec "torchinfer-$k-server" id -u)" = 10001 ] || bad "shard $k runs as $(podman exec "torchinfer-$k-server" id -u), not 10001"

  shard=$(curl -s "$url/shard")
  [ "$(jq -c '[.index, .count]' <<<"$shard")" = "[$k,2]" ] || bad "shard $k: GET /shard says $shard"
  owned[$k]=$(jq -r '.owned[]' <<<"$shard" | sort)
  listed=$(curl -s "$url/streams" | jq -r '.streams[].id' | sort)
  [ "$listed" = "${owned[$k]}" ] || bad "shard $k: GET /streams lists" $listed "but owns" ${owned[$k]}

  curl -s "$url/metrics" > "/tmp/torchinfer-fleet-metrics-$k.txt"
  if grep -v '^#' "/tmp/torchinfer-fleet-metrics-$k.txt" | grep -qv "shard=\"$k\""; then
    bad "shard $k has samples without shard=\"$k\""
  fi
  running=$(grep -c '^torchinfer_stream_state{.*state="running".*} 1$' "/tmp/torchinfer-fleet-metrics-$k.txt" || true)
  [ "$running" = "$(wc -w <<<"${owned[$k]}")" ] || bad "shard $k: $running cameras running in /metrics, owns" ${owned[$k]}
  promtool check metrics < "/tmp/torchinfer-fleet-metrics-$k.txt" || bad "promtool (shard $k)"
done

all=$(printf '%s\n%s\n' "${owned[0]:-}" "${owned[1]:-}" | sort)
echo "shard 0 owns:" ${owned[0]:-}
echo "shard 1 owns:" ${owned[1]:-}
[ -z "$(comm -12 <(echo "${owned[0]:-}") <(echo "${owned[1]:-}"))" ] || bad "overlap"
[ "$all" = "$(printf 'cam%d\n' 0 1 2 3 4 5 6 7 | sort)" ] || bad "gap:" $all

# Each shard refuses a camera of the other's with 421 naming the owner.
for k in 0 1; do
  other=$((1 - k))
  id=$(head -1 <<<"${owned[$other]:-}")
  [ -n "$id" ] || continue
  reply=$(curl -s -w '\n%{http_code}' -X POST -H 'Content-Type: application/json' \
    -d "{\"id\": \"$id\", \"uri\": \"file:///models/line.mkv\", \"json\": false}" \
    "http://127.0.0.1:$((18080 + k))/streams")
  c=$(tail -1 <<<"$reply")
  owner=$(head -1 <<<"$reply" | jq -r .owner 2>/dev/null || true)
  if [ "$c" = 421 ] && [ "$owner" = "$other" ]; then
    echo "shard $k: POST $id: 421, owner $owner"
  else
    bad "shard $k: POST $id (shard $other's): $c $(head -1 <<<"$reply")"
  fi
done

size=$(podman image inspect "$IMAGE" --format '{{.Size}}')
echo "image $IMAGE: $((size / 1000000)) MB"
echo "test-fleet: run took $(($(date +%s) - t_run)) s"
if [ "$fail" != 0 ]; then echo "test-fleet: FAIL"; exit 1; fi
echo "test-fleet: PASS"
