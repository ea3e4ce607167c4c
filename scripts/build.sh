#!/usr/bin/env bash
# Installs the dependencies (Debian 12) and builds distarray into build/ (or $BUILD_DIR).
# The CUDA backend is built when a CUDA toolkit is found (DISTARRAY_CUDA=AUTO|ON|OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${BUILD_DIR:-build}
# Release by default: the configuration the image's builder stage (Dockerfile) compiles, so the
# tests run what ships. ccache, when present (scripts/install-deps.sh installs it), keeps
# rebuilds and the other trees (sanitizers, fuzzer) cheap.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
# The test programs' precompiled headers (tests/CMakeLists.txt) are cacheable only with these.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros}
# CUDA_ARCHITECTURES: sm_90 machine code and PTX by default (H100/H200). Passed on every
# configure, so a tree that CI's PTX-only setting (.ci/run: 90-virtual) once configured compiles
# machine code again at the next plain build instead of keeping the cached value.
cmake -S . -B "$build" -G Ninja "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES:-90}" \
  -DDISTARRAY_CUDA="${DISTARRAY_CUDA:-AUTO}" ${CMAKE_ARGS:-}
echo "build: compiling in $build (first build takes a few minutes)"
cmake --build "$build" --parallel "${JOBS:-$(nproc)}"
