#!/usr/bin/env bash
# The Python array API standard's own test suite (array-api-tests, pinned in ../shared; see its
# README.shared.md) against distarray's namespace on the host backend. Installs the SDK and the
# suite's requirements into the SDK's venv (as scripts/test-python.sh does), starts the daemon
# ($DISTARRAYD, default $BUILD_DIR/server/distarrayd) on a free loopback port, copies the suite to
# a writable folder under the build dir and runs it with the project's xfails file
# (client/python/array-api-xfails.txt: each remaining failure and why).
# MAX_EXAMPLES (default 20, the suite's own: docs/testing.md says why) is hypothesis' examples per test, drawn from
# HYPOTHESIS_SEED (default 0: the same examples every run, so the xfails stay exact; another seed
# explores). The fft extension is not served, so its tests are left out; linalg's run. Extra
# arguments go to pytest (e.g. `scripts/test-array-api.sh -k test_add -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=$(realpath -m "${BUILD_DIR:-build}")
venv=$(realpath -m "${PYTHON_VENV:-$build/python-venv}")
suite_src=$(realpath -m "${ARRAY_API_TESTS:-$root/../shared/array-api-tests}")
xfails="$root/client/python/array-api-xfails.txt"
daemon=${DISTARRAYD:-$build/server/distarrayd}
if [ ! -x "$daemon" ]; then
  echo "test-array-api: no daemon at $daemon (run scripts/build.sh first)" >&2
  exit 1
fi
if [ ! -f "$suite_src/array_api_tests/__init__.py" ]; then
  echo "test-array-api: no array-api-tests at $suite_src (set ARRAY_API_TESTS)" >&2
  exit 1
fi
if [ ! -x "$venv/bin/python" ]; then
  "${PYTHON3:-python3}" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
# The suite's requirements (pytest, pytest-json-report, hypothesis, ndindex) are the package's
# array-api-tests extra, hypothesis pinned (pyproject.toml says why).
"${pip[@]}" install --upgrade "./client/python[test,array-api-tests]"

work="$build/array-api"
rm -rf "$work"
mkdir -p "$work"
# A writable copy: the suite's folder is read-only in CI and hypothesis writes .hypothesis/.
cp -r "$suite_src" "$work/array-api-tests"
chmod -R u+w "$work/array-api-tests"

# The daemon on the host backend (4 simulated devices), on a port it picks, written to a file;
# no metrics or health port (their fixed defaults may be taken by another daemon).
flags=(--backend=host --host_devices=4 --listen=127.0.0.1:0 --port_file="$work/port"
  --metrics_listen= --log_level=error)
help=$("$daemon" --help 2>&1 || true)  # whole, not piped: grep -q would cut it short
if [[ $help == *--health_listen* ]]; then
  flags+=(--health_listen=)
fi
"$daemon" "${flags[@]}" >"$work/daemon.log" 2>&1 &
daemon_pid=$!
stop_daemon() { kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null || true; }
trap stop_daemon EXIT
for _ in $(seq 300); do
  [ -s "$work/port" ] && break
  if ! kill -0 "$daemon_pid" 2>/dev/null; then
    echo "test-array-api: distarrayd did not start:" >&2
    cat "$work/daemon.log" >&2
    exit 1
  fi
  sleep 0.1
done
[ -s "$work/port" ] || { echo "test-array-api: distarrayd wrote no port" >&2; exit 1; }
address="127.0.0.1:$(cat "$work/port")"

cd "$work/array-api-tests"
start=$(date +%s)
status=0
ARRAY_API_TESTS_MODULE="exec('import distarray; distarray.connect(\"$address\"); xp = distarray')" \
ARRAY_API_TESTS_VERSION=2024.12 \
  "$venv/bin/python" -m pytest -p no:cacheprovider -q -rfE --disable-deadline \
    --max-examples="${MAX_EXAMPLES:-20}" --hypothesis-seed="${HYPOTHESIS_SEED:-0}" \
    --disable-extension fft --xfails-file="$xfails" \
    --json-report --json-report-file="$work/report.json" --json-report-omit=log,streams \
    "$@" array_api_tests/ || status=$?
echo "test-array-api: $(( $(date +%s) - start )) s; report in $work/report.json"
exit $status
