"""The seed's loop, ``while all(a < 1000): a += 1``, run on the daemon in one RunGraph call and
checked against NumPy: once on one device (a recorded graph, replayed on the device) and once
split over two devices (a graph per GPU on the CUDA backend; step by step on the host backend).

    python client/python/examples/seed_loop.py --address 127.0.0.1:50051
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import distarray


def seed_loop(a):
    """The traced program: the loop's condition and body are ordinary Python functions."""
    return distarray.while_loop(
        lambda v: (v < 1000).all(),  # condition: a 0-d bool
        lambda v: v + 1,  # body: the next value of the carried array
        a,
        max_iterations=100_000,
    )


def numpy_loop(a: np.ndarray) -> tuple:
    iterations = 0
    while np.all(a < 1000):
        a = a + 1
        iterations += 1
    return a, iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=None, help="distarrayd host:port")
    parser.add_argument("--size", type=int, default=100_000)
    args = parser.parse_args()

    program = distarray.trace(seed_loop)
    seed = (np.arange(args.size) % 7).astype(np.float32)
    expected, expected_iterations = numpy_loop(seed)
    with distarray.connect(args.address) as client:
        info = client.server_info()
        second = 1 if len(info.devices) > 1 else 0
        for label, devices in (("on device 0", [0]), ("split over 2 devices", [0, second])):
            a = client.from_numpy(seed, distarray.split_index_map(seed.shape, 0, devices))
            start = time.perf_counter()
            run = client.run_graph(program, a=a)
            ms = (time.perf_counter() - start) * 1e3
            result = run.outputs["out"].to_numpy()
            ok = run.iterations == expected_iterations and np.array_equal(result, expected)
            print(f"{label}: {run.iterations} iterations, {run.execution}, {ms:.2f} ms: "
                  f"{'equals NumPy' if ok else 'MISMATCH'}")
            if not ok:
                raise SystemExit(1)


if __name__ == "__main__":
    main()
