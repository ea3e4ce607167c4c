"""The Python benchmarks' distarray halves run against the test daemon at toy sizes: a bench that
breaks (a helper that recursed without end did) is found here, not on the GPU machine. Their
peers (CuPy, JAX) are missing or fail on a host without a GPU, which the benches report and
survive; only distarray's lines are checked."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

BENCH = pathlib.Path(__file__).resolve().parents[3] / "bench"


def run_bench(script: str, *args: str) -> str:
    done = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True,
                          text=True, timeout=300, cwd=BENCH)
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


def test_sparse_cg_bench_solves_on_one_and_two_devices(daemon):
    out = run_bench("sparse_cg_bench.py", "--address", daemon.address, "--n", "12",
                    "--iterations", "5", "--repeats", "1", "--gpus", "1,2")
    for devices in (1, 2):
        line = re.search(rf"^cg_distarray_{devices}gpu_ms .* operations_per_iter (\d+)$", out,
                         re.MULTILINE)
        assert line, out
        assert int(line.group(1)) > 0, line.group(0)
