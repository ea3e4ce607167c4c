"""The peer of sort_bench, timed in the same run: cupy.sort and cupy.argsort of 1 GiB of float32
(2^28 uniform values) on one GPU, device time from CUDA events, median of 5 after a warm-up.

    python3 bench/cupy_sort.py [--elements=N] > peers.txt

Prints "cupy_sort_ms <ms>" and "cupy_argsort_ms <ms>" lines for sort_bench --peer_file.
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
    args = parser.parse_args()
    x = cupy.random.default_rng(1).random(args.elements, dtype=cupy.float32)
    s = cupy.sort(x)
    if not bool((s[1:] >= s[:-1]).all()):
        raise SystemExit("cupy_sort: cupy.sort's result is not sorted")
    del s
    print(f"cupy_sort_ms {median_ms(lambda: cupy.sort(x)):.4f}")
    print(f"cupy_argsort_ms {median_ms(lambda: cupy.argsort(x)):.4f}")


if __name__ == "__main__":
    main()
