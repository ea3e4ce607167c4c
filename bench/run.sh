#!/usr/bin/env bash
# Runs every benchmark on a GPU machine as one command and prints one table:
#   bench/run.sh BIN_DIR [OUT_DIR]
# BIN_DIR holds distarrayd, distarray_bench, kernel_bench, loop_bench, cg_bench,
# request_graph_bench, scan_bench and peer_limit.
# Needs python3 with cupy for the CuPy and cupyx peers (skipped with a note when absent).
# BENCH_ONLY=compute,latency bench/run.sh BIN_DIR runs only those sections of distarray_bench
# (reshard, transfer, shm, latency, compute; default: all) and only the peers they need. The
# section "kernels" runs kernel_bench (the compute kernels' device time against a device copy and
# CUB, and its 16-bit and complex rows against CuPy); "loop" runs loop_bench (the seed's loop through RunGraph) against loop_peers.py; "cg"
# runs cg_bench (conjugate gradient, the whole solve in one RunGraph) against cg_peers.py;
# "reqgraph" runs request_graph_bench (a many-piece reshard eagerly against the same op as a cached
# one-statement RunGraph program); "scan" runs scan_bench (cumulative_sum of 1 GiB) against
# cupy_scan.py and the device-copy limit; "python"
# runs python_transfer_bench.py (the Python SDK's 1 GiB transfers through gRPC and shared memory,
# against a host memcpy and the C++ SDK's figures of section "transfer") when python3 can import
# distarray (pip install ./client/python, or PYTHONPATH naming an installed copy).
set -euo pipefail
bin=$(cd "${1:?usage: bench/run.sh BIN_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d)}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0  # never NVLink multicast on shared hosts
only=${BENCH_ONLY:-}
want() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
# No stale peer figures.
rm -f "$out/cupyx.txt" "$out/cupy_compute.txt" "$out/loop_peers.txt" "$out/cg_peers.txt" \
  "$out/cupy_scan.txt"

echo "== limits: peer and device copies (peer_limit)"
"$bin/peer_limit" | tee "$out/peer.txt"
if want kernels; then
  echo "== the compute kernels alone against a device copy and CUB (kernel_bench)"
  "$bin/kernel_bench" | tee "$out/kernels.txt"
  echo "== peer: CuPy's float16 A + B against the 16-bit rows (cupy_half.py)"
  python3 "$here/cupy_half.py" --kernels="$out/kernels.txt" | tee "$out/cupy_half.txt" ||
    echo "cupy unavailable" >&2
  echo "== peer: CuPy's complex A * B and A / B against the complex rows (cupy_complex.py)"
  python3 "$here/cupy_complex.py" --kernels="$out/kernels.txt" | tee "$out/cupy_complex.txt" ||
    echo "cupy unavailable" >&2
fi
if want reshard; then
  echo "== peer: cupyx.distributed.array reshards"
  python3 "$here/cupyx_reshard.py" | tee "$out/cupyx.txt" || echo "cupyx unavailable" >&2
fi
if want compute; then
  # A + B, sum and matmul in CuPy on one GPU and in cupyx over all of them (TF32 off).
  echo "== peer: CuPy and cupyx.distributed.array compute"
  python3 "$here/cupy_compute.py" | tee "$out/cupy_compute.txt" \
    || echo "cupy_compute.py failed: the CuPy figures are missing" >&2
fi
if want loop; then
  echo "== peers: the seed's loop in NumPy, CuPy and JAX (loop_peers.py)"
  python3 "$here/loop_peers.py" | tee "$out/loop_peers.txt" || echo "loop_peers.py failed" >&2
fi
if want cg; then
  echo "== peers: conjugate gradient in CuPy and JAX (cg_peers.py)"
  python3 "$here/cg_peers.py" | tee "$out/cg_peers.txt" || echo "cg_peers.py failed" >&2
fi

echo "== distarrayd"
rm -f "$out/port"
"$bin/distarrayd" --backend=cuda --listen=127.0.0.1:0 --port_file="$out/port" \
  --metrics_listen=127.0.0.1:19464 ${DISTARRAYD_FLAGS:-} >"$out/daemon.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null || true' EXIT
for _ in $(seq 200); do [ -s "$out/port" ] && break; sleep 0.1; done
[ -s "$out/port" ] || { cat "$out/daemon.log"; exit 1; }
if want loop; then
  "$bin/loop_bench" --server="127.0.0.1:$(cat "$out/port")" --peers_file="$out/loop_peers.txt" \
    | tee "$out/loop.txt"
fi
if want reqgraph; then
  "$bin/request_graph_bench" --server="127.0.0.1:$(cat "$out/port")" | tee "$out/reqgraph.txt"
fi
if want cg; then
  "$bin/cg_bench" --server="127.0.0.1:$(cat "$out/port")" --peers_file="$out/cg_peers.txt" \
    | tee "$out/cg.txt"
fi
if want scan; then
  echo "== peer: cupy.cumsum (cupy_scan.py)"
  python3 "$here/cupy_scan.py" | tee "$out/cupy_scan.txt" || echo "cupy unavailable" >&2
  "$bin/scan_bench" --server="127.0.0.1:$(cat "$out/port")" --peers_file="$out/cupy_scan.txt" \
    --peer_file="$out/peer.txt" | tee "$out/scan.txt"
fi
# distarray_bench's sections: what --only names besides "kernels", "loop", "cg" and "python".
bench_only=$(echo "$only" | tr ',' '\n' | grep -v -e '^kernels$' -e '^loop$' -e '^cg$' -e '^python$' -e '^reqgraph$' -e '^scan$' \
  | paste -sd, || true)
if [ -z "$only" ] || [ -n "$bench_only" ]; then
  # An empty gRPC server in a process of its own, for the latency section: the transport any
  # daemon pays, beside the in-process empty call.
  baseline_flag=
  if want latency; then
    rm -f "$out/baseline_port"
    "$bin/distarray_bench" --serve_baseline_port_file="$out/baseline_port" &
    baseline=$!
    trap 'kill $daemon $baseline 2>/dev/null; wait $daemon $baseline 2>/dev/null || true' EXIT
    for _ in $(seq 100); do [ -s "$out/baseline_port" ] && break; sleep 0.1; done
    [ -s "$out/baseline_port" ] && baseline_flag="--baseline_server=127.0.0.1:$(cat "$out/baseline_port")"
  fi
  "$bin/distarray_bench" --server="127.0.0.1:$(cat "$out/port")" --peer_file="$out/peer.txt" \
    --cupyx_file="$out/cupyx.txt" --compute_file="$out/cupy_compute.txt" $baseline_flag \
    ${bench_only:+--only="$bench_only"} | tee "$out/bench.txt"
fi
if want python; then
  echo "== Python SDK transfers (python_transfer_bench.py)"
  if python3 -c 'import distarray' 2>/dev/null; then
    # The C++ SDK's gRPC figures of this run, when section "transfer" ran.
    cpp() { awk -F'|' -v m="$1" '$2 ~ m {gsub(/[^0-9.]/, "", $3); print $3; exit}' "$out/bench.txt" 2>/dev/null; }
    up=$(cpp "upload 1 GiB \\(SDK"); down=$(cpp "download 1 GiB \\(SDK")
    python3 "$here/python_transfer_bench.py" --address="127.0.0.1:$(cat "$out/port")" \
      ${up:+--cpp_upload_GBps="$up"} ${down:+--cpp_download_GBps="$down"} | tee "$out/python.txt"
  else
    echo "python3 cannot import distarray: the Python SDK's figures are missing" >&2
  fi
fi
# Server-side time per RPC (from the daemon's own histogram), to split RPC latency into transport
# and work.
if command -v curl >/dev/null; then
  curl -s 127.0.0.1:19464/metrics | grep -E 'grpc_server_handling_seconds_(sum|count)' \
    | grep -E 'Elementwise|Reduce|Matmul|Reshard|DeleteArray' | tee "$out/server_times.txt" \
    || echo "no server times: the daemon's /metrics did not answer" >&2
fi
