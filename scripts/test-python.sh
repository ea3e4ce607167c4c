#!/usr/bin/env bash
# The Python SDK's tests: creates a venv under the build dir, pip-installs client/python with its
# test extras (the gRPC stubs are generated from proto/ while it builds), and runs the pytest
# suite, whose fixture starts the freshly built daemon ($DISTARRAYD, default
# $BUILD_DIR/server/distarrayd) on a loopback port. Extra arguments go to pytest
# (e.g. `scripts/test-python.sh -k cli -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
venv=$(realpath -m "${PYTHON_VENV:-$build/python-venv}")
export DISTARRAYD=${DISTARRAYD:-$(realpath -m "$build/server/distarrayd")}
if [ ! -x "$DISTARRAYD" ]; then
  echo "test-python: no daemon at $DISTARRAYD (run scripts/build.sh first)" >&2
  exit 1
fi
if [ ! -x "$venv/bin/python" ]; then
  "${PYTHON3:-python3}" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
# --upgrade rebuilds the package from the working tree every time; its dependencies are only
# fetched when missing or too old.
"${pip[@]}" install --upgrade "./client/python[test]"
# From the tests' directory, so `import distarray` finds the installed package (with its
# generated stubs), not the source tree.
cd client/python/tests
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
