#!/usr/bin/env bash
# Checks that the C++ SDK installs and is usable from outside the tree: `cmake --install` of a
# built tree into a temporary prefix, then client/examples/standalone configured with
# find_package(distarray) against that prefix only, built, and run against a host-backend
# distarrayd on a loopback port. About 30 s on 2 cores (the example is one file).
#   scripts/check-install.sh [BUILD_DIR]     (default: $BUILD_DIR or build; must be built)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-${BUILD_DIR:-$root/build}}" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/distarray-install-XXXXXX")"
daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "check-install: installing $build into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in include/distarray/client.h include/distarray/v1/distarray.pb.h \
         include/distarray/v1/distarray.grpc.pb.h lib/cmake/distarray/distarrayConfig.cmake; do
  if [ ! -f "$work/prefix/$f" ]; then
    echo "check-install: $f was not installed" >&2
    exit 1
  fi
done

echo "check-install: building client/examples/standalone against the installed SDK"
generator=()
if command -v ninja > /dev/null; then generator=(-G Ninja); fi
cmake -S "$root/client/examples/standalone" -B "$work/example" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" ||
  { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/example" -j "${JOBS:-2}" > "$work/build.log" ||
  { cat "$work/build.log" >&2; exit 1; }

echo "check-install: running it against a host-backend daemon"
distarrayd="$build/server/distarrayd"
flags=(--backend=host --host_devices=2 --listen=127.0.0.1:0 --metrics_listen=
       --port_file="$work/port" --log_level=warn)
# Another daemon (a parallel test) may hold the default health port.
help="$("$distarrayd" --helpfull 2>&1 || true)"
if grep -q -- "--health_listen" <<< "$help"; then
  flags+=(--health_listen=127.0.0.1:0)
fi
"$distarrayd" "${flags[@]}" > "$work/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do
  if [ -s "$work/port" ]; then break; fi
  if ! kill -0 "$daemon_pid" 2>/dev/null; then cat "$work/daemon.log" >&2; exit 1; fi
  sleep 0.1
done
if [ ! -s "$work/port" ]; then
  echo "check-install: the daemon did not start" >&2; cat "$work/daemon.log" >&2; exit 1
fi
"$work/example/standalone_example" "127.0.0.1:$(cat "$work/port")"
echo "check-install: ok"
