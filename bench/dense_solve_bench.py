"""Dense ``solve`` of an n x n float64 system (n = 16384 by default): ``distarray.linalg.solve``
(cuSOLVER getrf/getrs on the device that holds most of A) with A on one GPU and with A's rows
over two GPUs (gathered to one first), against ``cupy.linalg.solve`` on one GPU, measured in the
same run. A = random + n I (well conditioned), b random (n,). Prints ms per solve (median of
--repeats after a warm-up), GFLOP/s at 2/3 n^3, the relative residual, and ratios.

  python3 dense_solve_bench.py --address 127.0.0.1:50051 [--n 16384]
"""
import argparse
import statistics
import time

import numpy as np


def timed(run, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", default="127.0.0.1:50051")
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n = args.n
    rng = np.random.default_rng(0)
    a_host = rng.random((n, n)) + n * np.eye(n)
    b_host = rng.random(n)
    flops = 2.0 / 3.0 * n ** 3
    results = {}

    import cupy
    a = cupy.asarray(a_host)
    b = cupy.asarray(b_host)

    def cupy_solve():
        x = cupy.linalg.solve(a, b)
        cupy.cuda.runtime.deviceSynchronize()
        return x
    cupy_solve()
    s = timed(cupy_solve, args.repeats)
    x = cupy_solve().get()
    results["cupy"] = s
    print(f"solve_cupy_n{n}_ms {s * 1e3:.1f} gflops {flops / s / 1e9:.0f} relres "
          f"{np.linalg.norm(a_host @ x - b_host) / np.linalg.norm(b_host):.2e}", flush=True)
    del a, b
    cupy.get_default_memory_pool().free_all_blocks()

    import distarray
    import distarray.linalg
    client = distarray.connect(args.address)
    for devices in ([0], [0, 1]):
        a = client.from_numpy(a_host, distarray.split_index_map((n, n), 0, devices))
        b = client.from_numpy(b_host)

        def solve():
            x = distarray.linalg.solve(a, b)
            client.synchronize()
            return x
        solve()
        s = timed(solve, args.repeats)
        x = solve().to_numpy()
        key = f"distarray_{len(devices)}gpu"
        results[key] = s
        print(f"solve_{key}_n{n}_ms {s * 1e3:.1f} gflops {flops / s / 1e9:.0f} relres "
              f"{np.linalg.norm(a_host @ x - b_host) / np.linalg.norm(b_host):.2e}", flush=True)
        del a, b
    client.close()
    for key in ("distarray_1gpu", "distarray_2gpu"):
        print(f"solve_{key}_vs_cupy {results['cupy'] / results[key]:.2f}x", flush=True)


if __name__ == "__main__":
    main()
