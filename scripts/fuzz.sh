#!/usr/bin/env bash
# Builds the libFuzzer target tests/fuzz/request_fuzzer with clang (ASan+UBSan, host backend)
# in the tree it shares with scripts/sanitize.sh (scripts/sanitized-tree.sh: build-fuzz/, or
# $FUZZ_BUILD_DIR) and runs it for $FUZZ_SECONDS (default 90) from the
# seed corpus, which tests/fuzz/write_seeds.cc writes into the build dir (the seeds live as code,
# readable and reviewed, not as committed binaries). Fails on any crash, sanitizer report, timeout or out-of-memory; the
# input that caused it is left in $FUZZ_BUILD_DIR/fuzz-artifacts/ (replay it by passing the file
# to the fuzzer binary). New inputs go to a scratch corpus.
#   FUZZ_SECONDS=600 FUZZ_JOBS=2 scripts/fuzz.sh   # longer, on two cores
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-90}
jobs=${FUZZ_JOBS:-1}

# The same clang tree as scripts/sanitize.sh (scripts/sanitized-tree.sh), so nothing is rebuilt.
build=$(bash scripts/sanitized-tree.sh request_fuzzer write_fuzz_seeds)
seeds="$build/fuzz-seeds"
rm -rf "$seeds" && mkdir -p "$seeds"
"$build/tests/fuzz/write_fuzz_seeds" "$seeds"

symbolizer=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
[ -n "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$symbolizer"
export ASAN_OPTIONS="detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
artifacts="$(cd "$build" && pwd)/fuzz-artifacts/"
mkdir -p "$artifacts"
args=(-max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1
      -entropic_scale_per_exec_time=1 -artifact_prefix="$artifacts")
echo "fuzz: running request_fuzzer for ${seconds} s on $jobs job(s)"
status=0
if [ "$jobs" -gt 1 ]; then
  # -fork runs the jobs in child processes sharing the scratch corpus; a crash in any ends the run.
  "$build/tests/fuzz/request_fuzzer" "${args[@]}" -fork="$jobs" -ignore_crashes=0 \
    -ignore_timeouts=0 -ignore_ooms=0 "$scratch" "$seeds" 2>&1 | tail -n 60 || status=$?
else
  "$build/tests/fuzz/request_fuzzer" "${args[@]}" "$scratch" "$seeds" \
    >"$scratch.log" 2>&1 || status=$?
  grep -E '^(#[0-9]+ +(INITED|DONE)|stat::)' "$scratch.log" || true
  [ "$status" -eq 0 ] || tail -n 80 "$scratch.log" >&2
  rm -f "$scratch.log"
fi
if [ "$status" -ne 0 ]; then
  echo "fuzz: FAILED; the input is in $artifacts" >&2
  exit 1
fi
echo "fuzz: passed"
