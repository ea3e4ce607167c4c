#!/usr/bin/env bash
# Installs everything distarray needs to build and test on Debian 12 (bookworm).
# Idempotent: when every package is already present it only checks, which takes a second.
# clang-14 with libclang-rt-14-dev (libFuzzer and the sanitizer runtimes) and llvm-14 (the
# symbolizer for readable stacks) build and run the fuzzer (scripts/fuzz.sh). python3-venv and
# python3-pip make the venv in which scripts/test-python.sh installs the Python SDK from PyPI's
# grpcio, protobuf and numpy.
# The CUDA toolkit is not a Debian package; the build finds it at /usr/local/cuda when present
# and builds the host backend alone when it is not (see README.md, "CUDA").
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev
  prometheus-cpp-dev civetweb libcivetweb-dev libcurl4-openssl-dev zlib1g-dev
  libopenblas-dev clang-format
  clang-14 libclang-rt-14-dev llvm-14
  python3 python3-venv python3-pip
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
