"""Peers for the seed's loop `while all(a < 1000): a += 1` (float32, a[i] = i % 7, 994
iterations) at 1e5, 1e6 and 1e7 elements: NumPy on the CPU, plain CuPy (the host drives every
iteration), and JAX `jit(lax.while_loop)` by default (the predicate goes to the host each
iteration) and with the loop in a CUDA graph (XLA command buffers), on one GPU and sharded over
two and four GPUs where there are. Prints `key value` lines (milliseconds, median of 5) for
loop_bench.

  python3 loop_peers.py            # everything (re-runs itself once per JAX mode)
  python3 loop_peers.py jax MODE   # one JAX mode: default or graph
"""
import os
import subprocess
import sys
import time

SIZES = (100_000, 1_000_000, 10_000_000)
LIMIT = 1000.0
ITERATIONS = 994  # the maximum (6) reaches 1000 after 994 steps


def median_ms(run, reps=5):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def tag(n):
    return f"1e{len(str(n)) - 1}"


def numpy_and_cupy():
    import numpy as np

    for n in SIZES:
        start = (np.arange(n) % 7).astype(np.float32)

        def numpy_loop():
            a = start.copy()
            while np.all(a < LIMIT):
                a += 1
            return a

        reps = 1 if n >= 10_000_000 else 3
        print(f"numpy_{tag(n)}_ms {median_ms(numpy_loop, reps):.3f}", flush=True)
    try:
        import cupy as cp
    except ImportError as e:
        print(f"# cupy unavailable: {e}", file=sys.stderr)
        return
    for n in SIZES:
        start = cp.asarray((np.arange(n) % 7).astype(np.float32))

        def cupy_loop():
            a = start.copy()
            while bool(cp.all(a < LIMIT)):
                a += 1
            cp.cuda.Device().synchronize()
            return a

        cupy_loop()  # compile the kernels
        print(f"cupy_{tag(n)}_ms {median_ms(cupy_loop):.3f}", flush=True)


def jax_mode(mode):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if mode == "graph":
        # Without --xla_gpu_graph_min_graph_size=1 the loop stays on the host.
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "")
            + " --xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,WHILE,"
            "CONDITIONAL,COLLECTIVES --xla_gpu_graph_min_graph_size=1")
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    @jax.jit
    def loop(a):
        return jax.lax.while_loop(lambda a: jnp.all(a < LIMIT), lambda a: a + 1, a)

    devices = jax.devices()
    for gpus in sorted({1, min(2, len(devices)), min(4, len(devices))}):
        mesh = Mesh(np.array(devices[:gpus]), ("x",))
        for n in SIZES:
            host = (np.arange(n) % 7).astype(np.float32)
            a = jax.device_put(host, NamedSharding(mesh, PartitionSpec("x")))
            loop(a).block_until_ready()  # compile
            ms = median_ms(lambda: loop(a).block_until_ready())
            ok = np.array_equal(np.asarray(loop(a)), host + ITERATIONS)
            print(f"jax_{mode}_{gpus}gpu_{tag(n)}_ms {ms:.3f}", flush=True)
            if not ok:
                print(f"# jax {mode} {gpus} GPU n={n}: WRONG RESULT", file=sys.stderr)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "jax":
        jax_mode(sys.argv[2])
        return
    numpy_and_cupy()
    for mode in ("default", "graph"):
        # XLA_FLAGS must be set before jax is imported: one process per mode.
        result = subprocess.run([sys.executable, __file__, "jax", mode])
        if result.returncode != 0:
            print(f"# jax {mode} failed (exit {result.returncode})", file=sys.stderr)


if __name__ == "__main__":
    main()
