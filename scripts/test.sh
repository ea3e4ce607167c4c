#!/usr/bin/env bash
# Checks the sources' formatting first (scripts/check-format.sh: seconds, so a formatting slip fails
# before the build). Builds, then runs every test: unit tests and the integration tests that start
# the real daemon on loopback once per backend (CUDA cases skip with a message where no GPU is
# usable, unless DISTARRAY_REQUIRE_BACKENDS names them; see docs/testing.md).
# scripts/check-metrics.sh checks /metrics and deploy/monitoring/ with promtool. The Python SDK's
# pytest suite runs against the freshly built daemon (scripts/test-python.sh), then the array API
# standard's test suite against its namespace (scripts/test-array-api.sh). Then the installed C++
# SDK is built against from outside the tree (scripts/check-install.sh), and the deployment files
# are checked (scripts/check-deploy.sh). Last, the unit tests and the integration tests again
# against daemons under ASan+UBSan (scripts/sanitize.sh; their clang tree compiles in the
# background from the Python stage on) and the request fuzzer for FUZZ_SECONDS (scripts/fuzz.sh).
# SANITIZE=0, FUZZ=0, PYTHON=0, ARRAY_API=0, INSTALL=0 or METRICS=0 leaves a stage out.
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { echo "test: == $1 ($(date -u +%H:%M:%S))"; }
stage format
# clang-format comes with the packages scripts/build.sh installs; a fresh machine needs them now.
command -v clang-format >/dev/null || bash scripts/install-deps.sh
bash scripts/check-format.sh
stage build
bash scripts/build.sh
build=${BUILD_DIR:-build}
stage tests
ctest --test-dir "$build" --output-on-failure --parallel "${JOBS:-$(nproc)}" --timeout 900
# promtool on a real scrape, the alert rules and their tests, the dashboard's queries (seconds).
if [ "${METRICS:-1}" != 0 ]; then
  stage metrics
  BUILD_DIR="$build" bash scripts/check-metrics.sh
fi
# The sanitized tree (scripts/sanitized-tree.sh) compiles in the background at the lowest priority
# from here on: the stages up to the sanitizers' wait on pip, daemons and sockets more than they
# compute and leave about one of the two cores idle, which the compile takes; the sanitizer and
# fuzzer stages then find it built. ctest ran before it starts: its tests time daemons against
# deadlines.
tree_pid=
stop_tree() { [ -z "$tree_pid" ] || kill -- "-$tree_pid" 2>/dev/null || true; }
trap stop_tree EXIT
if [ "${SANITIZE:-1}" != 0 ] || [ "${FUZZ:-1}" != 0 ]; then
  tree_log="$build/sanitized-tree.log"
  # setsid: its own process group, so that an early exit stops the compilers too.
  setsid nice -n 19 bash scripts/sanitized-tree.sh distarray_unit_tests distarrayd \
    distarray_probe distarray_demo request_fuzzer write_fuzz_seeds >"$tree_log" 2>&1 &
  tree_pid=$!
  echo "test: the sanitized tree compiles in the background ($tree_log)"
fi
if [ "${PYTHON:-1}" != 0 ]; then
  stage "python sdk"
  BUILD_DIR="$build" bash scripts/test-python.sh
fi
# The array API standard's own test suite against the Python namespace (about 10 minutes on two
# cores; docs/testing.md).
# The suite is not on PyPI: it sits beside the checkout (../shared/array-api-tests, or
# $ARRAY_API_TESTS). A checkout without it says so and goes on.
if [ "${ARRAY_API:-1}" != 0 ]; then
  stage "array api"
  if [ -f "${ARRAY_API_TESTS:-../shared/array-api-tests}/array_api_tests/__init__.py" ]; then
    BUILD_DIR="$build" bash scripts/test-array-api.sh
  else
    echo "test: array api skipped: no array-api-tests at ${ARRAY_API_TESTS:-../shared/array-api-tests} (set ARRAY_API_TESTS)"
  fi
fi
if [ "${INSTALL:-1}" != 0 ]; then
  stage install
  bash scripts/check-install.sh "$build"
fi
# Kubernetes manifests, Dockerfile and the image's runtime stage as a root filesystem
# (scripts/check-deploy.sh: about 3.5 min in a fresh clone, mostly pip and debootstrap; 30 s
# when build/ holds its tools and root filesystem). DEPLOY=0 leaves it out.
if [ "${DEPLOY:-1}" != 0 ]; then
  stage deploy
  BUILD_DIR="$build" bash scripts/check-deploy.sh
fi
if [ -n "$tree_pid" ]; then
  stage "sanitized tree"
  wait "$tree_pid" || { tail -n 60 "$tree_log" >&2; echo "test: the sanitized tree failed" >&2; exit 1; }
  tree_pid=
fi
if [ "${SANITIZE:-1}" != 0 ]; then
  stage "sanitized tests"
  bash scripts/sanitize.sh
fi
if [ "${FUZZ:-1}" != 0 ]; then
  stage fuzzer
  bash scripts/fuzz.sh
fi
stage done
