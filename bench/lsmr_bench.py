"""The seed's LSMR benchmark (cupy/cupy examples/cuda_graph/lsmr.py) against distarray's
``distarray.sparse.linalg.lsmr``, one RunGraph per solve: A = cupyx.scipy.sparse.random(N, N,
density=0.1, format="csr", float64) with cupy seed 42, b = randn(N), x0 = 0, atol = btol =
1e-6, conlim = 1e8, maxiter pinned to 5 N (cupyx's default; SciPy's is N) for every solver.
Peers measured in the same run: plain CuPy (cupyx.scipy.sparse.linalg.lsmr) on one GPU, and
SciPy on the CPU (N <= 2500). The same matrix goes to every solver (cupyx's, copied).

Prints one line per solver and size: time per solve (median of --repeats after a warm-up), the
iterations and istop, time per iteration, the solution's relative residual, and distarray's
statements per iteration (each a kernel or copy in the recorded loop body) and ratios.

  python3 lsmr_bench.py --address 127.0.0.1:50051 [--sizes 1000,2500,10000] [--devices 0]
"""
import argparse
import statistics
import time

import numpy as np


def statements_per_iteration(program):
    """Statements in the (first) while loop's body, nested bodies included."""
    def count(block):
        n = 0
        for s in block:
            kind = s.WhichOneof("op")
            if kind == "while_loop":
                n += count(s.while_loop.body)
            elif kind == "if_else":
                n += count(s.if_else.then_body) + count(s.if_else.else_body)
            else:
                n += 1
        return n
    for s in program.statements:
        if s.WhichOneof("op") == "while_loop":
            return count(s.while_loop.body)
    return 0


def median_seconds(run, repeats):
    times, result = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", default="127.0.0.1:50051")
    parser.add_argument("--sizes", default="1000,2500,10000")
    parser.add_argument("--devices", default="0")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import cupy
    import cupyx.scipy.sparse
    from cupyx.scipy.sparse.linalg import lsmr as lsmr_cupyx
    import distarray
    import distarray.sparse
    import distarray.sparse.linalg

    client = distarray.connect(args.address)
    devices = [int(d) for d in args.devices.split(",")]
    seen = {}
    original = client.run_graph

    def capture(program, *a, **k):
        seen["program"] = program.proto
        return original(program, *a, **k)
    client.run_graph = capture
    for n in (int(s) for s in args.sizes.split(",")):
        cupy.random.seed(42)
        a_gpu = cupyx.scipy.sparse.random(n, n, density=0.1, format="csr", dtype=np.float64)
        b_gpu = cupy.random.randn(n)
        maxiter = 5 * n
        a_host, b_host = a_gpu.get(), b_gpu.get()
        # distarray: the matrix uploaded once (outside the timing, as cupyx's is built once).
        a = distarray.sparse.csr_matrix(a_host, devices=devices, client=client)
        b = client.from_numpy(b_host)
        a.T  # the transpose, built once
        solve = lambda: distarray.sparse.linalg.lsmr(a, b, maxiter=maxiter)  # noqa: E731
        solve()  # records the graph
        ours_s, ours = median_seconds(solve, args.repeats)
        x = ours[0].to_numpy()
        res = np.linalg.norm(a_host @ x - b_host) / np.linalg.norm(b_host)
        per_iter = statements_per_iteration(seen["program"])
        print(f"lsmr_distarray_N{n}_ms {ours_s * 1e3:.1f} itn {ours[2]} istop {ours[1]} "
              f"us_per_iter {ours_s * 1e6 / max(ours[2], 1):.1f} relres {res:.3e} "
              f"statements_per_iter {per_iter} devices {len(devices)}", flush=True)
        x0 = cupy.zeros(n)

        def cupyx_solve():
            out = lsmr_cupyx(a_gpu, b_gpu, x0=x0, maxiter=maxiter)
            cupy.cuda.runtime.deviceSynchronize()
            return out
        lsmr_cupyx(a_gpu, b_gpu, x0=x0, maxiter=5)
        cupy.cuda.runtime.deviceSynchronize()
        peer_s, peer = median_seconds(cupyx_solve, args.repeats)
        itn = int(peer[2])
        res = float(cupy.linalg.norm(a_gpu @ peer[0] - b_gpu) / cupy.linalg.norm(b_gpu))
        print(f"lsmr_cupyx_N{n}_ms {peer_s * 1e3:.1f} itn {itn} istop {int(peer[1])} "
              f"us_per_iter {peer_s * 1e6 / max(itn, 1):.1f} relres {res:.3e}", flush=True)
        print(f"lsmr_N{n}_distarray_vs_cupyx per_solve {peer_s / ours_s:.2f}x per_iter "
              f"{(peer_s / max(itn, 1)) / (ours_s / max(ours[2], 1)):.2f}x", flush=True)
        if n <= 2500:
            from scipy.sparse.linalg import lsmr as lsmr_scipy
            cpu_s, cpu = median_seconds(
                lambda: lsmr_scipy(a_host, b_host, x0=np.zeros(n), maxiter=maxiter), 1)
            print(f"lsmr_scipy_N{n}_ms {cpu_s * 1e3:.1f} itn {cpu[2]} istop {cpu[1]} "
                  f"us_per_iter {cpu_s * 1e6 / max(cpu[2], 1):.1f}", flush=True)
            print(f"lsmr_N{n}_distarray_vs_scipy per_solve {cpu_s / ours_s:.2f}x per_iter "
                  f"{(cpu_s / max(cpu[2], 1)) / (ours_s / max(ours[2], 1)):.2f}x", flush=True)
    client.close()


if __name__ == "__main__":
    main()
