#!/usr/bin/env bash
# Configures and builds the one clang tree that both scripts/sanitize.sh and scripts/fuzz.sh use:
# ASan+UBSan, libFuzzer coverage instrumentation, host backend only, into build-fuzz/ (or
# $FUZZ_BUILD_DIR). One tree for both means the engine is compiled once for the sanitized tests
# and the fuzzer, not twice (a third of a fresh clone's test time on two cores was the second
# tree). Usage: bash scripts/sanitized-tree.sh TARGET...; prints the tree's path last.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FUZZ_BUILD_DIR:-build-fuzz}
cxx=${FUZZ_CXX:-$(command -v clang++-16 || true)}
if [ -z "$cxx" ]; then
  echo "sanitized-tree: clang++-16 not found (scripts/install-deps.sh installs clang-16 and" \
    "libclang-rt-16-dev)" >&2
  exit 1
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# The test programs' precompiled headers (tests/CMakeLists.txt) are cacheable only with these.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros}
# Warnings stay warnings here: -Werror is for the project's own compiler (GCC) in the normal build.
# -O1 with line tables only: what sanitizer reports and libFuzzer need (symbolized stacks); the
# objects are smaller and compile a little faster than RelWithDebInfo's -O2 -g (array_service.cc:
# 59.5 s against 63.8 s; the instrumentation is most of the cost).
cmake -S . -B "$build" -G Ninja "${launcher[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DDISTARRAY_CUDA=OFF -DDISTARRAY_FUZZ=ON -DDISTARRAY_WERROR=OFF >/dev/null
echo "sanitized-tree: compiling $* in $build" >&2
cmake --build "$build" --parallel "${JOBS:-$(nproc)}" --target "$@" >&2
echo "$build"
