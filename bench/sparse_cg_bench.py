"""Sparse CG on the 2-D Poisson matrix (5-point stencil, n x n unknowns, float64): distarray's
``distarray.sparse.linalg.cg`` (one RunGraph per solve) on one GPU and with the rows over two,
against ``cupyx.scipy.sparse.linalg.cg`` (one GPU) and ``jax.scipy.sparse.linalg.cg`` with a BCOO
matrix under jit (one GPU), all measured in the same run with the same iteration count: the
tolerance is unreachable and ``maxiter`` fixed, so every solver runs exactly --iterations
iterations. Prints ms per solve and µs per iteration, and ratios against each peer.

  python3 sparse_cg_bench.py --address 127.0.0.1:50051 [--n 4096] [--iterations 200]
"""
import argparse
import statistics
import sys
import time

import numpy as np


def poisson_csr(n):
    """The 5-point Laplacian on an n x n grid (Dirichlet), as canonical CSR arrays."""
    N = n * n
    i = np.arange(N, dtype=np.int64)
    y, x = np.divmod(i, n)
    offsets = [(-n, y > 0), (-1, x > 0), (0, np.ones(N, bool)), (1, x < n - 1), (n, y < n - 1)]
    counts = sum(mask.astype(np.int64) for _, mask in offsets)
    indptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(indptr[-1], dtype=np.int32)
    data = np.empty(indptr[-1], dtype=np.float64)
    cursor = indptr[:-1].copy()
    for offset, mask in offsets:  # ascending column order within each row
        rows = i[mask]
        indices[cursor[mask]] = (rows + offset).astype(np.int32)
        data[cursor[mask]] = 4.0 if offset == 0 else -1.0
        cursor[mask] += 1
    return data, indices, indptr


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
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gpus", default="1,2", help="device counts to run ours on")
    args = parser.parse_args()
    n, iters = args.n, args.iterations
    N = n * n
    data, indices, indptr = poisson_csr(n)
    b_host = np.random.default_rng(0).random(N)
    print(f"poisson n {n} unknowns {N} nnz {len(data)} iterations {iters}", flush=True)
    results = {}

    import distarray
    import distarray.sparse
    import distarray.sparse.linalg
    from lsmr_bench import capture_runs, operations_per_iteration
    client = distarray.connect(args.address)
    seen = capture_runs(client)
    for devices in (list(range(int(g))) for g in args.gpus.split(",")):
        a = distarray.sparse.csr_matrix((data, indices, indptr), shape=(N, N), devices=devices,
                                        client=client)
        b = client.from_numpy(b_host)
        solve = lambda: distarray.sparse.linalg.cg(a, b, rtol=1e-300, maxiter=iters)  # noqa
        x, info = solve()  # records the graph
        assert info == iters, info
        s = timed(solve, args.repeats)
        r = np.linalg.norm(b_host - scipy_matvec(data, indices, indptr, x.to_numpy()))
        key = f"distarray_{len(devices)}gpu"
        results[key] = s
        print(f"cg_{key}_ms {s * 1e3:.1f} us_per_iter {s * 1e6 / iters:.1f} "
              f"residual {r / np.linalg.norm(b_host):.3e} operations_per_iter "
              f"{operations_per_iteration(seen['program'], seen['run'])}", flush=True)
        del a, b, x
    client.close()

    try:
        import cupy
        import cupyx.scipy.sparse
        import cupyx.scipy.sparse.linalg
        a = cupyx.scipy.sparse.csr_matrix((cupy.asarray(data), cupy.asarray(indices),
                                           cupy.asarray(indptr)), shape=(N, N))
        b = cupy.asarray(b_host)

        def cupyx_solve():
            try:
                out = cupyx.scipy.sparse.linalg.cg(a, b, tol=1e-300, maxiter=iters)
            except TypeError:
                out = cupyx.scipy.sparse.linalg.cg(a, b, rtol=1e-300, maxiter=iters)
            cupy.cuda.runtime.deviceSynchronize()
            return out
        cupyx_solve()
        s = timed(cupyx_solve, args.repeats)
        results["cupyx"] = s
        print(f"cg_cupyx_ms {s * 1e3:.1f} us_per_iter {s * 1e6 / iters:.1f}", flush=True)
        del a, b
        cupy.get_default_memory_pool().free_all_blocks()
    except Exception as e:  # noqa: BLE001: a peer that fails is reported, not fatal
        print(f"cupyx peer failed: {e}", file=sys.stderr)

    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.experimental import sparse as jsparse
        rows = np.repeat(np.arange(N, dtype=np.int32), np.diff(indptr))
        a = jsparse.BCOO((jnp.asarray(data), jnp.asarray(np.stack([rows, indices], axis=1))),
                         shape=(N, N))
        b = jnp.asarray(b_host)
        solve = jax.jit(lambda a, b: jax.scipy.sparse.linalg.cg(lambda v: a @ v, b, tol=1e-300,
                                                                maxiter=iters)[0])
        solve(a, b).block_until_ready()
        s = timed(lambda: solve(a, b).block_until_ready(), args.repeats)
        results["jax"] = s
        print(f"cg_jax_bcoo_ms {s * 1e3:.1f} us_per_iter {s * 1e6 / iters:.1f}", flush=True)
    except Exception as e:  # noqa: BLE001
        print(f"jax peer failed: {e}", file=sys.stderr)

    for ours in ("distarray_1gpu", "distarray_2gpu"):
        for peer in ("cupyx", "jax"):
            if ours in results and peer in results:
                print(f"cg_{ours}_vs_{peer} {results[peer] / results[ours]:.2f}x", flush=True)


def scipy_matvec(data, indices, indptr, x):
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return np.bincount(rows, weights=data * x[indices], minlength=len(indptr) - 1)


if __name__ == "__main__":
    main()
