#!/usr/bin/env bash
# OpenMP wait policies side by side (issue 16, item 3): the engine running a
# model back to back (torchinfer-bench loop, 2 threads pinned to cores 0-1)
# under each policy, interleaved policy by policy within a rep, on a machine
# left as it is ("idle") and with a busy loop pinned to core 1 ("contended").
# libgomp reads its wait settings once, when it is loaded, so each policy is
# its own process.
#
#   tests/bench/wait_policy.sh [--reps 3] [--iters 40] [--work-us 0]
#       [--models "mobilenet_v2 resnet18"] [--batches "1 4"]
#       [--policies "active passive bounded"] [--conditions "idle contended"]
#
# Policies: active (OMP_WAIT_POLICY=ACTIVE), passive (OMP_WAIT_POLICY=PASSIVE),
# spin:N (GOMP_SPINCOUNT=N, OMP_WAIT_POLICY unset), bounded (the spin the
# plugin sets on idle cores, kIdleSpinCount in src/engine/wait_policy.h; on
# busy cores it sets passive).
# Models: torchvision names (exported with random weights into
# build/bench-models by tests/bench/compare.py's rules) or paths; NAME:int8
# runs the quantized copy. --work-us adds that much busy work per frame on
# the calling thread between batches, as the streaming thread's
# preprocessing does in a pipeline (~900 us for 1080p YUY2).
# Prints every run, then medians of images/s per policy and each policy's
# ratio to the better of active and passive under the same condition.
# Not a test: figures vary with load; note `uptime` with them.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh
build=${BUILD:-$PWD/build}
reps=3 iters=40 work=0
models="mobilenet_v2 resnet18" batches="1 4"
policies="active passive bounded" conditions="idle contended"
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2 ;;
    --iters) iters=$2 ;;
    --work-us) work=$2 ;;
    --models) models=$2 ;;
    --batches) batches=$2 ;;
    --policies) policies=$2 ;;
    --conditions) conditions=$2 ;;
    --build) build=$2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
bench=$build/tests/bench/torchinfer-bench
# The spin the plugin sets on idle cores.
default_spin=$(grep -o 'kIdleSpinCount = "[0-9]*"' src/engine/wait_policy.h | grep -o '[0-9][0-9]*')
tmp=$(mktemp -d)
hog=
cleanup() { [ -n "$hog" ] && kill "$hog" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

model_path() {  # NAME[:int8] -> file
  local name=${1%:*} prec=fp32
  [[ $1 == *:int8 ]] && prec=int8
  [ -f "$name" ] && { echo "$name"; return; }
  /usr/bin/python3 - "$name" "$prec" "$build/bench-models" <<'EOF'
import sys
sys.path.insert(0, "tests/bench")
import compare
print(compare.ensure_model(sys.argv[1], sys.argv[2], sys.argv[3]))
EOF
}

policy_env() {  # policy -> env assignments for `env -u ... VAR=...`
  case $1 in
    active) echo "-u GOMP_SPINCOUNT OMP_WAIT_POLICY=ACTIVE" ;;
    passive) echo "-u GOMP_SPINCOUNT OMP_WAIT_POLICY=PASSIVE" ;;
    bounded) echo "-u OMP_WAIT_POLICY GOMP_SPINCOUNT=$default_spin" ;;
    spin:*) echo "-u OMP_WAIT_POLICY GOMP_SPINCOUNT=${1#spin:}" ;;
    *) echo "unknown policy $1" >&2; exit 2 ;;
  esac
}

declare -A paths
for m in $models; do paths[$m]=$(model_path "$m"); done

machine_line
echo "command: $0 --reps $reps --iters $iters --work-us $work --models \"$models\" --batches \"$batches\" --policies \"$policies\" --conditions \"$conditions\""
echo "bounded: GOMP_SPINCOUNT=$default_spin; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$reps"); do
  for c in $conditions; do
    if [ "$c" = contended ]; then
      taskset -c 1 sh -c 'while :; do :; done' &
      hog=$!
    fi
    for m in $models; do
      prec=fp32
      [[ $m == *:int8 ]] && prec=int8
      for b in $batches; do
        for p in $policies; do
          # shellcheck disable=SC2046
          line=$(env $(policy_env "$p") "$bench" loop --model "${paths[$m]}" --batch "$b" \
                   --threads 2 --cores 0-1 --iters "$iters" --work-us "$work" \
                   --precision "$prec" 2>/dev/null | grep '^frames=')
          fps=$(sed -E 's/.*fps=([0-9.]+).*/\1/' <<<"$line")
          echo "run rep=$r $c $m b$b $p $line load=$(cut -d' ' -f1 /proc/loadavg)"
          echo "$c $m $b $p $fps" >> "$tmp/runs"
        done
      done
    done
    if [ -n "$hog" ]; then kill "$hog"; wait "$hog" 2>/dev/null || true; hog=; fi
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"

printf "| condition | model | batch |"
for p in $policies; do printf " %s img/s |" "$p"; done
for p in $policies; do printf " %s / best fixed |" "$p"; done
echo
printf "|---|---|---|"
for p in $policies $policies; do printf -- "---|"; done
echo
for c in $conditions; do
  for m in $models; do
    for b in $batches; do
      declare -A med=()
      for p in $policies active passive; do
        med[$p]=$(awk -v c="$c" -v m="$m" -v b="$b" -v p="$p" \
                    '$1==c && $2==m && $3==b && $4==p {print $5}' "$tmp/runs" | median)
      done
      best=$(awk -v a="${med[active]:-0}" -v q="${med[passive]:-0}" 'BEGIN {print (a > q ? a : q)}')
      printf "| %s | %s | %s |" "$c" "$m" "$b"
      for p in $policies; do printf " %.1f |" "${med[$p]:-0}"; done
      for p in $policies; do
        awk -v x="${med[$p]:-0}" -v y="$best" 'BEGIN {printf " %.2f |", (y > 0 ? x / y : 0)}'
      done
      echo
      unset med
    done
  done
done
