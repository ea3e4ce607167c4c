"""The peer of scan_bench, timed in the same run: cupy.cumsum of 1 GiB of float32 on one GPU (a
1-D array of 2^28 uniform values, and a 16384 x 16384 matrix along each axis), device time from
CUDA events, median of 5 after a warm-up.

    python3 bench/cupy_scan.py [--elements=N] [--side=S] > peers.txt

Prints "cupy_cumsum_1d_ms", "cupy_cumsum_axis0_ms" and "cupy_cumsum_axis1_ms" lines for
scan_bench --peer_file.
"""
import argparse

import cupy


def median_ms(fn, repeats=5):
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    fn()
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return sorted(times)[len(times) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--elements", type=int, default=1 << 28)
    parser.add_argument("--side", type=int, default=16384)
    args = parser.parse_args()
    rng = cupy.random.default_rng(1)
    x = rng.random(args.elements, dtype=cupy.float32)
    print(f"cupy_cumsum_1d_ms {median_ms(lambda: cupy.cumsum(x)):.4f}")
    del x
    m = rng.random((args.side, args.side), dtype=cupy.float32)
    print(f"cupy_cumsum_axis0_ms {median_ms(lambda: cupy.cumsum(m, axis=0)):.4f}")
    print(f"cupy_cumsum_axis1_ms {median_ms(lambda: cupy.cumsum(m, axis=1)):.4f}")


if __name__ == "__main__":
    main()
