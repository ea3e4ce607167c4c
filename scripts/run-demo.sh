#!/usr/bin/env bash
# Builds, starts distarrayd with 4 simulated devices (or the GPUs, with BACKEND=cuda) on a free
# loopback port (its health port free too), runs the demo client against it, and stops the daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build=${BUILD_DIR:-build}
dir=$(mktemp -d)
trap 'kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; rm -rf "$dir"' EXIT
"$build/server/distarrayd" --backend="${BACKEND:-host}" --host_devices=4 \
  --listen=127.0.0.1:0 --port_file="$dir/port" --health_listen=127.0.0.1:0 --metrics_listen= &
daemon=$!
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
[ -s "$dir/port" ] || { echo "run-demo: distarrayd did not start" >&2; exit 1; }
"$build/client/distarray_demo" --server="127.0.0.1:$(cat "$dir/port")"
