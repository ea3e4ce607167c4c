"""The peers of kernel_bench's 16-bit float rows, timed in the same run: CuPy's float16 `A + B`
and `sum` on one GPU over the same element count (2^28 by default: 512 MiB operands), device time
from CUDA events, median of 20 after warm-ups. CuPy has no bfloat16, so the bfloat16 rows are
compared with CuPy's float16 (the same bytes moved).

    python3 bench/cupy_half.py [--elements=N] [--kernels=FILE]

With --kernels (kernel_bench's output of the same run) it prints each 16-bit row against CuPy as
"half_<row>_vs_cupy <ratio>" (CuPy's time over the kernel's: above 1 is faster than CuPy).
"""
import argparse
import sys

import cupy


def median_ms(fn, repeats=20):
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return sorted(times)[len(times) // 2]


def kernel_figures(path):
    """kernel_bench's "kernel_<row>_ms <value>" lines of one run, as a dict."""
    return dict(line.split()[:2] for line in open(path)
                if line.startswith("kernel_") and len(line.split()) == 2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--elements", type=int, default=1 << 28)
    parser.add_argument("--kernels")
    args = parser.parse_args()
    rng = cupy.random.default_rng(1)
    a = rng.random(args.elements, dtype=cupy.float32).astype(cupy.float16)
    b = rng.random(args.elements, dtype=cupy.float32).astype(cupy.float16)
    out = cupy.empty_like(a)
    ms = median_ms(lambda: cupy.add(a, b, out=out))
    expected = (a.astype(cupy.float32) + b.astype(cupy.float32)).astype(cupy.float16)
    if not bool((out == expected).all()):
        print("cupy_half: CuPy's float16 add differs from float32-and-round", file=sys.stderr)
    print(f"cupy_add_f16_ms {ms:.4f}")
    print(f"cupy_add_f16_GBps {3 * 2 * args.elements / (ms * 1e-3) / 1e9:.1f}")
    centred = a - cupy.float16(0.5)  # the sum of 2^28 stays within float16's range
    sum_ms = median_ms(lambda: cupy.sum(centred))
    print(f"cupy_sum_f16_ms {sum_ms:.4f}")
    print(f"cupy_sum_f16_GBps {2 * args.elements / (sum_ms * 1e-3) / 1e9:.1f}")
    if args.kernels:
        figures = kernel_figures(args.kernels)
        for row, peer in (("add_f16", ms), ("add_bf16", ms), ("sum_f16", sum_ms),
                          ("sum_bf16", sum_ms)):
            key = f"kernel_{row}_ms"
            if key in figures:
                print(f"half_{row}_vs_cupy {peer / float(figures[key]):.2f}")


if __name__ == "__main__":
    main()
