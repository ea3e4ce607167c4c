"""The seed's LSMR benchmark (cupy/cupy examples/cuda_graph/lsmr.py) against distarray's
``distarray.sparse.linalg.lsmr``, one RunGraph per solve: A = cupyx.scipy.sparse.random(N, N,
density=0.1, format="csr", float64) with cupy seed 42, b = randn(N), x0 = 0, atol = btol =
1e-6, conlim = 1e8, maxiter pinned to 5 N (cupyx's default; SciPy's is N) for every solver.
Peers measured in the same run: plain CuPy (cupyx.scipy.sparse.linalg.lsmr) on one GPU, and
SciPy on the CPU (N <= 2500). The same matrix goes to every solver (cupyx's, copied).

Prints one line per solver and size: time per solve (median of --repeats after a warm-up), the
iterations and istop, time per iteration, the solution's relative residual, distarray's
statements per iteration and the operations its recorded loop body launches per iteration
(statements less those fused into straight-line chain kernels, plus those kernels), and ratios.

--large ROWS,PER_ROW,ITERATIONS: the large solve instead, an N x N matrix with PER_ROW random
nonzeros per row (10^6 and 50: 5 * 10^7 nonzeros), a fixed number of iterations (atol = btol =
conlim = 0), on the first device of --devices and then over all of them: time per iteration and
the speedup of the split solve.

  python3 lsmr_bench.py --address 127.0.0.1:50051 [--sizes 1000,2500,10000] [--devices 0]
  python3 lsmr_bench.py --address 127.0.0.1:50051 --large 1000000,50,200 --devices 0,1
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


def operations_per_iteration(program, run):
    """What the recorded loop body launches per iteration: its statements, those fused into
    straight-line chains counted once per chain kernel."""
    return (statements_per_iteration(program) - run.fused_chain_statements_in_bodies
            + run.fused_chains_in_bodies)


def capture_runs(client):
    """Wraps client.run_graph so the last call's program and reply are kept: returns the dict
    holding them ("program", "run")."""
    seen = {}
    original = client.run_graph

    def capture(program, *a, **k):
        seen["program"] = program.proto
        seen["run"] = original(program, *a, **k)
        return seen["run"]
    client.run_graph = capture
    return seen


def large_solve(client, rows, per_row, iterations, devices, repeats):
    """LSMR on a rows x rows matrix of per_row random nonzeros per row, `iterations` iterations
    exactly, on devices[:1] and then on all of devices."""
    import distarray.sparse
    import distarray.sparse.linalg
    rng = np.random.default_rng(42)
    nnz = rows * per_row
    indptr = np.arange(0, nnz + 1, per_row, dtype=np.int64)
    indices = rng.integers(0, rows, nnz, dtype=np.int32)
    data = rng.standard_normal(nnz)
    b_host = rng.standard_normal(rows)
    print(f"lsmr_large rows {rows} nnz {nnz} iterations {iterations}", flush=True)
    per_iter = {}
    for on in ([devices[0]], devices) if len(devices) > 1 else ([devices[0]],):
        t = time.perf_counter()
        a = distarray.sparse.csr_matrix((data, indices, indptr), shape=(rows, rows), devices=on,
                                        client=client)
        a.T
        b = client.from_numpy(b_host)
        print(f"lsmr_large_devices{len(on)}_setup_s {time.perf_counter() - t:.1f}", flush=True)
        solve = lambda: distarray.sparse.linalg.lsmr(  # noqa: E731
            a, b, atol=0.0, btol=0.0, conlim=0.0, maxiter=iterations)
        solve()  # records the graph
        seconds, out = median_seconds(solve, repeats)
        assert out[2] == iterations and out[1] == 7, (out[1], out[2])
        x = out[0].to_numpy()
        # The residual's norm, from the host (float64 CSR product), against the solver's estimate.
        ax = np.add.reduceat(data * x[indices], indptr[:-1])
        res = float(np.linalg.norm(b_host - ax))
        assert abs(res - out[3]) <= 1e-6 * res, (res, out[3])
        per_iter[len(on)] = seconds / iterations
        print(f"lsmr_large_devices{len(on)}_ms {seconds * 1e3:.1f} us_per_iter "
              f"{seconds * 1e6 / iterations:.1f} normr {out[3]:.6e} host_normr {res:.6e}",
              flush=True)
        del a, b
    if len(per_iter) > 1:
        print(f"lsmr_large_split_speedup {per_iter[1] / per_iter[len(devices)]:.2f}x "
              f"({len(devices)} devices vs 1)", flush=True)


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
    parser.add_argument("--large", default="")
    args = parser.parse_args()
    if args.large:
        import distarray
        client = distarray.connect(args.address)
        rows, per_row, iterations = (int(v) for v in args.large.split(","))
        large_solve(client, rows, per_row, iterations,
                    [int(d) for d in args.devices.split(",")], args.repeats)
        client.close()
        return
    import cupy
    import cupyx.scipy.sparse
    from cupyx.scipy.sparse.linalg import lsmr as lsmr_cupyx
    import distarray
    import distarray.sparse
    import distarray.sparse.linalg

    client = distarray.connect(args.address)
    devices = [int(d) for d in args.devices.split(",")]
    seen = capture_runs(client)
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
        launched = operations_per_iteration(seen["program"], seen["run"])
        print(f"lsmr_distarray_N{n}_ms {ours_s * 1e3:.1f} itn {ours[2]} istop {ours[1]} "
              f"us_per_iter {ours_s * 1e6 / max(ours[2], 1):.1f} relres {res:.3e} "
              f"statements_per_iter {per_iter} operations_per_iter {launched} "
              f"devices {len(devices)}", flush=True)
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
