"""The peers of distarray_bench's compute figures, timed in the same run: CuPy on one GPU and
cupyx.distributed.array over the GPUs, on the shapes the benchmark uses.

  A + B   two 16384x16384 float32 arrays (1 GiB each): 3 GiB moved (2 read, 1 written)
  sum     of one such array, all axes: 1 GiB read
  matmul  16384x16384 @ 16384x16384 float32, TF32 off: 2 * 16384^3 flops
  complex 8192x8192 @ 8192x8192 complex64 on one GPU: 8 * 8192^3 flops

Each figure is the median wall time of (op + synchronize every device used) after warm-ups, the
result freed after the clock stops, as distarray_bench times (RPC + Synchronize).

Prints "key value" lines that distarray_bench reads (--compute_file); notes go to stderr.
    python3 bench/cupy_compute.py [--cupyx_devices=0,1,...]
cupyx runs over every GPU (rows split evenly, B replicated for matmul) and is skipped with a note
when only one GPU is present, unless --cupyx_devices names the devices (a device may repeat: it
then holds several row blocks, which exercises the cupyx code on one GPU).
"""
import argparse
import os
import sys
import time

# TF32 off for float32 matmul. CuPy 14 has no set_allow_tf32: it reads CUPY_TF32 (default 0) once,
# the first time it picks a compute type for float32, so it is set before CuPy is imported.
# NVIDIA_TF32_OVERRIDE=0 makes cuBLAS itself refuse TF32 whatever it is asked.
os.environ["CUPY_TF32"] = "0"
os.environ["NVIDIA_TF32_OVERRIDE"] = "0"

import cupy  # noqa: E402

SIDE = 16384  # a 16384x16384 float32 array is 1 GiB
GIB = 1 << 30
BLOCK = 1024  # the batched matmul: (STACK, BLOCK, BLOCK) @ (BLOCK, BLOCK), float32
COMPLEX_SIDE = 8192  # the complex64 matmul: 8192^2 @ 8192^2
STACK = SIDE * SIDE // (BLOCK * BLOCK)


def note(message):
    print(f"cupy_compute: {message}", file=sys.stderr, flush=True)


def sync(devices):
    for d in sorted(set(devices)):
        cupy.cuda.Device(d).synchronize()


def median_ms(fn, devices, warmup=2, reps=9):
    for _ in range(warmup):
        r = fn()
        sync(devices)
        del r
    times = []
    for _ in range(reps):
        sync(devices)
        t0 = time.perf_counter()
        r = fn()
        sync(devices)
        times.append((time.perf_counter() - t0) * 1e3)
        del r  # freeing the result is not timed
    times.sort()
    return times[len(times) // 2]


def emit_bandwidth(key, ms, moved_bytes):
    print(f"{key}_ms {ms:.4f}")
    print(f"{key}_GBps {moved_bytes / (ms * 1e-3) / 1e9:.1f}")


def emit_flops(key, ms):
    print(f"{key}_ms {ms:.4f}")
    print(f"{key}_TFLOPs {2.0 * SIDE**3 / (ms * 1e-3) / 1e12:.2f}")


def tf32_state():
    """1 when CuPy would let cuBLAS use TF32 for float32 matmul, 0 when not, None if unknown."""
    try:
        from cupy._core import _routines_linalg as linalg

        return int(linalg.get_compute_type(cupy.float32) == linalg.COMPUTE_TYPE_TF32)
    except Exception as e:  # a private API: report, don't fail
        note(f"could not read CuPy's float32 compute type ({e!r})")
        return None


def one_gpu(a, b):
    """CuPy on device 0 (a and b live there)."""
    emit_bandwidth("cupy_add_1GiB", median_ms(lambda: a + b, [0]), 3 * GIB)
    emit_bandwidth("cupy_sum_1GiB", median_ms(lambda: cupy.sum(a), [0]), GIB)
    tf32 = tf32_state()
    if tf32 is not None:
        print(f"cupy_matmul_tf32 {tf32}")
    emit_flops("cupy_matmul_16384", median_ms(lambda: cupy.matmul(a, b), [0], warmup=1, reps=5))
    # A stack of 256 1024x1024 matrices (a's bytes) times one 1024x1024 matrix: the same flops
    # per byte as the distarray bench's batched matmul.
    stack = a.reshape(STACK, BLOCK, BLOCK)
    w = cupy.ascontiguousarray(b[:BLOCK, :BLOCK])
    ms = median_ms(lambda: cupy.matmul(stack, w), [0], warmup=1, reps=5)
    print(f"cupy_batched_matmul_ms {ms:.4f}")
    print(f"cupy_batched_matmul_TFLOPs {2.0 * STACK * BLOCK**3 / (ms * 1e-3) / 1e12:.2f}")
    # complex64 8192^3 (parts from a's and b's values): 8 real flops per complex multiply-add.
    n = COMPLEX_SIDE
    ca = (a[:n, :n] + 1j * a[n:2 * n, :n]).astype(cupy.complex64)
    cb = (b[:n, :n] + 1j * b[n:2 * n, :n]).astype(cupy.complex64)
    ms = median_ms(lambda: cupy.matmul(ca, cb), [0], warmup=1, reps=5)
    print(f"cupy_matmul_c64_ms {ms:.4f}")
    print(f"cupy_matmul_c64_TFLOPs {8.0 * n**3 / (ms * 1e-3) / 1e12:.2f}")
    del ca, cb


def row_blocks(devices):
    """An index map splitting axis 0 of a SIDE x SIDE array evenly over `devices` in order."""
    index_map = {}
    n = len(devices)
    for i, d in enumerate(devices):
        rows = slice(SIDE * i // n, SIDE * (i + 1) // n)
        index_map.setdefault(d, []).append((rows, slice(None)))
    return index_map


def cupyx_gpus(a, b, devices):
    """cupyx.distributed.array over `devices` (a and b, the sources, live on device 0). Each
    figure is skipped with a note when cupyx fails on it."""
    from cupyx.distributed import array as darray
    from cupyx.distributed.array import _modes

    print(f"cupyx_devices {len(devices)}")
    rows = row_blocks(devices)
    try:
        A = darray.distributed_array(a, rows, _modes.REPLICA)
    except Exception as e:
        note(f"cupyx.distributed.array could not distribute A: {e!r}")
        return
    try:
        B = darray.distributed_array(b, rows, _modes.REPLICA)
        sync(devices + [0])
        ms = median_ms(lambda: A + B, devices)
        # Check one row of each block against CuPy's, outside the timing.
        C = A + B
        for dev, blocks in C.all_chunks().items():
            for block, index in zip(blocks, rows[dev]):
                r = index[0].start
                with cupy.cuda.Device(dev):
                    got = cupy.asnumpy(block[0])
                with cupy.cuda.Device(0):
                    want = cupy.asnumpy(a[r] + b[r])
                if not (got == want).all():
                    raise RuntimeError(f"A + B differs from CuPy's in row {r}")
        del B, C
        emit_bandwidth("cupyx_add_1GiB", ms, 3 * GIB)
    except Exception as e:  # cupyx is the peer, not the thing measured: note and go on
        note(f"cupyx.distributed.array A + B failed: {e!r}")
    sys.stdout.flush()
    # matmul: A row-split, B replicated on every device.
    try:
        replicated = {d: [(slice(None), slice(None))] for d in sorted(set(devices))}
        B_rep = darray.distributed_array(b, replicated, _modes.REPLICA)
        sync(devices + [0])
        emit_flops(
            "cupyx_matmul_16384",
            median_ms(lambda: darray.matmul(A, B_rep), devices, warmup=1, reps=5),
        )
    except Exception as e:
        note(f"cupyx.distributed.array matmul failed or is missing: {e!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cupyx_devices", default="",
                        help="comma-separated devices for cupyx (default: every GPU, skipped "
                             "when there is one)")
    args = parser.parse_args()
    ndev = cupy.cuda.runtime.getDeviceCount()
    print(f"cupy_devices {ndev}")
    with cupy.cuda.Device(0):
        a = cupy.random.random((SIDE, SIDE), dtype=cupy.float32)
        b = cupy.random.random((SIDE, SIDE), dtype=cupy.float32)
        one_gpu(a, b)
    sys.stdout.flush()
    if args.cupyx_devices:
        devices = [int(d) for d in args.cupyx_devices.split(",")]
    elif ndev < 2:
        note("cupyx.distributed.array skipped: one GPU")
        return
    else:
        devices = list(range(ndev))
    try:
        cupyx_gpus(a, b, devices)
    except Exception as e:  # e.g. no cupyx.distributed.array, or no NCCL
        note(f"cupyx.distributed.array failed: {e!r}")


if __name__ == "__main__":
    main()
