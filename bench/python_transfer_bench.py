"""Upload and download throughput of the Python SDK through gRPC and through shared memory,
against a host memcpy of the same bytes (and, given --cpp_*_GBps, the C++ SDK's gRPC figures from
`distarray_bench --only=transfer` of the same run).

    python bench/python_transfer_bench.py --address 127.0.0.1:50051 [--gib 1] [--repeats 3]

Prints `key value` lines, as the other benches do (best of --repeats, GB = 1e9 bytes):

* gRPC streams (a client with shared_memory="never"): python_upload_GBps, python_download_GBps,
  python_download_existing_GBps (into an array already in use, `to_numpy(out=)`, as the C++
  bench downloads);
* shared memory (a client with shared_memory="always", on the daemon's host as its user; skipped
  with a note otherwise): shm_upload_GBps, shm_download_GBps, shm_download_existing_GBps, each also
  as a ratio to host_memcpy_GBps (`numpy.copyto` of the same bytes between arrays in use);
* the ratios to the C++ SDK's gRPC figures when given.

Each transfer is a whole float32 array on device 0 split over the SDK's parallel streams
(docs/api.md, "Transfers"); a plain download lands in a fresh NumPy array, as to_numpy() does.
`--paths shm` measures shared memory alone. Any backend works (the host backend smoke-tests it).
"""

from __future__ import annotations

import argparse
import time
from typing import Callable, Dict, Optional

import numpy as np

import distarray


def best_seconds(fn: Callable[[], object], repeats: int,
                 before: Optional[Callable[[], None]] = None) -> float:
    """The best of `repeats` timings of `fn`; `before` runs untimed ahead of each, and what `fn`
    returns is freed after its timing (unmapping 1 GiB takes a while), as in the C++ bench."""
    best = float("inf")
    for _ in range(repeats):
        if before is not None:
            before()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
        del result
    return best


def measure(client: distarray.Client, values: np.ndarray, repeats: int) -> Dict[str, float]:
    """Seconds of the best upload, download into a fresh array, and download into an array in
    use, of `values` (checked to come back unchanged)."""
    layout = distarray.on_device(values.ndim, 0)
    holder = {}

    def upload():
        holder["a"] = client.from_numpy(values, layout, progress=False)

    # The previous copy is deleted first, untimed, so the device holds one at a time.
    up = best_seconds(upload, repeats, before=lambda: holder.pop("a", None))
    a = holder["a"]
    client.synchronize()
    down = best_seconds(lambda: a.to_numpy(progress=False), repeats)
    existing = np.empty_like(values)
    existing.fill(0)  # pages already mapped, as the C++ bench's destination
    down_existing = best_seconds(lambda: a.to_numpy(out=existing, progress=False), repeats)
    if not np.array_equal(existing, values) or not np.array_equal(a.to_numpy(progress=False),
                                                                 values):
        raise SystemExit("python_transfer_bench: the download differs from the upload")
    return {"upload": up, "download": down, "download_existing": down_existing}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=None)
    parser.add_argument("--gib", type=float, default=1.0, help="array size in GiB")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--streams", type=int, default=4, help="ConnectOptions.parallel_streams")
    parser.add_argument("--upload_message_mib", type=float, default=4,
                        help="ConnectOptions.upload_message_bytes in MiB")
    parser.add_argument("--download_message_mib", type=float, default=4,
                        help="ConnectOptions.download_message_bytes in MiB")
    parser.add_argument("--paths", default="grpc,shm",
                        help="comma-separated: grpc (streams), shm (shared memory)")
    parser.add_argument("--cpp_upload_GBps", type=float, default=0.0)
    parser.add_argument("--cpp_download_GBps", type=float, default=0.0)
    args = parser.parse_args()
    paths = set(args.paths.split(","))
    if not paths <= {"grpc", "shm"}:
        parser.error(f"--paths: unknown path in {args.paths!r} (grpc, shm)")

    n = int(args.gib * (1 << 30)) // 4
    rows = 1024
    values = np.random.default_rng(0).random((rows, n // rows), dtype=np.float32)
    nbytes = values.nbytes
    common = dict(
        parallel_streams=args.streams,
        upload_message_bytes=int(args.upload_message_mib * (1 << 20)),
        download_message_bytes=int(args.download_message_mib * (1 << 20)),
    )
    grpc_seconds = shm_seconds = None
    if "grpc" in paths:
        with distarray.connect(args.address, shared_memory="never", **common) as client:
            grpc_seconds = measure(client, values, args.repeats)
            backend = client.server_info().backend
    if "shm" in paths:
        with distarray.connect(args.address, shared_memory="always", **common) as client:
            backend = client.server_info().backend
            if client.shared_memory_available:
                shm_seconds = measure(client, values, args.repeats)
            else:
                print("# shm: skipped: the daemon does not share this process's /dev/shm "
                      "(another host or container, or --shared_memory=off)")

    # Between arrays in use, as the C++ bench's memcpy (the first copy also maps dst's pages).
    dst = np.empty_like(values)
    memcpy = best_seconds(lambda: np.copyto(dst, values), max(2, args.repeats))
    gbps = lambda s: nbytes / s / 1e9  # noqa: E731
    print(f"backend {backend}")
    print(f"bytes {nbytes}")
    print(f"streams {args.streams}")
    print(f"host_memcpy_GBps {gbps(memcpy):.2f}")
    if grpc_seconds:
        print(f"message_mib {args.upload_message_mib:g} up, {args.download_message_mib:g} down")
        up, down = gbps(grpc_seconds["upload"]), gbps(grpc_seconds["download"])
        existing = gbps(grpc_seconds["download_existing"])
        print(f"python_upload_GBps {up:.2f}")
        print(f"python_download_GBps {down:.2f}")
        print(f"python_download_existing_GBps {existing:.2f}")
        if args.cpp_upload_GBps:
            print(f"python_vs_cpp_upload {up / args.cpp_upload_GBps:.2f}")
        if args.cpp_download_GBps:
            print(f"python_vs_cpp_download {down / args.cpp_download_GBps:.2f}")
            print(f"python_existing_vs_cpp_download {existing / args.cpp_download_GBps:.2f}")
    if shm_seconds:
        for key in ("upload", "download", "download_existing"):
            rate = gbps(shm_seconds[key])
            print(f"shm_{key}_GBps {rate:.2f}")
            print(f"shm_{key}_vs_memcpy {rate / gbps(memcpy):.2f}")
        if args.cpp_upload_GBps:
            print(f"shm_upload_vs_cpp_grpc_upload "
                  f"{gbps(shm_seconds['upload']) / args.cpp_upload_GBps:.2f}")
        if args.cpp_download_GBps:
            print(f"shm_download_vs_cpp_grpc_download "
                  f"{gbps(shm_seconds['download']) / args.cpp_download_GBps:.2f}")


if __name__ == "__main__":
    main()
