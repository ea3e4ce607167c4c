"""Moving bytes between NumPy arrays and the daemon.

Every transfer of the SDK goes through ``upload_new``, ``write``, ``download`` and
``download_region`` here, which choose between the two paths:

* **Shared memory** (``_shared_memory``), when the daemon shares this process's /dev/shm and the
  client's ``shared_memory`` option allows it (docs/api.md, "Transfers through shared memory"):
  the bytes go through a segment the daemon made for the client's session (the client keeps its
  last one for the next transfer), copied in or out by one ``numpy.copyto`` per call (NumPy
  converts layout and byte order in that copy, and releases the GIL for it). A refusal the option allows falls back to the
  streams below.
* **gRPC streams** otherwise. Uploads send messages of ``upload_message_bytes`` (4 MiB); downloads
  ask for ``download_message_bytes`` (4 MiB). The bulk messages are encoded and decoded by
  ``_wire`` so each byte is copied once by Python (an upload's copy outside the GIL) besides
  gRPC's own copy.

The split rule, shared with the C++ SDK (docs/api.md, "Transfers"), holds for both paths: a
whole-array transfer of at least ``parallel_min_bytes`` (64 MiB) is cut along the first axis into
``min(parallel_streams, shape[0])`` row ranges, range ``i`` of ``n`` being rows
``[rows*i//n, rows*(i+1)//n)``, each moved by its own call on its own connection at the same
time. Through shared memory the ranges share one segment, each at its offset in it, and each
range's thread moves it in calls of at most ``SHARED_MEMORY_PIECE_BYTES`` of whole rows, or one
row where a row is larger (the C++ SDK's rule), copying each piece just before (upload) or after
(download) its call while the thread's other call is in flight, so the copies overlap the daemon's side of the transfer. An
upload of a new array takes the split path only when it is REPLICA with ``shape[0] > 1``: the
array is created first, then its rows written. Everything else is one call.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, List, Optional, Sequence, Tuple, TypeVar

import grpc
import numpy as np

from ._errors import DistarrayError, FailedPreconditionError, from_rpc_error
from ._rpc import Rpc
from ._shared_memory import Segment, SegmentUnavailableError
from ._types import from_proto_dtype
from ._wire import Connection, download_data, upload_data_message
from .v1 import distarray_pb2 as pb

#: Transfers at least this large show a progress bar when stderr is a terminal.
PROGRESS_MIN_BYTES = 32 << 20

#: Shared-memory transfers of whole arrays go in calls of about this many bytes (whole rows)
#: within each stream's row range, as the C++ SDK's: with one call per range every thread would
#: copy at once and then call at once, and neither side's copies would overlap the other's.
SHARED_MEMORY_PIECE_BYTES = 32 << 20

T = TypeVar("T")


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

    def reset(self) -> None:
        """Back to zero: a transfer that falls back to streaming starts over."""
        if self._bar is not None:
            with self._lock:
                self._bar.reset()

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


def _row_shape(shape: Sequence[int], begin: int, end: int) -> Tuple[int, ...]:
    """The shape of rows [begin, end) of an array of ``shape`` (a 0-d array is its own row)."""
    return (end - begin,) + tuple(shape[1:]) if shape else ()


def _rows(arr: np.ndarray, begin: int, end: int) -> np.ndarray:
    """Rows [begin, end) of ``arr``, a view (a 0-d array is its own row)."""
    return arr[begin:end] if arr.ndim else arr


def _row_pieces(
    begin: int, end: int, offset: int, length: int
) -> Iterator[Tuple[int, int, int, int]]:
    """Consecutive pieces (row_begin, row_end, byte_offset, byte_length) of whole rows of the
    range [begin, end), which holds ``length`` bytes from ``offset``: each at most
    ``SHARED_MEMORY_PIECE_BYTES``, or one row where a row is larger."""
    if end - begin <= 1 or length == 0:
        yield begin, end, offset, length
        return
    row_bytes = length // (end - begin)
    rows_per_piece = max(1, SHARED_MEMORY_PIECE_BYTES // row_bytes)
    for row in range(begin, end, rows_per_piece):
        stop = min(end, row + rows_per_piece)
        yield row, stop, offset + (row - begin) * row_bytes, (stop - row) * row_bytes


def _region_shape(region: "pb.Region", shape: Sequence[int]) -> Tuple[int, ...]:
    """The shape of ``a[region]`` for an array ``a`` of ``shape``, as the daemon selects it.

    Exact for every region the daemon accepts (where its rule and Python's slices agree); for one
    it refuses (a bound outside the array, a zero step, the wrong number of slices) some shape:
    the daemon checks the region before the byte count, so its refusal is the error then.
    """
    if not region.slices:
        return tuple(shape)
    if len(region.slices) != len(shape):
        return (0,)
    dims = []
    for s, dim in zip(region.slices, shape):
        step = s.step if s.HasField("step") else None
        if step == 0:
            return (0,)
        selected = slice(s.start if s.HasField("start") else None,
                         s.stop if s.HasField("stop") else None, step)
        dims.append(len(range(*selected.indices(dim))))
    return tuple(dims)


def _parts(rpc: Rpc, shape: Sequence[int], nbytes: int) -> int:
    """How many streams a whole-array transfer uses (the rule above)."""
    rows = shape[0] if shape else 1
    if nbytes >= rpc.options.parallel_min_bytes and rpc.options.parallel_streams > 0:
        return max(1, min(rpc.options.parallel_streams, rows))
    return 1


def _run_parts(
    rpc: Rpc, shape: Sequence[int], nbytes: int, part: Callable[..., None]
) -> None:
    """Runs part(connection, row_begin, row_end, byte_offset, byte_length) over the row ranges
    (each range on a connection and a thread of its own); raises the first range's error once
    every range has ended."""
    rows = shape[0] if shape else 1
    n = _parts(rpc, shape, nbytes)
    if n <= 1:
        part(rpc.connection, 0, rows, 0, nbytes)
        return
    row_bytes = nbytes // rows
    stubs = rpc.bulk_connections(n)
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


def _choose(
    rpc: Rpc, nbytes: int, progress: _Progress, shared_memory: Callable[[], T],
    streams: Callable[[], T],
) -> T:
    """Runs a transfer through shared memory when the client's policy wants it, else (or after
    a refusal the policy allows) through the streams. A refusal is remembered only once
    streaming has delivered: a FAILED_PRECONDITION both paths answer (an upload into a SUM array)
    is the array's, not shared memory's. A segment the daemon would not make now (the tenant's
    bounds) is never remembered: the next transfer may find room."""
    policy = rpc.shared_memory
    if not policy.wants(nbytes):
        return streams()
    try:
        return shared_memory()
    except DistarrayError as e:
        if not policy.streams_after(e):
            raise
        refusal = e
    progress.reset()
    result = streams()
    if not isinstance(refusal, SegmentUnavailableError):
        policy.turn_off(refusal)
    return result


# ---- gRPC streams -------------------------------------------------------------------------------

def _stream_upload(
    rpc: Rpc, conn: Connection, header: "pb.UploadHeader", data: memoryview,
    progress: _Progress, timeout: Optional[float],
) -> "pb.ArrayInfo":
    step = max(1, rpc.options.upload_message_bytes)

    def messages():
        yield pb.UploadArrayRequest(header=header).SerializeToString()
        for offset in range(0, len(data), step):
            piece = data[offset : offset + step]
            yield upload_data_message(piece)
            progress.add(len(piece))

    try:
        response = conn.upload_raw(messages(), metadata=rpc.metadata, timeout=timeout)
    except grpc.RpcError as e:
        raise from_rpc_error(e) from None
    return response.array


def _stream_download(
    rpc: Rpc, conn: Connection, handle: str, region: Optional["pb.Region"],
    out: np.ndarray, progress: _Progress, timeout: Optional[float],
) -> int:
    """Streams a download into `out`; returns the byte count (FAILED_PRECONDITION when the
    daemon sends more than `out` holds)."""
    request = pb.DownloadArrayRequest(
        handle=handle, max_message_bytes=rpc.options.download_message_bytes
    )
    if region is not None:
        request.region.CopyFrom(region)
    got = 0
    call = conn.download_raw(request, metadata=rpc.metadata, timeout=timeout)
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


def _stream_write_rows(
    rpc: Rpc, handle: str, shape: Sequence[int], arr: np.ndarray, progress: _Progress,
    timeout: Optional[float],
) -> None:
    data = _flat_bytes(arr)

    def part(conn, begin, end, offset, length):
        header = pb.UploadHeader(handle=handle, region=_row_region(shape, begin, end))
        _stream_upload(rpc, conn, header, data[offset : offset + length], progress, timeout)

    _run_parts(rpc, shape, len(data), part)


def _stream_download_rows(
    rpc: Rpc, info: "pb.ArrayInfo", out: np.ndarray, progress: _Progress,
    timeout: Optional[float],
) -> None:
    shape = tuple(info.shape.dims)
    buf = out.reshape(-1).view(np.uint8)
    nbytes = len(buf)
    whole = _parts(rpc, shape, nbytes) == 1

    def part(conn, begin, end, offset, length):
        rows = None if whole else _row_region(shape, begin, end)
        got = _stream_download(
            rpc, conn, info.handle, rows, buf[offset : offset + length], progress, timeout
        )
        _check_count(info.handle, got, length)

    _run_parts(rpc, shape, nbytes, part)


def _stream_download_region(
    rpc: Rpc, handle: str, region: "pb.Region", timeout: Optional[float]
) -> np.ndarray:
    """One stream; the result is shaped as the daemon's first message says."""
    request = pb.DownloadArrayRequest(handle=handle, region=region)
    out: Optional[np.ndarray] = None
    buf = memoryview(b"")
    got = 0
    try:
        for message in rpc.call("DownloadArray", request, timeout):
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


# ---- shared memory ------------------------------------------------------------------------------


class _PendingCall:
    """A shared-memory call in flight (a gRPC future): ``result`` waits for its response,
    raising the daemon's error as a DistarrayError; ``cancel`` abandons it."""

    def __init__(self, future: "grpc.Future", check: Callable[[object], object]):
        self._future = future
        self._check = check

    def result(self):
        try:
            response = self._future.result()
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        return self._check(response)

    def cancel(self) -> None:
        self._future.cancel()


def _shm_upload_start(
    rpc: Rpc, conn: Connection, header: "pb.UploadHeader",
    source: "pb.SharedMemoryRange", timeout: Optional[float],
) -> _PendingCall:
    """Starts UploadFromSharedMemory; its result is the array's ArrayInfo."""
    request = pb.UploadFromSharedMemoryRequest(header=header, source=source)
    future = rpc.future(conn, "UploadFromSharedMemory", request, timeout)
    return _PendingCall(future, lambda response: response.array)


def _shm_download_start(
    rpc: Rpc, conn: Connection, handle: str, region: Optional["pb.Region"],
    destination: "pb.SharedMemoryRange", timeout: Optional[float],
) -> _PendingCall:
    """Starts DownloadToSharedMemory; its result is the response, once the daemon has written
    exactly ``destination.bytes`` (FailedPreconditionError otherwise)."""
    request = pb.DownloadToSharedMemoryRequest(handle=handle, destination=destination)
    if region is not None:
        request.region.CopyFrom(region)
    future = rpc.future(conn, "DownloadToSharedMemory", request, timeout)

    def check(response):
        if response.bytes != destination.bytes:
            raise FailedPreconditionError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"download of {handle} wrote {response.bytes} bytes, expected "
                f"{destination.bytes}",
            )
        return response

    return _PendingCall(future, check)


def _overlapped(pieces: Iterator[T], start: Callable[[T], _PendingCall],
                before: Callable[[T], None], after: Callable[[T], None]) -> None:
    """For each piece in turn: ``before(piece)``, the call ``start(piece)``, ``after(piece)``
    once the call has returned; the next piece's ``before`` and call run while a call is in
    flight, so a stream's copies overlap its own calls (at most two in flight). An error cancels
    the call left in flight."""
    pending: Optional[Tuple[T, _PendingCall]] = None
    try:
        for piece in pieces:
            before(piece)
            previous, pending = pending, (piece, start(piece))
            if previous is not None:
                previous[1].result()
                after(previous[0])
        if pending is not None:
            last, pending = pending, None
            last[1].result()
            after(last[0])
    finally:
        if pending is not None:
            pending[1].cancel()


@contextlib.contextmanager
def _segment(rpc: Rpc, nbytes: int) -> Iterator[Segment]:
    """A segment of at least ``nbytes`` from the client's cache for one transfer: handed back
    when the transfer succeeds, closed (unmapped and released) when it fails in any way."""
    segment = rpc.segments.take(nbytes)
    try:
        yield segment
    except BaseException:
        segment.close()
        raise
    rpc.segments.give(segment)


def _shm_upload_one(
    rpc: Rpc, header: "pb.UploadHeader", arr: np.ndarray, progress: _Progress,
    timeout: Optional[float],
) -> "pb.ArrayInfo":
    with _segment(rpc, arr.nbytes) as segment:
        np.copyto(segment.view(arr.dtype, arr.shape), arr)
        info = _shm_upload_start(rpc, rpc.connection, header, segment.range(0, arr.nbytes),
                                 timeout).result()
    progress.add(arr.nbytes)
    return info


def _shm_write_rows(
    rpc: Rpc, handle: str, shape: Sequence[int], arr: np.ndarray, progress: _Progress,
    timeout: Optional[float],
) -> None:
    with _segment(rpc, arr.nbytes) as segment:

        def copy_in(piece):
            b, e, o, _ = piece
            np.copyto(segment.view(arr.dtype, _row_shape(shape, b, e), o), _rows(arr, b, e))

        def part(conn, begin, end, offset, length):
            def start(piece):
                b, e, o, n = piece
                header = pb.UploadHeader(handle=handle, region=_row_region(shape, b, e))
                return _shm_upload_start(rpc, conn, header, segment.range(o, n), timeout)

            _overlapped(_row_pieces(begin, end, offset, length), start, copy_in,
                        lambda piece: progress.add(piece[3]))

        _run_parts(rpc, shape, arr.nbytes, part)


def _shm_download_rows(
    rpc: Rpc, info: "pb.ArrayInfo", out: np.ndarray, progress: _Progress,
    timeout: Optional[float],
) -> None:
    shape = tuple(info.shape.dims)
    with _segment(rpc, out.nbytes) as segment:

        def copy_out(piece):
            b, e, o, n = piece
            np.copyto(_rows(out, b, e), segment.view(out.dtype, _row_shape(shape, b, e), o))
            progress.add(n)

        def part(conn, begin, end, offset, length):
            def start(piece):
                b, e, o, n = piece
                return _shm_download_start(rpc, conn, info.handle, _row_region(shape, b, e),
                                           segment.range(o, n), timeout)

            _overlapped(_row_pieces(begin, end, offset, length), start, lambda piece: None,
                        copy_out)

        _run_parts(rpc, shape, out.nbytes, part)


def _shm_download_region(
    rpc: Rpc, handle: str, region: "pb.Region", shape: Tuple[int, ...], dtype: np.dtype,
    timeout: Optional[float],
) -> np.ndarray:
    out = np.empty(shape, dtype=dtype)
    with _segment(rpc, out.nbytes) as segment:
        response = _shm_download_start(rpc, rpc.connection, handle, region,
                                       segment.range(0, out.nbytes), timeout).result()
        np.copyto(out, segment.view(dtype, shape))
    # The byte count matched, so only a shape written differently (never, by the rule) could
    # differ: the daemon's is the one NumPy's a[region] has.
    return out.reshape(tuple(response.shape.dims))


# ---- the seam -----------------------------------------------------------------------------------


def _upload_one(
    rpc: Rpc, header: "pb.UploadHeader", arr: np.ndarray, progress: _Progress,
    timeout: Optional[float],
) -> "pb.ArrayInfo":
    """One call: a new array (``header.new_array``) or a region of an existing one."""
    return _choose(
        rpc, arr.nbytes, progress,
        lambda: _shm_upload_one(rpc, header, arr, progress, timeout),
        lambda: _stream_upload(rpc, rpc.connection, header, _flat_bytes(arr), progress, timeout),
    )


def _write_whole(
    rpc: Rpc, info: "pb.ArrayInfo", arr: np.ndarray, progress: _Progress,
    timeout: Optional[float],
) -> None:
    """Overwrites the whole array with ``arr`` (of its shape), over the split's row ranges."""
    shape = tuple(info.shape.dims)
    _choose(
        rpc, arr.nbytes, progress,
        lambda: _shm_write_rows(rpc, info.handle, shape, arr, progress, timeout),
        lambda: _stream_write_rows(rpc, info.handle, shape, arr, progress, timeout),
    )


def upload_new(
    rpc: Rpc, arr: np.ndarray, spec: "pb.ArraySpec", *, progress: Optional[bool] = None,
    timeout: Optional[float] = None,
) -> "pb.ArrayInfo":
    """Creates the array `spec` describes holding `arr`'s values (any layout or byte order)."""
    shape = tuple(arr.shape)
    bar = _Progress(arr.nbytes, "upload", progress)
    try:
        if (
            spec.mode == pb.MODE_REPLICA
            and len(shape) > 0
            and shape[0] > 1
            and _parts(rpc, shape, arr.nbytes) > 1
        ):
            info = rpc.create_array(spec, pb.Fill(), timeout=timeout)
            try:
                _write_whole(rpc, info, arr, bar, timeout)
            except BaseException:
                rpc.delete_quietly(info.handle)  # no half-written array left behind
                raise
            return info
        return _upload_one(rpc, pb.UploadHeader(new_array=spec), arr, bar, timeout)
    finally:
        bar.close()


def write(
    rpc: Rpc, info: "pb.ArrayInfo", arr: np.ndarray, region: Optional["pb.Region"] = None,
    *, progress: Optional[bool] = None, timeout: Optional[float] = None,
) -> None:
    """Overwrites a REPLICA array (or a region of it) with `arr`'s values, C order."""
    bar = _Progress(arr.nbytes, "write", progress)
    try:
        if region is None:
            _write_whole(rpc, info, arr, bar, timeout)
        else:
            _upload_one(rpc, pb.UploadHeader(handle=info.handle, region=region), arr, bar,
                        timeout)
    finally:
        bar.close()


def download(
    rpc: Rpc, info: "pb.ArrayInfo", *, out: Optional[np.ndarray] = None,
    progress: Optional[bool] = None, timeout: Optional[float] = None,
) -> np.ndarray:
    """The logical values of the whole array, over parallel streams when large; into `out` (a
    C-contiguous array of the array's shape and dtype) when given, copied straight from the
    shared-memory segment or the messages into it."""
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
    bar = _Progress(out.nbytes, "download", progress)
    try:
        _choose(
            rpc, out.nbytes, bar,
            lambda: _shm_download_rows(rpc, info, out, bar, timeout),
            lambda: _stream_download_rows(rpc, info, out, bar, timeout),
        )
        return out
    finally:
        bar.close()


def download_region(
    rpc: Rpc, info: "pb.ArrayInfo", region: "pb.Region", *,
    timeout: Optional[float] = None,
) -> np.ndarray:
    """The values of a region (NumPy's ``a[region]``) of the array ``info`` describes; one call."""
    dtype = from_proto_dtype(info.dtype)
    shape = _region_shape(region, tuple(info.shape.dims))
    nbytes = math.prod(shape) * dtype.itemsize
    return _choose(
        rpc, nbytes, _Progress(nbytes, "download", False),
        lambda: _shm_download_region(rpc, info.handle, region, shape, dtype, timeout),
        lambda: _stream_download_region(rpc, info.handle, region, timeout),
    )


def _check_count(handle: str, got: int, expected: int) -> None:
    if got != expected:
        raise FailedPreconditionError(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"download of {handle} carried {got} bytes, expected {expected}",
        )


__all__: List[str] = ["upload_new", "write", "download", "download_region", "PROGRESS_MIN_BYTES"]
