#!/usr/bin/env bash
# Checks the daemon's metrics and the monitoring artifacts with promtool (Debian's `prometheus`
# package carries it; scripts/install-deps.sh installs the binary alone):
#   - the alert rules of deploy/monitoring/prometheus-rule.yaml (promtool check rules on the rule
#     groups under `spec:`) and their unit tests (tests/monitoring/rules_test.yaml);
#   - every query of deploy/monitoring/dashboard.json parses (as recording rules; needs python3);
#   - a real scrape: distarrayd on the host backend serves the demo client's calls, then its
#     /metrics must pass `promtool check metrics` and hold the families the dashboard reads.
# Takes a few seconds. Usage: scripts/check-metrics.sh (after scripts/build.sh); PROMTOOL=path.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
promtool=${PROMTOOL:-promtool}
command -v "$promtool" >/dev/null || {
  echo "check-metrics: promtool not found (scripts/install-deps.sh installs it)" >&2
  exit 1
}
dir=$(mktemp -d)
daemon=
cleanup() {
  if [ -n "$daemon" ]; then
    kill "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

# The PrometheusRule's `spec:` holds plain rule groups, indented two spaces.
sed -n '/^spec:/,$p' deploy/monitoring/prometheus-rule.yaml | tail -n +2 | sed 's/^  //' \
  > "$dir/rules.yaml"
"$promtool" check rules "$dir/rules.yaml"
cp tests/monitoring/rules_test.yaml "$dir/"
(cd "$dir" && "$promtool" test rules rules_test.yaml)

if command -v python3 >/dev/null; then
  # Grafana's variables are not PromQL: give them values a query may hold.
  python3 - deploy/monitoring/dashboard.json "$dir/dashboard-rules.yaml" <<'PY'
import json, sys
dashboard = json.load(open(sys.argv[1]))
exprs = []
def walk(panels):
    for p in panels:
        walk(p.get("panels", []))
        exprs.extend(t["expr"] for t in p.get("targets", []) if "expr" in t)
walk(dashboard["panels"])
with open(sys.argv[2], "w") as out:
    out.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        e = e.replace("$__rate_interval", "5m").replace("$instance", ".*")
        out.write(f"      - record: dashboard:query_{i}\n        expr: {json.dumps(e)}\n")
print(f"check-metrics: {len(exprs)} dashboard queries")
PY
  "$promtool" check rules "$dir/dashboard-rules.yaml"
else
  echo "check-metrics: no python3; the dashboard's queries are not checked"
fi

# A real scrape. The metrics port is picked at random and tried again if it was taken.
for attempt in 1 2 3 4 5; do
  port=$((20000 + RANDOM % 20000))
  rm -f "$dir/port"
  # Its health port too is a free one, so a daemon already running here does not stop this one.
  DISTARRAY_HEALTH_LISTEN=127.0.0.1:0 "$build/server/distarrayd" --backend=host --host_devices=4 \
    --listen=127.0.0.1:0 \
    --port_file="$dir/port" --metrics_listen="127.0.0.1:$port" --log_level=warn \
    >"$dir/daemon.log" 2>&1 &
  daemon=$!
  for _ in $(seq 100); do
    [ -s "$dir/port" ] && break
    kill -0 "$daemon" 2>/dev/null || break
    sleep 0.1
  done
  [ -s "$dir/port" ] && break
  wait "$daemon" 2>/dev/null || true
  daemon=
done
[ -n "$daemon" ] || { cat "$dir/daemon.log" >&2; echo "check-metrics: distarrayd did not start" >&2; exit 1; }
"$build/client/distarray_demo" --server="127.0.0.1:$(cat "$dir/port")" >"$dir/demo.log" 2>&1 \
  || { cat "$dir/demo.log" >&2; exit 1; }

# GET /metrics without curl: bash's /dev/tcp, HTTP/1.0 so the server closes when done.
scrape() {
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  # The body follows the first empty line.
  tr -d '\r' <&3 | sed '1,/^$/d'
  exec 3<&-
}
scrape >"$dir/metrics.txt"
"$promtool" check metrics <"$dir/metrics.txt"
for family in grpc_server_started_total grpc_server_handled_total grpc_server_handling_seconds \
  grpc_server_msg_received_total grpc_server_msg_sent_total distarray_build_info \
  distarray_device_memory_used_bytes distarray_device_memory_limit_bytes distarray_device_arrays \
  distarray_device_reshard_bytes_total distarray_device_allocation_failures_total \
  distarray_device_sticky_error distarray_graph_cache_hits_total distarray_graph_launches_total \
  distarray_graph_iterations_total distarray_transfer_bytes_total process_cpu_seconds_total \
  process_resident_memory_bytes process_open_fds process_start_time_seconds \
  distarray_tenant_memory_used_bytes; do
  grep -q "^# TYPE $family " "$dir/metrics.txt" || {
    echo "check-metrics: the scrape has no $family" >&2
    exit 1
  }
done
# The metrics port is unauthenticated: without --metrics_tenant_labels=on it names no tenant.
if grep -q 'tenant="' "$dir/metrics.txt"; then
  echo "check-metrics: a tenant label on the metrics port without --metrics_tenant_labels=on" >&2
  exit 1
fi
# The demo's calls are there, by method and code.
grep -Eq '^grpc_server_handled_total\{grpc_code="OK",grpc_method="UploadArray",[^}]*\} [1-9]' \
  "$dir/metrics.txt" || { echo "check-metrics: no successful UploadArray counted" >&2; exit 1; }
echo "check-metrics: $(grep -vc '^#' "$dir/metrics.txt") samples, promtool clean"
