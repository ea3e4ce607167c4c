"""The `distarray` command line, run as a process against the daemon."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np


SCRIPT = shutil.which("distarray", path=os.path.dirname(sys.executable))


def cli(daemon, *args, address=None, env=None):
    """Runs the installed console script (the one pip put next to this Python)."""
    assert SCRIPT, "the distarray console script is not next to this Python"
    command = [SCRIPT, "--address", address or daemon.address, *args]
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=full_env)


def test_console_script_is_installed():
    assert SCRIPT, "the distarray console script is not next to this Python"
    result = subprocess.run([SCRIPT, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "exit codes" in result.stdout


def test_put_get_round_trip(daemon, tmp_path, rng):
    values = rng.integers(-1000, 1000, (9, 4)).astype(np.int32)
    src, dst = tmp_path / "in.npy", tmp_path / "out.npy"
    np.save(src, values)
    put = cli(daemon, "put", str(src), "--split", "0", "--devices", "0,1", "--name", "cli-a",
              "--json")
    assert put.returncode == 0, put.stderr
    described = json.loads(put.stdout)
    assert described["name"] == "cli-a" and described["shape"] == [9, 4]
    assert described["devices"] == [0, 1] and described["dtype"] == "int32"

    get = cli(daemon, "get", "cli-a", str(dst))
    assert get.returncode == 0, get.stderr
    np.testing.assert_array_equal(np.load(dst), values)

    ls = cli(daemon, "--json", "ls")
    assert ls.returncode == 0, ls.stderr
    assert "cli-a" in [a["name"] for a in json.loads(ls.stdout)]
    table = cli(daemon, "ls")
    assert "cli-a" in table.stdout

    desc = cli(daemon, "describe", "cli-a", "--json")
    chunks = json.loads(desc.stdout)["chunks"]
    assert [(c["device"], c["slices"][0]["start"], c["slices"][0]["stop"]) for c in chunks] == [
        (0, 0, 4), (1, 4, 9)]
    assert "0:4" in cli(daemon, "describe", "cli-a").stdout

    rm = cli(daemon, "rm", "cli-a")
    assert rm.returncode == 0, rm.stderr
    gone = cli(daemon, "describe", "cli-a")
    assert gone.returncode == 1 and "NOT_FOUND" in gone.stderr


def test_unnamed_put_persists_and_replicates(daemon, tmp_path):
    src = tmp_path / "x.npy"
    np.save(src, np.arange(6.0))
    put = cli(daemon, "put", str(src), "--json")
    assert put.returncode == 0, put.stderr
    info = json.loads(put.stdout)
    assert info["devices"] == [0, 1, 2, 3]  # replicated on every device by default
    get = cli(daemon, "get", info["handle"], str(tmp_path / "y.npy"))
    assert get.returncode == 0, get.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.arange(6.0))
    assert cli(daemon, "rm", info["handle"]).returncode == 0


def test_info_and_health(daemon):
    info = cli(daemon, "info", "--json")
    assert info.returncode == 0, info.stderr
    parsed = json.loads(info.stdout)
    assert parsed["backend"] == "host" and len(parsed["devices"]) == 4
    assert "float32" in parsed["dtypes"]
    assert "host" in cli(daemon, "info").stdout
    health_address = daemon.health_address or daemon.address
    health = cli(daemon, "health", "--health-address", health_address, "--json")
    assert health.returncode == 0, health.stderr
    assert json.loads(health.stdout)["status"] == "SERVING"


def test_health_finds_the_health_port(daemon):
    """Without --health-address the CLI asks the daemon (GetServerInfo.health_port) where its
    health port is: the README's `distarray health` works as written."""
    assert daemon.health_address, "the test daemon has a health port"
    health = cli(daemon, "health", "--json")
    assert health.returncode == 0, health.stderr
    answer = json.loads(health.stdout)
    assert answer["status"] == "SERVING" and answer["address"] == daemon.health_address
    readiness = cli(daemon, "health", "--service", "readiness")
    assert readiness.returncode == 0 and "SERVING" in readiness.stdout, readiness.stderr
    # No daemon at --address: cannot connect (3), not the daemon's error.
    down = cli(daemon, "health", "--timeout", "1", address="127.0.0.1:1")
    assert down.returncode == 3, down.stderr


def test_health_of_a_daemon_without_a_health_port():
    from conftest import Daemon

    d = Daemon(["--health_listen="])
    try:
        health = cli(d, "health")
        assert health.returncode == 1, health.stderr
        assert "no health port" in health.stderr and "--health-address" in health.stderr
    finally:
        assert d.stop() == 0


def test_health_of_a_tls_daemon(tmp_path):
    """--tls is for the API port; the health port stays plaintext (docs/operations.md)."""
    from conftest import Daemon

    if shutil.which("openssl") is None:
        import pytest

        pytest.skip("no openssl to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    d = Daemon([f"--tls_cert_file={cert}", f"--tls_key_file={key}"])
    try:
        health = cli(d, "--tls-ca", str(cert), "health", "--json")
        assert health.returncode == 0, health.stderr
        assert json.loads(health.stdout)["status"] == "SERVING"
    finally:
        assert d.stop() == 0


def test_info_names_bfloat16_without_ml_dtypes(daemon, tmp_path):
    """Without the bfloat16 extra (ml_dtypes) NumPy has no bfloat16, but the CLI still names it
    (it printed the enum's number, 11)."""
    blocked = tmp_path / "blocked"
    (blocked / "ml_dtypes").mkdir(parents=True)
    (blocked / "ml_dtypes" / "__init__.py").write_text("raise ImportError('blocked by the test')\n")
    env = {"PYTHONPATH": str(blocked)}
    info = cli(daemon, "info", "--json", env=env)
    assert info.returncode == 0, info.stderr
    dtypes = json.loads(info.stdout)["dtypes"]
    assert "bfloat16" in dtypes and "11" not in dtypes, dtypes
    assert "bfloat16" in cli(daemon, "info", env=env).stdout
    # An array of it is listed and described by name too.
    import ml_dtypes

    import distarray

    with distarray.connect(daemon.address, session=False) as client:
        client.zeros((4,), dtype=ml_dtypes.bfloat16, name="cli-bf16")
    try:
        listed = cli(daemon, "ls", "--json", env=env)
        assert listed.returncode == 0, listed.stderr
        by_name = {x["name"]: x["dtype"] for x in json.loads(listed.stdout)}
        assert by_name["cli-bf16"] == "bfloat16", by_name
        described = cli(daemon, "describe", "cli-bf16", env=env)
        assert described.returncode == 0 and "bfloat16" in described.stdout, described.stderr
    finally:
        assert cli(daemon, "rm", "cli-bf16").returncode == 0


def test_put_of_128_mib_is_logged_as_one_transfer(tmp_path):
    """The daemon logged both 128 MiB `put`s of a fresh CLI process as 96 and 64 MiB: the last
    parallel stream started after the others had ended. It logs one line of 128 MiB."""
    from conftest import Daemon

    d = Daemon(["--log_level=info", "--shared_memory=off"])
    try:
        src = tmp_path / "x.npy"
        np.save(src, np.ones((4096, 4096)))  # 128 MiB of float64: four parallel streams
        for i in range(2):
            put = cli(d, "put", str(src), "--split", "0", "--devices", "0,1", "--name", f"big{i}",
                      "--quiet")
            assert put.returncode == 0, put.stderr
        d.proc.terminate()
        assert d.proc.wait(timeout=30) == 0  # the log is complete once the daemon has exited
        d.log.seek(0)
        log = d.log.read()
    finally:
        assert d.stop() == 0
    assert log.count(": 128 MiB in ") == 2, log
    assert ": 96 MiB in " not in log and ": 64 MiB in " not in log, log


def test_exit_codes(daemon, tmp_path):
    # 1: the daemon's error, its status code on stderr.
    missing = cli(daemon, "rm", "no-such-array")
    assert missing.returncode == 1 and "NOT_FOUND" in missing.stderr
    bad = tmp_path / "b.npy"
    np.save(bad, np.zeros(3))
    invalid = cli(daemon, "put", str(bad), "--devices", "7")
    assert invalid.returncode == 1 and "INVALID_ARGUMENT" in invalid.stderr
    # 2: usage errors: flags, arguments, files.
    assert cli(daemon, "frobnicate").returncode == 2
    assert cli(daemon, "put").returncode == 2
    assert cli(daemon, "put", str(tmp_path / "none.npy")).returncode == 2
    assert cli(daemon, "put", str(bad), "--split", "3").returncode == 2
    assert cli(daemon, "put", str(bad), "--devices", "a,b").returncode == 2
    # 3: no daemon at the address.
    down = cli(daemon, "ls", "--timeout", "0.5", address="127.0.0.1:1")
    assert down.returncode == 3 and "UNAVAILABLE" in down.stderr
    # The address from the environment.
    env = subprocess.run([SCRIPT, "ls"], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, DISTARRAY_ADDRESS=daemon.address))
    assert env.returncode == 0, env.stderr
