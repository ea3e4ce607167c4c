"""The peers of kernel_bench's complex rows, timed in the same run: CuPy's complex64 and
complex128 `A * B`, `A / B` and `exp(A)` on one GPU over the same bytes (512 MiB per operand by default),
device time from CUDA events, median of 20 after warm-ups.

    python3 bench/cupy_complex.py [--bytes=N] [--kernels=FILE]

With --kernels (kernel_bench's output of the same run) it prints each complex row against CuPy as
"complex_<row>_vs_cupy <ratio>" (CuPy's time over the kernel's: above 1 is faster than CuPy).
"""
import argparse

import cupy

from cupy_half import kernel_figures, median_ms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bytes", type=int, default=1 << 30)
    parser.add_argument("--kernels")
    args = parser.parse_args()
    rng = cupy.random.default_rng(2)
    times = {}
    for dtype, suffix in ((cupy.complex64, "c64"), (cupy.complex128, "c128")):
        count = args.bytes // cupy.dtype(dtype).itemsize
        parts = cupy.float32 if dtype == cupy.complex64 else cupy.float64
        a = (rng.uniform(-2, 2, count, dtype=parts) + 1j * rng.uniform(-2, 2, count, dtype=parts))
        b = (rng.uniform(-2, 2, count, dtype=parts) + 1j * rng.uniform(-2, 2, count, dtype=parts))
        a, b = a.astype(dtype), b.astype(dtype)
        out = cupy.empty_like(a)
        for name, ufunc in (("multiply", cupy.multiply), ("divide", cupy.true_divide)):
            ms = median_ms(lambda: ufunc(a, b, out=out))
            row = f"{name}_{suffix}"
            times[row] = ms
            print(f"cupy_{row}_ms {ms:.4f}")
            print(f"cupy_{row}_GBps {3 * args.bytes / (ms * 1e-3) / 1e9:.1f}")
        ms = median_ms(lambda: cupy.exp(a, out=out))
        times[f"exp_{suffix}"] = ms
        print(f"cupy_exp_{suffix}_ms {ms:.4f}")
        print(f"cupy_exp_{suffix}_GBps {2 * args.bytes / (ms * 1e-3) / 1e9:.1f}")
        del a, b, out
    if args.kernels:
        figures = kernel_figures(args.kernels)
        for row, peer in times.items():
            key = f"kernel_{row}_ms"
            if key in figures:
                print(f"complex_{row}_vs_cupy {peer / float(figures[key]):.2f}")


if __name__ == "__main__":
    main()
