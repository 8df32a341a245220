#!/usr/bin/env bash
# Starts the OPC UA bridge (docs/opcua.md): torchinfer's MQTT results served
# as OPC UA nodes. Arguments go to deploy/opcua-bridge/bridge.js, e.g.
#   scripts/opcua-bridge.sh --broker mqtt://127.0.0.1:1883 --station line1=qa-line/decisions
# scripts/setup.sh installs its node modules (npm ci); without them this says so.
set -euo pipefail
dir="$(cd "$(dirname "$0")/../deploy/opcua-bridge" && pwd)"
if ! command -v node >/dev/null 2>&1; then
  echo "opcua-bridge: error: node not found; run scripts/setup.sh (it installs nodejs)" >&2
  exit 2
fi
if [ ! -d "$dir/node_modules/node-opcua" ]; then
  echo "opcua-bridge: error: $dir/node_modules has no node-opcua; run scripts/setup.sh (it runs npm ci there)" >&2
  exit 2
fi
exec node "$dir/bridge.js" "$@"
