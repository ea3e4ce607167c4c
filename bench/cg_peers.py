"""Peers for conjugate gradient on a dense symmetric positive-definite float64 system, the whole
solve: plain CuPy (the host reads r.r every iteration) and JAX `jit(jax.scipy.sparse.linalg.cg)`.
The system matches the C++ side: A[i][j] = exp(-|i-j| / 16.0) (an Ornstein-Uhlenbeck covariance
matrix), b = ones, x0 = zeros; iterate while r.r > tol2 = (1e-8)**2 * (b.b), at most
--max_iterations times. Prints `key value` lines (milliseconds, median of --repeats) for the
C++ benchmark; a peer whose library is missing or fails gets a note on stderr and no lines.

  python3 cg_peers.py [--n 8192] [--max_iterations 10000] [--repeats 5]
"""
import argparse
import os
import statistics
import sys
import time

TOL = 1e-8
SCALE = 16.0


def cg_step(dot, A, x, r, p, rr):
    """One iteration of the loop both peers (and cg_bench) run; `dot` is cupy's or jax's."""
    Ap = A @ p
    alpha = rr / dot(p, Ap)
    x = x + alpha * p
    r = r - alpha * Ap
    rr_new = dot(r, r)
    p = r + (rr_new / rr) * p
    return x, r, p, rr_new


def median_ms(run, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def cupy_peer(n, max_iterations, repeats):
    import cupy as cp

    d = cp.arange(n, dtype=cp.float64)
    A = cp.exp(-cp.abs(d[:, None] - d[None, :]) / SCALE)
    b = cp.ones(n, dtype=cp.float64)
    tol2 = TOL**2 * float(cp.dot(b, b))

    def solve():
        x = cp.zeros(n, dtype=cp.float64)
        r = b - A @ x
        p = r
        rr = cp.dot(r, r)
        k = 0
        while float(rr) > tol2 and k < max_iterations:  # one device-to-host read per iteration
            x, r, p, rr = cg_step(cp.dot, A, x, r, p, rr)
            k += 1
        return x, k

    def timed():
        cp.cuda.Device().synchronize()
        solve()
        cp.cuda.Device().synchronize()

    solve()  # warm up: compile the kernels, set up cuBLAS
    ms = median_ms(timed, repeats)
    x, k = solve()
    res = b - A @ x
    residual = float(cp.sqrt(cp.dot(res, res)) / cp.sqrt(cp.dot(b, b)))
    del A, d, b, x, res
    cp.get_default_memory_pool().free_all_blocks()  # leave the GPU memory to JAX
    return [f"cg_cupy_ms {ms:.4f}", f"cg_cupy_iterations {k}", f"cg_cupy_residual {residual:.3e}"]


def jax_peer(n, max_iterations, repeats):
    import jax

    jax.config.update("jax_enable_x64", True)  # before any array is created
    import jax.numpy as jnp
    from jax.scipy.sparse.linalg import cg

    d = jnp.arange(n, dtype=jnp.float64)
    A = jnp.exp(-jnp.abs(d[:, None] - d[None, :]) / SCALE)
    b = jnp.ones(n, dtype=jnp.float64)
    x0 = jnp.zeros(n, dtype=jnp.float64)
    assert A.dtype == jnp.float64 and b.dtype == jnp.float64

    @jax.jit
    def jax_cg(A, b, x0):  # A is an argument, not a constant folded into the program
        return cg(A, b, x0=x0, tol=TOL, atol=0.0, maxiter=max_iterations)[0]

    @jax.jit
    def counted_cg(A, b, x0):  # exactly the loop of the C++ side, to count iterations
        tol2 = TOL**2 * jnp.dot(b, b)
        r = b - A @ x0

        def cond(state):
            _, _, _, rr, k = state
            return (rr > tol2) & (k < max_iterations)

        def body(state):
            x, r, p, rr, k = state
            return (*cg_step(jnp.dot, A, x, r, p, rr), k + 1)

        x, _, _, _, k = jax.lax.while_loop(cond, body, (x0, r, r, jnp.dot(r, r), jnp.int32(0)))
        return x, k

    jax_cg(A, b, x0).block_until_ready()  # compile
    ms = median_ms(lambda: jax_cg(A, b, x0).block_until_ready(), repeats)
    x = jax_cg(A, b, x0)
    res = b - A @ x
    residual = float(jnp.sqrt(jnp.dot(res, res)) / jnp.sqrt(jnp.dot(b, b)))
    x_counted, k = counted_cg(A, b, x0)
    k = int(k)
    diff = float(jnp.max(jnp.abs(x_counted - x)) / jnp.max(jnp.abs(x)))
    if diff > 1e-6:
        print(f"# jax: while_loop solution differs from cg's by {diff:.3e} (relative)",
              file=sys.stderr)
    return [f"cg_jax_ms {ms:.4f}", f"cg_jax_iterations {k}", f"cg_jax_residual {residual:.3e}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--max_iterations", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    # CuPy and JAX share the GPU: JAX must not grab most of its memory up front.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

    print(f"cg_n {args.n}", flush=True)
    print(f"cg_tol2 {TOL**2 * float(args.n):.17g}", flush=True)  # b.b = n exactly
    for name, peer in (("cupy", cupy_peer), ("jax", jax_peer)):
        try:
            lines = peer(args.n, args.max_iterations, args.repeats)
        except ImportError as e:
            print(f"# {name} unavailable: {e}", file=sys.stderr)
            continue
        except Exception as e:  # a broken peer must not hide the other one
            print(f"# {name} failed: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
