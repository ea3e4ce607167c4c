#!/usr/bin/env bash
# Installs everything distarray needs to build and test on Debian 12 (bookworm).
# Idempotent: when every package is already present it only checks, which takes a second.
# clang-16 with libclang-rt-16-dev (libFuzzer and the sanitizer runtimes) and llvm-16 (the
# symbolizer for readable stacks) build the sanitized tests and the fuzzer in one tree
# (scripts/sanitized-tree.sh). The tests' float16 references need _Float16, which clang has on
# x86-64 from version 15 (Debian 12's clang-14 lacks it); 16 is the newest Debian 12 ships. python3-venv and
# python3-pip make the venv in which scripts/test-python.sh installs the Python SDK from PyPI's
# grpcio, protobuf and numpy. clang-format checks the sources' formatting (scripts/check-format.sh;
# the tree is formatted with Debian 12's version). libgloo-dev carries the bytes between the daemons
# of a cluster (docs/cluster.md).
# The CUDA toolkit is not a Debian package; the build finds it at /usr/local/cuda when present
# and builds the host backend alone when it is not (see README.md, "CUDA").
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ccache
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev
  prometheus-cpp-dev civetweb libcivetweb-dev libcurl4-openssl-dev zlib1g-dev
  libopenblas-dev clang-format
  libgloo-dev
  libssl-dev openssl
  clang-16 libclang-rt-16-dev llvm-16
  python3 python3-venv python3-pip
  debootstrap
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# promtool (scripts/check-metrics.sh) is in Debian's `prometheus` package, which would also
# install and start a Prometheus server and pull in its web assets. The binary is static Go and
# runs alone, so only it is taken from the package, into /usr/local/bin.
if ! command -v promtool >/dev/null; then
  echo "install-deps: installing promtool from the prometheus package"
  deb_dir=$(mktemp -d)
  chmod 777 "$deb_dir"  # apt-get download runs as the _apt user where it can
  (cd "$deb_dir" && apt-get download -q prometheus) ||
    { "${sudo_cmd[@]}" apt-get update -q && (cd "$deb_dir" && apt-get download -q prometheus); }
  dpkg-deb --fsys-tarfile "$deb_dir"/prometheus_*.deb | tar -x -C "$deb_dir" ./usr/bin/promtool
  "${sudo_cmd[@]}" install -m 0755 "$deb_dir/usr/bin/promtool" /usr/local/bin/promtool
  rm -rf "$deb_dir"
  promtool --version | head -1
fi
