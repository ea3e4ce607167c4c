#!/usr/bin/env bash
# A two-daemon cluster on this machine (docs/cluster.md) and cluster_bench against it:
#   bench/cluster_run.sh BIN_DIR [BACKEND] [MIB]
# BIN_DIR holds distarrayd and cluster_bench. BACKEND is host (two simulated devices per daemon,
# default) or cuda (each daemon takes the GPUs CUDA_VISIBLE_DEVICES gives it: on a one-GPU
# machine both share GPU 0; LEADER_GPUS and MEMBER_GPUS, where set, are each daemon's
# CUDA_VISIBLE_DEVICES, so that on a two-GPU machine each node has a GPU of its own). Prints
# cluster_bench's table; the daemons' logs go to a temporary directory named at the end.
set -euo pipefail
bin=$(cd "${1:?usage: bench/cluster_run.sh BIN_DIR [BACKEND] [MIB]}" && pwd)
backend=${2:-host}
mib=${3:-256}
out=$(mktemp -d)
common=(--backend="$backend" --host_devices=2 --cluster_size=2 --metrics_listen=
        --health_listen=127.0.0.1:0 --log_level=warn)
visible() { [ -n "${1:-}" ] && echo "CUDA_VISIBLE_DEVICES=$1" || echo "UNUSED_GPUS="; }
env "$(visible "${LEADER_GPUS:-}")" "$bin/distarrayd" "${common[@]}" --cluster_rank=0 --cluster_listen=127.0.0.1:0 \
  --cluster_port_file="$out/cluster_port" --listen=127.0.0.1:0 --port_file="$out/port" \
  > "$out/leader.log" 2>&1 &
leader=$!
trap 'kill $leader ${member:-} 2>/dev/null; wait $leader ${member:-} 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$out/cluster_port" ] && break; sleep 0.1; done
env "$(visible "${MEMBER_GPUS:-}")" "$bin/distarrayd" "${common[@]}" --cluster_rank=1 --cluster_listen=127.0.0.1:0 \
  --cluster_leader="127.0.0.1:$(cat "$out/cluster_port")" > "$out/member.log" 2>&1 &
member=$!
for _ in $(seq 300); do [ -s "$out/port" ] && break; sleep 0.1; done
[ -s "$out/port" ] || { cat "$out/leader.log" "$out/member.log" >&2; exit 1; }
# The leader's devices come first: the member's first device is the leader's count.
to=$([ "$backend" = host ] && echo 2 || echo 1)
local_to=$([ "$backend" = host ] && echo 1 || echo -1)
"$bin/cluster_bench" --server="127.0.0.1:$(cat "$out/port")" --from=0 --to="$to" \
  --local_to="$local_to" --mib="$mib"
echo "(logs: $out)"
