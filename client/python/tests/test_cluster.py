"""A cluster of two daemons on loopback (docs/cluster.md) seen from the Python SDK: one device
space over two nodes, the array namespace computing across them, and `distarray info` naming
each device's node."""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import distarray as da
from conftest import Daemon, _fixed_free_port, daemon_binary
from test_cli import cli


@pytest.fixture(scope="module")
def cluster() -> Iterator[Daemon]:
    leader_port = _fixed_free_port()
    common = ["--cluster_size=2", "--host_devices=2"]
    with tempfile.TemporaryDirectory(prefix="distarray-member-") as scratch:
        log = open(Path(scratch) / "log", "w+")
        # The member first: it retries its join until the leader listens.
        member = subprocess.Popen(
            [str(daemon_binary()), "--backend=host", "--cluster_rank=1",
             f"--cluster_leader=127.0.0.1:{leader_port}", "--cluster_listen=127.0.0.1:0",
             "--listen=127.0.0.1:0", "--metrics_listen=", "--health_listen=127.0.0.1:0",
             "--log_level=warn", *common],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            leader = Daemon([*common, "--cluster_rank=0",
                             f"--cluster_listen=127.0.0.1:{leader_port}"])
            yield leader
            assert leader.stop() == 0, "the leader did not exit 0 after SIGTERM"
        finally:
            member.terminate()
            code = member.wait(timeout=30)
            log.seek(0)
            assert code == 0, f"the member exited {code}: {log.read()}"
            log.close()


def test_info_names_each_devices_node(cluster):
    result = cli(cluster, "info", "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["cluster_size"] == 2
    assert [d["node"] for d in info["devices"]] == [0, 0, 1, 1]
    table = cli(cluster, "info")
    assert "on 2 nodes" in table.stdout and "node" in table.stdout


def test_arrays_compute_across_nodes(cluster):
    rng = np.random.default_rng(7)
    with da.connect(cluster.address) as client:
        x = rng.standard_normal((40, 30))
        rows = client.from_numpy(x, da.split_index_map(x.shape, axis=0, devices=[0, 1, 2, 3]))
        cols = rows.reshard(da.split_index_map(x.shape, axis=1, devices=[3, 1, 2]))
        np.testing.assert_array_equal(cols.to_numpy(), x)
        # A Jacobi step across the node boundary (rows 10..19 on device 1, 20..29 on device 2).
        u = rows.copy()
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        expected = x.copy()
        expected[1:-1, 1:-1] = 0.25 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
        np.testing.assert_allclose(np.asarray(u), expected, rtol=1e-14, atol=1e-14)
        np.testing.assert_array_equal(np.asarray(da.sort(rows, axis=0)), np.sort(x, axis=0))
        np.testing.assert_allclose(np.asarray(rows @ cols.T), x @ x.T, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(float(da.sum(cols)), x.sum(), rtol=1e-12)
