#!/usr/bin/env bash
# Builds the unit tests, the integration tests and distarrayd with AddressSanitizer (LeakSanitizer
# included) and UndefinedBehaviorSanitizer, host backend only, in the clang tree it shares with
# the fuzzer (scripts/sanitized-tree.sh: build-fuzz/, or $FUZZ_BUILD_DIR), and runs the unit
# tests and every integration test but the CUDA ones. The daemons the integration tests start
# come from the same build tree, so they are sanitized too.
#
# Every process writes its sanitizer reports to files in one directory (log_path): a report from
# a daemon child, including a leak report at its exit, fails this script even when the test that
# started it did not notice.
set -euo pipefail
cd "$(dirname "$0")/.."
# The sanitized tree is shared with the fuzzer (scripts/sanitized-tree.sh): clang, ASan+UBSan.
build=$(bash scripts/sanitized-tree.sh distarray_unit_tests distarray_integration_tests distarrayd)

reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT
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
echo "sanitize: integration tests (host backend)"
"$build/tests/distarray_integration_tests" --gtest_brief=1 --gtest_filter='-*cuda*' || status=1

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
