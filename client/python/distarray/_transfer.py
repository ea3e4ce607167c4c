"""Moving bytes between NumPy arrays and the daemon.

Every transfer of the SDK goes through ``upload_new``, ``write`` and ``download`` here, so a
faster path (shared memory with a daemon on the same host) can be chosen in one place, falling
back to the gRPC streams below.

The split rule, shared with the C++ SDK (docs/api.md, "Transfers"): a whole-array transfer of at
least ``parallel_min_bytes`` (64 MiB) is cut along the first axis into
``min(parallel_streams, shape[0])`` row ranges, range ``i`` of ``n`` being rows
``[rows*i//n, rows*(i+1)//n)``, each moved by its own stream on its own connection at the same
time. An upload of a new array takes that path only when it is REPLICA with ``shape[0] > 1``: the
array is created first, then its rows written. Everything else is one stream. Uploads send
messages of ``upload_message_bytes`` (1 MiB); downloads ask for ``download_message_bytes`` (4 MiB).
The bulk messages are encoded and decoded by ``_wire`` so each byte is copied once.
"""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence

import grpc
import numpy as np

from ._errors import FailedPreconditionError, from_rpc_error
from ._types import from_proto_dtype
from ._wire import Connection, download_data, upload_data_message
from .v1 import distarray_pb2 as pb

if TYPE_CHECKING:  # pragma: no cover
    from ._client import Client

#: Transfers at least this large show a progress bar when stderr is a terminal.
PROGRESS_MIN_BYTES = 32 << 20


class _Progress:
    """A tqdm bar shared by the streams of one transfer (thread-safe), or nothing."""

    def __init__(self, total: int, label: str, enabled: Optional[bool]):
        self._bar = None
        self._lock = threading.Lock()
        if enabled is None:
            enabled = total >= PROGRESS_MIN_BYTES and sys.stderr.isatty()
        if enabled:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total, desc=label, unit="B", unit_scale=True, unit_divisor=1024,
                leave=False, file=sys.stderr,
            )

    def add(self, n: int) -> None:
        if self._bar is not None:
            with self._lock:
                self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _flat_bytes(arr: np.ndarray) -> memoryview:
    """The array's little-endian C-order bytes (copied only when not already so)."""
    dtype = arr.dtype.newbyteorder("<") if arr.dtype.byteorder == ">" else arr.dtype
    arr = np.ascontiguousarray(arr, dtype=dtype)
    return memoryview(arr.reshape(-1).view(np.uint8))


def _row_region(shape: Sequence[int], begin: int, end: int) -> "pb.Region":
    region = pb.Region()
    if not shape:
        return region
    region.slices.add(start=begin, stop=end)
    for _ in shape[1:]:
        region.slices.add()
    return region


def _parts(client: "Client", shape: Sequence[int], nbytes: int) -> int:
    """How many streams a whole-array transfer uses (the rule above)."""
    rows = shape[0] if shape else 1
    if nbytes >= client.options.parallel_min_bytes and client.options.parallel_streams > 0:
        return max(1, min(client.options.parallel_streams, rows))
    return 1


def _run_parts(
    client: "Client", shape: Sequence[int], nbytes: int, part: Callable[..., None]
) -> None:
    """Runs part(connection, row_begin, row_end, byte_offset, byte_length) over the row ranges
    (each range on a connection of its own)."""
    rows = shape[0] if shape else 1
    n = _parts(client, shape, nbytes)
    if n <= 1:
        part(client._conn, 0, rows, 0, nbytes)
        return
    row_bytes = nbytes // rows
    stubs = client._bulk_connections(n)
    ranges = [(rows * i // n, rows * (i + 1) // n) for i in range(n)]
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="distarray-transfer") as pool:
        futures = [
            pool.submit(part, stubs[i], b, e, b * row_bytes, (e - b) * row_bytes)
            for i, (b, e) in enumerate(ranges)
        ]
        errors = [f.exception() for f in futures]
    for e in errors:
        if e is not None:
            raise e


def _stream_upload(
    client: "Client", conn: Connection, header: "pb.UploadHeader", data: memoryview,
    progress: _Progress, timeout: Optional[float],
) -> "pb.ArrayInfo":
    step = max(1, client.options.upload_message_bytes)

    def messages():
        yield pb.UploadArrayRequest(header=header).SerializeToString()
        for offset in range(0, len(data), step):
            piece = data[offset : offset + step]
            yield upload_data_message(piece)
            progress.add(len(piece))

    try:
        response = conn.upload_raw(messages(), metadata=client._metadata(), timeout=timeout)
    except grpc.RpcError as e:
        raise from_rpc_error(e) from None
    return response.array


def _stream_download(
    client: "Client", conn: Connection, handle: str, region: Optional["pb.Region"],
    out: np.ndarray, progress: _Progress, timeout: Optional[float],
) -> int:
    """Streams a download into `out`; returns the byte count (FAILED_PRECONDITION when the
    daemon sends more than `out` holds)."""
    request = pb.DownloadArrayRequest(
        handle=handle, max_message_bytes=client.options.download_message_bytes
    )
    if region is not None:
        request.region.CopyFrom(region)
    got = 0
    call = conn.download_raw(request, metadata=client._metadata(), timeout=timeout)
    try:
        for message in call:
            data = download_data(message)
            n = len(data)
            if got + n > len(out):
                call.cancel()
                raise FailedPreconditionError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"download of {handle} carried more than the {len(out)} bytes expected",
                )
            # NumPy copies without holding the GIL, so the streams' copies run in parallel.
            out[got : got + n] = np.frombuffer(data, dtype=np.uint8)
            got += n
            progress.add(n)
    except grpc.RpcError as e:
        raise from_rpc_error(e) from None
    return got


def upload_new(
    client: "Client", arr: np.ndarray, spec: "pb.ArraySpec", *, progress: Optional[bool] = None,
    timeout: Optional[float] = None,
) -> "pb.ArrayInfo":
    """Creates the array `spec` describes holding `arr`'s values."""
    data = _flat_bytes(arr)
    shape = tuple(arr.shape)
    bar = _Progress(len(data), "upload", progress)
    try:
        if (
            spec.mode == pb.MODE_REPLICA
            and len(shape) > 0
            and shape[0] > 1
            and _parts(client, shape, len(data)) > 1
        ):
            info = client._create(spec, pb.Fill(), timeout=timeout)
            try:
                _write_rows(client, info, data, bar, timeout)
            except BaseException:
                client._delete_quietly(info.handle)  # no half-written array left behind
                raise
            return info
        header = pb.UploadHeader(new_array=spec)
        return _stream_upload(client, client._conn, header, data, bar, timeout)
    finally:
        bar.close()


def _write_rows(client, info, data: memoryview, bar: _Progress, timeout) -> None:
    shape = tuple(info.shape.dims)

    def part(conn, begin, end, offset, length):
        header = pb.UploadHeader(handle=info.handle, region=_row_region(shape, begin, end))
        _stream_upload(client, conn, header, data[offset : offset + length], bar, timeout)

    _run_parts(client, shape, len(data), part)


def write(
    client: "Client", info: "pb.ArrayInfo", arr: np.ndarray, region: Optional["pb.Region"] = None,
    *, progress: Optional[bool] = None, timeout: Optional[float] = None,
) -> None:
    """Overwrites a REPLICA array (or a region of it) with `arr`'s values, C order."""
    data = _flat_bytes(arr)
    bar = _Progress(len(data), "write", progress)
    try:
        if region is None:
            _write_rows(client, info, data, bar, timeout)
        else:
            header = pb.UploadHeader(handle=info.handle, region=region)
            _stream_upload(client, client._conn, header, data, bar, timeout)
    finally:
        bar.close()


def download(
    client: "Client", info: "pb.ArrayInfo", *, out: Optional[np.ndarray] = None,
    progress: Optional[bool] = None, timeout: Optional[float] = None,
) -> np.ndarray:
    """The logical values of the whole array, over parallel streams when large; into `out` (a
    C-contiguous array of the array's shape and dtype) when given."""
    dtype = from_proto_dtype(info.dtype)
    shape = tuple(info.shape.dims)
    if out is None:
        out = np.empty(shape, dtype=dtype)
    elif (
        not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != dtype
        or not out.flags.c_contiguous or not out.flags.writeable
    ):
        raise ValueError(
            f"out must be a writeable C-contiguous {dtype} array of shape {shape}"
        )
    buf = out.reshape(-1).view(np.uint8)
    nbytes = len(buf)
    bar = _Progress(nbytes, "download", progress)
    try:

        def part(conn, begin, end, offset, length):
            piece = buf[offset : offset + length]
            rows = None if _parts(client, shape, nbytes) == 1 else _row_region(shape, begin, end)
            got = _stream_download(client, conn, info.handle, rows, piece, bar, timeout)
            _check_count(info.handle, got, length)

        _run_parts(client, shape, nbytes, part)
        return out
    finally:
        bar.close()


def download_region(
    client: "Client", handle: str, region: "pb.Region", *, timeout: Optional[float] = None
) -> np.ndarray:
    """The values of a region (NumPy's ``a[region]``), shaped as the daemon's first message
    says; one stream."""
    request = pb.DownloadArrayRequest(handle=handle, region=region)
    out: Optional[np.ndarray] = None
    buf = memoryview(b"")
    got = 0
    try:
        for message in client._stub.DownloadArray(
            request, metadata=client._metadata(), timeout=timeout
        ):
            if out is None:
                out = np.empty(tuple(message.shape.dims), dtype=from_proto_dtype(message.dtype))
                buf = memoryview(out.reshape(-1).view(np.uint8))
            n = len(message.data)
            if got + n > len(buf):
                raise FailedPreconditionError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    f"download of {handle} carried more bytes than its shape holds",
                )
            buf[got : got + n] = message.data
            got += n
    except grpc.RpcError as e:
        raise from_rpc_error(e) from None
    if out is None:
        raise FailedPreconditionError(
            grpc.StatusCode.FAILED_PRECONDITION, f"download of {handle} carried no message"
        )
    _check_count(handle, got, len(buf))
    return out


def _check_count(handle: str, got: int, expected: int) -> None:
    if got != expected:
        raise FailedPreconditionError(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"download of {handle} carried {got} bytes, expected {expected}",
        )


__all__: List[str] = ["upload_new", "write", "download", "download_region", "PROGRESS_MIN_BYTES"]
