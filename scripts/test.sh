#!/usr/bin/env bash
# Builds, then runs every test: unit tests and the integration tests that start the real daemon
# on loopback once per backend. CUDA cases skip with a message where no GPU is usable.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build=${BUILD_DIR:-build}
ctest --test-dir "$build" --output-on-failure --parallel "${JOBS:-$(nproc)}" --timeout 900
