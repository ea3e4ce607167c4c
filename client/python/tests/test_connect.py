"""Connecting, as a new user meets it: a port where nothing listens fails at once and says so, a
peer that never answers fails at the timeout and says that; idempotent calls are retried on
UNAVAILABLE (a drain), others are not."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

import distarray
from conftest import Daemon


def _closed_port_address() -> str:
    """A loopback port that nothing listens on (bound here and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_refused_connection_fails_fast_and_says_so():
    address = _closed_port_address()
    start = time.monotonic()
    with pytest.raises(distarray.UnavailableError) as raised:
        distarray.connect(address, timeout=10)
    elapsed = time.monotonic() - start
    assert elapsed < 3, f"a refused connection waited {elapsed:.1f} s of the 10 s"
    assert "refused" in raised.value.message and address in raised.value.message


def test_cli_refused_connection_fails_fast():
    script = shutil.which("distarray", path=os.path.dirname(sys.executable))
    assert script
    start = time.monotonic()
    result = subprocess.run([script, "--address", _closed_port_address(), "ls"],
                            capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - start
    assert result.returncode == 3, result.stderr
    assert "refused" in result.stderr
    assert elapsed < 5, f"the CLI took {elapsed:.1f} s (its timeout is 10 s)"


def test_silent_peer_fails_at_the_timeout_and_says_so():
    with socket.socket() as listener:  # completes handshakes, accepts and answers nothing
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        address = f"127.0.0.1:{listener.getsockname()[1]}"
        start = time.monotonic()
        with pytest.raises(distarray.UnavailableError) as raised:
            distarray.connect(address, timeout=1.5)
        elapsed = time.monotonic() - start
    assert 1.4 <= elapsed < 5
    assert "within 1.5 s" in raised.value.message and "refused" not in raised.value.message


def _wait_until_draining(daemon: Daemon) -> None:
    """Until the health port's readiness says NOT_SERVING (the drain has begun)."""
    import grpc

    from distarray import _health

    with grpc.insecure_channel(daemon.health_address) as channel:
        deadline = time.monotonic() + 10
        while _health.check(channel, "readiness", 5) == _health.SERVING:
            assert time.monotonic() < deadline, "readiness still SERVING 10 s after SIGTERM"
            time.sleep(0.02)


def test_idempotent_calls_are_retried_during_a_drain_others_are_not():
    daemon = Daemon(["--drain_grace_seconds=4", "--drain_seconds=1", "--log_level=debug"])
    try:
        client = distarray.connect(daemon.address, keepalive=False)
        daemon.proc.send_signal(signal.SIGTERM)
        _wait_until_draining(daemon)
        with pytest.raises(distarray.UnavailableError):
            client.server_info()
        with pytest.raises(distarray.UnavailableError):
            client.zeros((4,))
        client.close()
        assert daemon.proc.wait(timeout=30) == 0
        daemon.log.seek(0)
        log = daemon.log.read()
        assert log.count("GetServerInfo refused") == 5, log  # every attempt of the policy
        assert log.count("CreateArray refused") == 1, log
    finally:
        assert daemon.stop() == 0
