#!/usr/bin/env bash
# Runs the daemon and the engine under AddressSanitizer (LeakSanitizer included) and
# UndefinedBehaviorSanitizer, host backend only:
# - distarrayd and the unit tests (which link the engine in-process) come from the clang tree it
#   shares with the fuzzer (scripts/sanitized-tree.sh: build-fuzz/, or $FUZZ_BUILD_DIR);
# - the integration tests are the Release tree's own program (build/, or $BUILD_DIR), pointed at
#   the sanitized daemon through $DISTARRAYD. Every daemon they start, cluster members included,
#   is the sanitized one: the daemon is what faces hostile requests. Compiling the test program a
#   second time under the sanitizers was the largest part of this stage on a fresh clone; the
#   price is that the C++ SDK's code now runs under the sanitizers only as far as the unit tests
#   and the demo client (run here too) reach it.
# The unit and the integration tests run in two shards side by side (one ASan process keeps one
# core busy), the heaviest cluster instances left out (below).
# The tests that time the daemon against a clock run alone after them: DeadlineResults
# (sub-second deadlines), Cluster (a lost member found within seconds), Drain and Health (grace
# periods), the sessions' leases and the daemon's SIGTERM bound.
#
# Every process writes its sanitizer reports to files in one directory (log_path): a report from
# a daemon child, including a leak report at its exit, fails this script even when the test that
# started it did not notice.
set -euo pipefail
cd "$(dirname "$0")/.."
release=${BUILD_DIR:-build}
# Up to date when scripts/test.sh built the tree just before; compiles what changed otherwise.
cmake --build "$release" --parallel "${JOBS:-$(nproc)}" --target distarray_integration_tests
integration="$release/tests/distarray_integration_tests"
# The sanitized tree is shared with the fuzzer (scripts/sanitized-tree.sh): clang, ASan+UBSan.
build=$(bash scripts/sanitized-tree.sh distarray_unit_tests distarrayd distarray_probe \
  distarray_demo)
export DISTARRAYD="$PWD/$build/server/distarrayd"
export DISTARRAY_PROBE="$PWD/$build/server/distarray_probe"
# Tests that measure the daemon's memory or time it against a margin skip (sanitized_daemon.h).
export DISTARRAY_SANITIZED_DAEMON=1

reports=$(mktemp -d)
shard_logs=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$reports" "$shard_logs"
}
trap cleanup EXIT
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:log_path=$reports/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan"
if [ -s tests/sanitizers/lsan.supp ]; then
  export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
fi
# The CUDA backend is not built here; a run that requires it is a GPU run, not this one.
unset DISTARRAY_REQUIRE_BACKENDS
# A hung test ends the stage instead of the CI job's own limit.
limit=${SANITIZE_TIMEOUT:-1800}

# Runs "$@" in $shards gtest shards side by side, each bounded by $limit; prints their output in
# order; fails when any shard fails.
shards=2
sharded() {
  local i failed=0
  for ((i = 0; i < shards; i++)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "$limit" "$@" \
      >"$shard_logs/$i.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < shards; i++)); do
    wait "${pids[$i]}" || failed=1
    cat "$shard_logs/$i.log"
  done
  pids=()
  return "$failed"
}

status=0
echo "sanitize: unit tests"
sharded "$build/tests/distarray_unit_tests" --gtest_brief=1 || status=1
echo "sanitize: the demo client, sanitized, against a sanitized daemon"
run_demo() {
  local dir="$shard_logs/demo" daemon ok=0
  mkdir -p "$dir"
  "$DISTARRAYD" --backend=host --host_devices=4 --listen=127.0.0.1:0 --port_file="$dir/port" \
    --health_listen=127.0.0.1:0 --metrics_listen= >"$dir/daemon.log" 2>&1 &
  daemon=$!
  pids+=("$daemon")
  for _ in $(seq 300); do [ -s "$dir/port" ] && break; sleep 0.1; done
  if [ -s "$dir/port" ]; then
    timeout "$limit" "$build/client/distarray_demo" --server="127.0.0.1:$(cat "$dir/port")" \
      >"$dir/demo.log" 2>&1 || ok=1
  else
    ok=1
  fi
  # SIGTERM drains and exits 0; LeakSanitizer checks the daemon at that exit.
  kill -TERM "$daemon" 2>/dev/null || true
  wait "$daemon" || ok=1
  pids=()
  [ "$ok" -eq 0 ] || cat "$dir/daemon.log" "$dir/demo.log" >&2
  return "$ok"
}
run_demo || status=1
echo "sanitize: integration tests (host backend, sanitized daemons)"
timed='DeadlineResults.*:Cluster*:Drain.*:Health.*:*SessionsTest.*:*LimitsTest.Sigterm*'
# Over the two-node cluster, the suites whose many iterations each cross between the nodes
# (solvers, every reduction in every layout, random takes, 30,000-tile plans: 370 of the 535 s
# the cluster instances take in the Release run) stay out; the rest of the cluster instances,
# the Cluster tests and the member's own tests with mutated messages cover the cluster's code.
heavy='*SparseSolverTest.*/host_cluster:*ReduceTest.*/host_cluster:*TakeTest.*/host_cluster:'
heavy+='*PlanningTest.*/host_cluster'
sharded "$integration" --gtest_brief=1 --gtest_filter="-*cuda*:$timed:$heavy" || status=1
timeout "$limit" "$integration" --gtest_brief=1 --gtest_filter="$timed:-*cuda*" || status=1

shopt -s nullglob
found=("$reports"/*)
if [ ${#found[@]} -gt 0 ]; then
  for f in "${found[@]}"; do
    echo "sanitize: report from $(basename "$f"):" >&2
    cat "$f" >&2
  done
  status=1
fi
if [ "$status" -ne 0 ]; then
  echo "sanitize: FAILED" >&2
  exit 1
fi
echo "sanitize: passed (ASan, LSan, UBSan)"
