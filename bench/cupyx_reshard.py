"""The peer: cupyx.distributed.array reshards of the benchmark's layouts, same bytes, same run.

Prints "key value" lines that distarray_bench reads.
"""
import time

import cupy
from cupyx.distributed.array import distributed_array

N = 1 << 28  # 1 GiB of float32


def sync():
    for d in range(2):
        cupy.cuda.Device(d).synchronize()


def median_ms(fn, reps=7):
    fn()
    fn()
    times = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    if cupy.cuda.runtime.getDeviceCount() < 2:
        print("cupyx_devices 1")
        return
    with cupy.cuda.Device(0):
        a = cupy.random.random(N, dtype=cupy.float32)
    halves = {0: slice(0, N // 2), 1: slice(N // 2, N)}
    A = distributed_array(a, halves)
    del a
    quarter = {0: slice(0, N // 4), 1: slice(N // 4, N)}
    swapped = {0: slice(N // 2, N), 1: slice(0, N // 2)}
    ms_a = median_ms(lambda: A.reshard(quarter))
    print(f"cupyx_move_quarter_ms {ms_a:.4f}")
    print(f"cupyx_move_quarter_GBps {(N // 4) * 4 / (ms_a * 1e-3) / 1e9:.1f}")
    ms_b = median_ms(lambda: A.reshard(swapped))
    print(f"cupyx_swap_ms {ms_b:.4f}")
    print(f"cupyx_swap_GBps {N * 4 / (ms_b * 1e-3) / 1e9:.1f}")


if __name__ == "__main__":
    main()
