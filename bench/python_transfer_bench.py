"""Upload and download throughput of the Python SDK through gRPC, against a host memcpy of the
same bytes (and, given --cpp_figures, the C++ SDK's figures from `distarray_bench --only=transfer`
of the same run).

    python bench/python_transfer_bench.py --address 127.0.0.1:50051 [--gib 1] [--repeats 3]

Prints `key value` lines, as the other benches do: python_upload_GBps, python_download_GBps
(best of --repeats, GB = 1e9 bytes), python_download_existing_GBps (into an array already in
use, `to_numpy(out=)`, as the C++ bench downloads), host_memcpy_GBps, and the ratios to the C++ SDK when given.
Each transfer is a whole float32 array on device 0 split over the SDK's parallel streams
(docs/api.md, "Transfers"); the download lands in a fresh NumPy array, as to_numpy() does.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import distarray


def best_seconds(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=None)
    parser.add_argument("--gib", type=float, default=1.0, help="array size in GiB")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--streams", type=int, default=4, help="ConnectOptions.parallel_streams")
    parser.add_argument("--upload_message_mib", type=float, default=1,
                        help="ConnectOptions.upload_message_bytes in MiB")
    parser.add_argument("--download_message_mib", type=float, default=4,
                        help="ConnectOptions.download_message_bytes in MiB")
    parser.add_argument("--cpp_upload_GBps", type=float, default=0.0)
    parser.add_argument("--cpp_download_GBps", type=float, default=0.0)
    args = parser.parse_args()

    n = int(args.gib * (1 << 30)) // 4
    rows = 1024
    values = np.random.default_rng(0).random((rows, n // rows), dtype=np.float32)
    nbytes = values.nbytes
    with distarray.connect(
        args.address, parallel_streams=args.streams,
        upload_message_bytes=int(args.upload_message_mib * (1 << 20)),
        download_message_bytes=int(args.download_message_mib * (1 << 20)),
    ) as client:
        layout = distarray.on_device(2, 0)
        holder = {}

        def upload():
            holder.pop("a", None)  # free the previous copy first
            holder["a"] = client.from_numpy(values, layout, progress=False)

        up = best_seconds(upload, args.repeats)
        a = holder["a"]
        client.synchronize()
        down = best_seconds(lambda: a.to_numpy(progress=False), args.repeats)
        existing = np.empty_like(values)
        existing.fill(0)  # pages already mapped, as the C++ bench's destination
        down_existing = best_seconds(lambda: a.to_numpy(out=existing, progress=False), args.repeats)
        if not np.array_equal(a.to_numpy(progress=False), values):
            raise SystemExit("python_transfer_bench: the download differs from the upload")
        backend = client.server_info().backend

    dst = np.empty_like(values)
    memcpy = best_seconds(lambda: np.copyto(dst, values), args.repeats)
    gbps = lambda s: nbytes / s / 1e9  # noqa: E731
    print(f"backend {backend}")
    print(f"bytes {nbytes}")
    print(f"streams {args.streams}")
    print(f"message_mib {args.upload_message_mib:g} up, {args.download_message_mib:g} down")
    print(f"python_upload_GBps {gbps(up):.2f}")
    print(f"python_download_GBps {gbps(down):.2f}")
    print(f"python_download_existing_GBps {gbps(down_existing):.2f}")
    print(f"host_memcpy_GBps {gbps(memcpy):.2f}")
    if args.cpp_upload_GBps:
        print(f"python_vs_cpp_upload {gbps(up) / args.cpp_upload_GBps:.2f}")
    if args.cpp_download_GBps:
        print(f"python_vs_cpp_download {gbps(down) / args.cpp_download_GBps:.2f}")
        print(f"python_existing_vs_cpp_download {gbps(down_existing) / args.cpp_download_GBps:.2f}")


if __name__ == "__main__":
    main()
