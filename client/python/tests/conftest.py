"""Starts the real distarrayd (host backend, 4 simulated devices) on a loopback port for the
suite. The binary is $DISTARRAYD, else build/server/distarrayd of the repository."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator, List, Optional

import numpy as np
import pytest

import distarray

REPO = Path(__file__).resolve().parents[3]


def daemon_binary() -> Path:
    path = Path(os.environ.get("DISTARRAYD", REPO / "build" / "server" / "distarrayd"))
    if not path.is_file():
        pytest.exit(f"no distarrayd at {path}: build it or set DISTARRAYD", returncode=2)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fixed_free_port() -> int:
    """A free port below the kernel's ephemeral range, for an address another process must know
    before its owner binds it: a port from _free_port() can be handed out again to any process's
    bind to port 0 in between (a cluster member once took its leader's port so and dialled
    itself)."""
    low = 32768
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(10000, max(low, 10001))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    return _free_port()


class Daemon:
    """A distarrayd child process; stopped with SIGTERM (it must exit 0)."""

    def __init__(self, extra: Optional[List[str]] = None):
        binary = daemon_binary()
        self._dir = tempfile.TemporaryDirectory(prefix="distarray-pytest-")
        port_file = Path(self._dir.name) / "port"
        flags = [
            "--backend=host", "--host_devices=4", "--listen=127.0.0.1:0",
            f"--port_file={port_file}", "--metrics_listen=", "--log_level=warn",
        ]
        shown = subprocess.run([str(binary), "--help"], capture_output=True, text=True)
        help_text = shown.stdout + shown.stderr
        self.health_address: Optional[str] = None
        if "--health_listen" in help_text:  # a separate health port, where the daemon has one
            self.health_address = f"127.0.0.1:{_free_port()}"
            flags.append(f"--health_listen={self.health_address}")
        self.log = open(Path(self._dir.name) / "log", "w+")
        self.proc = subprocess.Popen([str(binary)] + flags + (extra or []),
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                raise RuntimeError(f"distarrayd did not start: {self.log.read()}")
            time.sleep(0.02)
        self.address = f"127.0.0.1:{port_file.read_text().strip()}"

    def stop(self) -> int:
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=30)
        finally:
            self.log.close()
            self._dir.cleanup()


@pytest.fixture(scope="session")
def daemon() -> Iterator[Daemon]:
    d = Daemon()
    yield d
    assert d.stop() == 0, "distarrayd did not exit 0 after SIGTERM"


@pytest.fixture(scope="session")
def short_lease_daemon() -> Iterator[Daemon]:
    """A daemon whose sessions expire after 2 s without a call."""
    d = Daemon(["--session_lease_seconds=2"])
    yield d
    assert d.stop() == 0


@pytest.fixture
def client(daemon) -> Iterator[distarray.Client]:
    with distarray.connect(daemon.address) as c:
        yield c


@pytest.fixture
def rng(request) -> np.random.Generator:
    """Fresh random inputs per test (the seed is printed on failure); DISTARRAY_TEST_SEED replays
    one."""
    replay = os.environ.get("DISTARRAY_TEST_SEED")
    seed = int(replay) if replay else int.from_bytes(os.urandom(4), "little")
    request.node.user_properties.append(("seed", seed))
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


def random_array(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Random values of `dtype`: nonzero-heavy, negative where the dtype allows."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "f" or dtype.name == "bfloat16":  # ml_dtypes' bfloat16 is of kind "V"
        return rng.uniform(-100, 100, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.uniform(-100, 100, shape) + 1j * rng.uniform(-100, 100, shape)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
