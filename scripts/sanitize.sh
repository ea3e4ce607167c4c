#!/usr/bin/env bash
# Runs the daemon and the engine under AddressSanitizer (LeakSanitizer included) and
# UndefinedBehaviorSanitizer, host backend only:
# - distarrayd and the unit tests (which link the engine in-process) come from the clang tree it
#   shares with the fuzzer (scripts/sanitized-tree.sh: build-fuzz/, or $FUZZ_BUILD_DIR);
# - the integration tests are the Release tree's own program (build/, or $BUILD_DIR, which
#   scripts/test.sh builds first), pointed at the sanitized daemon through $DISTARRAYD. They are
#   clients: what faces hostile requests is the daemon, and every daemon they start, cluster
#   members included, is the sanitized one. Compiling them a second time under the sanitizers
#   was the largest part of this stage on a fresh clone.
# The integration tests run in two shards side by side (the daemons under ASan are CPU-bound);
# DeadlineResults, which times answers against sub-second deadlines, runs alone after them.
#
# Every process writes its sanitizer reports to files in one directory (log_path): a report from
# a daemon child, including a leak report at its exit, fails this script even when the test that
# started it did not notice.
set -euo pipefail
cd "$(dirname "$0")/.."
release=${BUILD_DIR:-build}
integration="$release/tests/distarray_integration_tests"
if [ ! -x "$integration" ]; then
  echo "sanitize: $integration not found; build the Release tree first (scripts/build.sh)" >&2
  exit 1
fi
# The sanitized tree is shared with the fuzzer (scripts/sanitized-tree.sh): clang, ASan+UBSan.
build=$(bash scripts/sanitized-tree.sh distarray_unit_tests distarrayd distarray_probe)
export DISTARRAYD="$PWD/$build/server/distarrayd"
export DISTARRAY_PROBE="$PWD/$build/server/distarray_probe"

reports=$(mktemp -d)
shard_logs=$(mktemp -d)
trap 'rm -rf "$reports" "$shard_logs"' EXIT
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:log_path=$reports/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan"
if [ -s tests/sanitizers/lsan.supp ]; then
  export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
fi
# The CUDA backend is not built here; a run that requires it is a GPU run, not this one.
unset DISTARRAY_REQUIRE_BACKENDS

status=0
echo "sanitize: unit tests"
"$build/tests/distarray_unit_tests" --gtest_brief=1 || status=1
echo "sanitize: integration tests (host backend, sanitized daemons)"
shards=2
pids=()
for ((i = 0; i < shards; i++)); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$integration" --gtest_brief=1 \
    --gtest_filter='-*cuda*:DeadlineResults.*' >"$shard_logs/$i.log" 2>&1 &
  pids+=($!)
done
for ((i = 0; i < shards; i++)); do
  wait "${pids[$i]}" || status=1
  cat "$shard_logs/$i.log"
done
"$integration" --gtest_brief=1 --gtest_filter='DeadlineResults.*' || status=1

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
