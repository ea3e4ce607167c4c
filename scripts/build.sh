#!/usr/bin/env bash
# Installs the dependencies (Debian 12) and builds distarray into build/ (or $BUILD_DIR).
# The CUDA backend is built when a CUDA toolkit is found (DISTARRAY_CUDA=AUTO|ON|OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
  -DDISTARRAY_CUDA="${DISTARRAY_CUDA:-AUTO}" ${CMAKE_ARGS:-}
echo "build: compiling in $build (first build takes a few minutes)"
cmake --build "$build" --parallel "${JOBS:-$(nproc)}"
