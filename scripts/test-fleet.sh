#!/usr/bin/env bash
# Opt-in (not in CI: it installs podman and pulls or debootstraps Debian):
# builds the image, plays two shards with `podman kube play`
# (deploy/kubernetes/podman/fleet-2.yaml), and checks the probes, the split
# of the 8 cameras (no overlap, no gap) and the metrics' shard labels.
# Prints the image size, the build time and each pod's start to /readyz 200.
#   scripts/test-fleet.sh            (root, or rootless podman)
#   SKIP_BUILD=1 scripts/test-fleet.sh   reuse localhost/torchinfer:latest
# shellcheck disable=SC2086  # id lists are printed on one line on purpose
set -euo pipefail
cd "$(dirname "$0")/.."
command -v podman >/dev/null || { echo "test-fleet: installing podman"; apt-get install -y -qq podman; }
command -v jq >/dev/null || { echo "test-fleet: needs jq (apt-get install jq)" >&2; exit 1; }

if [ -z "${SKIP_BUILD:-}" ]; then scripts/build-image.sh localhost/torchinfer:latest; fi

play=$(mktemp /tmp/torchinfer-fleet-XXXXXX.yaml)
sed "s|@MODELS_DIR@|$PWD/models/demo|" deploy/kubernetes/podman/fleet-2.yaml > "$play"
cleanup() { podman kube down "$play" >/dev/null 2>&1 || true; rm -f "$play"; }
trap cleanup EXIT
podman kube down "$play" >/dev/null 2>&1 || true

start=$(date +%s.%N)
podman kube play "$play" >/dev/null
fail=0
for k in 0 1; do
  port=$((18080 + k))
  ready=""
  for _ in $(seq 1 600); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ]; then
      ready=$(date +%s.%N); break
    fi
    sleep 0.5
  done
  if [ -z "$ready" ]; then echo "FAIL: shard $k not ready in 300 s"; fail=1; continue; fi
  echo "shard $k: pod start to /readyz 200: $(awk "BEGIN {printf \"%.1f\", $ready - $start}") s"
  for probe in livez startupz; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/$probe")
    [ "$code" = 200 ] || { echo "FAIL: shard $k /$probe $code"; fail=1; }
  done
  curl -s "http://127.0.0.1:$port/metrics" > "/tmp/torchinfer-fleet-metrics-$k.txt"
  if grep -v '^#' "/tmp/torchinfer-fleet-metrics-$k.txt" | grep -qv "shard=\"$k\""; then
    echo "FAIL: shard $k has samples without shard=\"$k\""; fail=1
  fi
  promtool check metrics < "/tmp/torchinfer-fleet-metrics-$k.txt" || { echo "FAIL: promtool (shard $k)"; fail=1; }
done

owned0=$(curl -s http://127.0.0.1:18080/shard | jq -r '.owned[]' | sort)
owned1=$(curl -s http://127.0.0.1:18081/shard | jq -r '.owned[]' | sort)
all=$(printf '%s\n%s\n' "$owned0" "$owned1" | sort)
echo "shard 0 owns:" $owned0  # one line
echo "shard 1 owns:" $owned1
[ -z "$(comm -12 <(echo "$owned0") <(echo "$owned1"))" ] || { echo "FAIL: overlap"; fail=1; }
[ "$all" = "$(printf 'cam%d\n' 0 1 2 3 4 5 6 7 | sort)" ] || { echo "FAIL: gap:" $all; fail=1; }
size=$(podman image inspect localhost/torchinfer:latest --format '{{.Size}}')
echo "image localhost/torchinfer:latest: $((size / 1000000)) MB"
if [ "$fail" != 0 ]; then echo "test-fleet: FAIL"; exit 1; fi
echo "test-fleet: PASS"
