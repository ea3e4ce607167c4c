"""The package installs beside an older protobuf without touching it: its protobuf floor is what
its generated stubs need (pyproject.toml builds them with the oldest grpcio-tools the Python has
wheels for), not the newest protobuf of the day, and no dependency drags a newer one in
(grpcio-health-checking did: its 1.85 wants protobuf>=7.35.1).

Slow (a venv and a pip install from PyPI, about a minute); skipped when PyPI cannot be reached."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import REPO

# The oldest protobuf the stubs accept, by the grpcio-tools pyproject.toml picks for this Python.
OLDEST_PROTOBUF = {(3, 10): "4.25.1", (3, 11): "4.25.1", (3, 12): "4.25.1", (3, 13): "5.27.2"}


def test_install_keeps_an_older_protobuf(daemon, tmp_path):
    old = OLDEST_PROTOBUF.get(sys.version_info[:2])
    if old is None:
        pytest.skip(f"no pinned grpcio-tools for Python {sys.version_info[:2]}: newest stubs")
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    python = str(tmp_path / "venv" / "bin" / "python")
    pip = [python, "-m", "pip", "--disable-pip-version-check", "-q"]
    pinned = subprocess.run(pip + ["install", f"protobuf=={old}"], capture_output=True,
                            text=True, timeout=600)
    if pinned.returncode != 0:
        pytest.skip(f"cannot install protobuf=={old} (PyPI unreachable?): {pinned.stderr[-400:]}")
    installed = subprocess.run(pip + ["install", str(REPO / "client" / "python")],
                               capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-2000:]
    smoke = (
        "import google.protobuf, numpy as np, distarray\n"
        f"with distarray.connect({daemon.address!r}) as c:\n"
        "    a = c.from_numpy(np.arange(5.0))\n"
        "    assert (a.to_numpy() == np.arange(5.0)).all()\n"
        "    assert c.server_info().health_port > 0\n"
        "print(google.protobuf.__version__)\n"
    )
    ran = subprocess.run([python, "-W", "error::UserWarning", "-c", smoke], capture_output=True,
                         text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == old, f"installing distarray changed protobuf to {ran.stdout}"


def test_the_package_is_typed():
    """PEP 561: the installed package (built as a wheel from the working tree) carries py.typed,
    and the generated stubs their .pyi, so type checkers read the package's own hints."""
    import pathlib

    import distarray

    root = pathlib.Path(distarray.__file__).parent
    assert (root / "py.typed").is_file()
    assert (root / "v1" / "distarray_pb2.pyi").is_file()
