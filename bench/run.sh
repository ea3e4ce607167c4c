#!/usr/bin/env bash
# Runs every benchmark on a GPU machine as one command and prints one table:
#   bench/run.sh BIN_DIR [OUT_DIR]
# BIN_DIR holds distarrayd, distarray_bench and peer_limit. Needs python3 with cupy for the
# cupyx peer (skipped with a note when absent).
set -euo pipefail
bin=$(cd "${1:?usage: bench/run.sh BIN_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d)}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0  # never NVLink multicast on shared hosts

echo "== limits: peer and device copies (peer_limit)"
"$bin/peer_limit" | tee "$out/peer.txt"
echo "== peer: cupyx.distributed.array"
python3 "$here/cupyx_reshard.py" | tee "$out/cupyx.txt" || echo "cupyx unavailable" >&2

echo "== distarrayd"
rm -f "$out/port"
"$bin/distarrayd" --backend=cuda --listen=127.0.0.1:0 --port_file="$out/port" \
  --metrics_listen=127.0.0.1:19464 ${DISTARRAYD_FLAGS:-} >"$out/daemon.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null || true' EXIT
for _ in $(seq 200); do [ -s "$out/port" ] && break; sleep 0.1; done
[ -s "$out/port" ] || { cat "$out/daemon.log"; exit 1; }
"$bin/distarray_bench" --server="127.0.0.1:$(cat "$out/port")" --peer_file="$out/peer.txt" \
  --cupyx_file="$out/cupyx.txt" | tee "$out/bench.txt"
# Server-side time per RPC (from the daemon's own histogram), to split RPC latency into transport
# and work.
if command -v curl >/dev/null; then
  curl -s 127.0.0.1:19464/metrics | grep -E 'distarray_request_duration_seconds_(sum|count)' \
    | grep -E 'Elementwise|Reshard|DeleteArray' | tee "$out/server_times.txt"
fi
