"""Same-host transfers through POSIX shared memory: the host id, a segment, and the choice.

When the client and the daemon see the same ``/dev/shm``, the bytes of a transfer need not cross
gRPC: the daemon makes a shared-memory segment for the client's session (``CreateSharedMemory``),
the client opens it by the name it was given and puts the bytes there, names it in
``UploadFromSharedMemory`` / ``DownloadToSharedMemory``, and the daemon copies between the segment
and the devices (docs/api.md, "Transfers through shared memory"). A segment is the session's alone:
the daemon takes no other name. This module holds the pieces the transfer seam (``_transfer``)
needs:

* ``local_host_id``: this process's host id by the daemon's rule, compared with
  ``GetServerInfoResponse.host_id`` to know whether both see the same ``/dev/shm``;
* ``SegmentCalls``: the daemon's side of a segment's life, as calls of the client's session;
* ``Segment``: a segment the daemon made for this client, opened and mapped here, always released
  in the end;
* ``SegmentCache``: a client's last segment kept for its next transfer, since making one costs
  more than the copies it saves;
* ``SharedMemoryPolicy``: a client's ``shared_memory`` option ("auto", "always", "never") and
  whether a transfer goes through shared memory, including the refusal remembered for the
  client's lifetime (as the C++ SDK's ``ConnectOptions::shared_memory``).
"""

from __future__ import annotations

import errno
import functools
import logging
import math
import mmap
import os
import stat
import threading
from typing import Optional, Sequence, Tuple

import grpc
import numpy as np

from ._errors import DistarrayError, FailedPreconditionError, ResourceExhaustedError, from_rpc_error
from .v1 import distarray_pb2 as pb

_log = logging.getLogger("distarray")

#: Where POSIX shared memory lives on Linux: shm_open("/x") is open("/dev/shm/x").
SHM_DIR = "/dev/shm"
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"

#: The values of ``connect(shared_memory=...)``.
MODES = ("auto", "always", "never")

#: Refusals after which an "auto" client streams instead (another /dev/shm, another user, an
#: older daemon or shared memory off on the daemon), as the C++ SDK.
FALLBACK_CODES = frozenset({
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.UNIMPLEMENTED,
})

_FNV_OFFSET_BASIS = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_UINT64 = (1 << 64) - 1


def fnv1a_64(data: bytes) -> int:
    """The 64-bit FNV-1a hash of ``data``."""
    h = _FNV_OFFSET_BASIS
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _UINT64
    return h


def compute_host_id(boot_id_path: str = BOOT_ID_PATH, shm_dir: str = SHM_DIR) -> str:
    """The host id of a process that reads ``boot_id_path`` and sees ``shm_dir``.

    16 lowercase hex digits of FNV-1a-64 over ``"<boot_id>:<st_dev>:<st_ino>"``: the boot id
    without surrounding whitespace, and the device and inode numbers of ``shm_dir`` in decimal.
    Equal for two processes exactly when they share a kernel and a ``/dev/shm`` mount. Empty when
    either cannot be read (no shared memory then).
    """
    try:
        with open(boot_id_path, "rb") as f:
            boot_id = f.readline().strip()
        st = os.stat(shm_dir)
    except OSError:
        return ""
    if not boot_id:
        return ""
    return f"{fnv1a_64(b'%s:%d:%d' % (boot_id, st.st_dev, st.st_ino)):016x}"


@functools.lru_cache(maxsize=1)
def local_host_id() -> str:
    """This process's host id (computed once), as ``GetServerInfoResponse.host_id`` of a daemon
    that shares its ``/dev/shm``."""
    return compute_host_id()


class SegmentUnavailableError(ResourceExhaustedError):
    """The daemon would not make a segment now (the tenant's shared-memory bounds, or its
    /dev/shm full). The transfer streams, and unlike a refusal this is not remembered: the next
    transfer tries shared memory again."""


class SegmentCalls:
    """``CreateSharedMemory`` and ``ReleaseSharedMemory`` through ``stub`` with the client's
    session and token (``metadata``)."""

    def __init__(self, stub, metadata: Sequence[Tuple[str, str]]):
        self._stub = stub
        self._metadata = tuple(metadata)

    def create(self, nbytes: int) -> str:
        """The name of a new segment of ``nbytes``; the daemon's refusal as a DistarrayError
        (``SegmentUnavailableError`` for RESOURCE_EXHAUSTED)."""
        try:
            response = self._stub.CreateSharedMemory(
                pb.CreateSharedMemoryRequest(bytes=nbytes), metadata=self._metadata, timeout=30)
        except grpc.RpcError as e:
            error = from_rpc_error(e)
            if error.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise SegmentUnavailableError(error.code, error.message) from None
            raise error from None
        return response.name

    def release(self, name: str) -> None:
        """Removes the segment on the daemon; best effort (its session's end removes it too)."""
        try:
            self._stub.ReleaseSharedMemory(
                pb.ReleaseSharedMemoryRequest(name=name), metadata=self._metadata, timeout=5)
        except Exception as e:  # noqa: BLE001: the channel may be closing
            _log.debug("distarray: releasing shared-memory segment %s failed: %s", name, e)


class Segment:
    """A shared-memory segment the daemon made for this client's session, mapped read-write here,
    for one transfer at a time.

    The daemon makes it (``CreateSharedMemory``: an unguessable name, mode 0600, its pages
    reserved); this process opens the name with ``O_NOFOLLOW`` and takes it only as a regular file
    of exactly the size asked for. ``close`` unmaps it and releases it on the daemon (a context
    manager closes it on every path); only the process that made it releases it, so a forked child
    never removes its parent's. A segment this process cannot open or map (another /dev/shm,
    another user) is released at once and raised as FailedPreconditionError.
    """

    def __init__(self, nbytes: int, calls: SegmentCalls):
        if nbytes < 0:
            raise ValueError(f"a segment's size cannot be negative, got {nbytes}")
        self.nbytes = nbytes
        self._calls = calls
        self._pid = os.getpid()
        self._held = False
        self._mmap: Optional[mmap.mmap] = None
        self._bytes: Optional[np.ndarray] = np.empty(0, np.uint8)
        self.name = calls.create(nbytes)  # the daemon's refusal propagates as it is
        self._held = True
        step = "open"
        fd = -1
        try:
            fd = os.open(os.path.join(SHM_DIR, self.name[1:]),
                         os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
            step = "fstat"
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != nbytes:
                raise OSError(errno.EINVAL, "not the segment the daemon made")
            if nbytes > 0:  # an empty file cannot be mapped; nothing is read or written then
                step = "mmap"
                self._mmap = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED,
                                       prot=mmap.PROT_READ | mmap.PROT_WRITE)
                self._bytes = np.frombuffer(self._mmap, dtype=np.uint8)
        except OSError as e:
            self.close()
            raise FailedPreconditionError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"shared-memory segment {self.name}: {step}: {e.strerror or e} (the client must "
                f"see the daemon's /dev/shm and run as its user)",
            ) from e
        except BaseException:
            self.close()
            raise
        finally:
            if fd >= 0:
                os.close(fd)  # the mapping keeps the segment's pages

    def range(self, offset: int = 0, length: Optional[int] = None) -> "pb.SharedMemoryRange":
        """Bytes ``[offset, offset + length)`` of the segment (default: all of it) as a
        request's range."""
        if length is None:
            length = self.nbytes - offset
        return pb.SharedMemoryRange(
            name=self.name, segment_bytes=self.nbytes, offset=offset, bytes=length
        )

    def view(self, dtype: np.dtype, shape: Sequence[int], offset: int = 0) -> np.ndarray:
        """Bytes from ``offset`` as a writeable array of ``shape`` holding little-endian
        ``dtype`` values: the layout of the transfer calls (C order)."""
        if self._bytes is None:
            raise ValueError(f"shared-memory segment {self.name} is closed")
        wire = np.dtype(dtype).newbyteorder("<")
        end = offset + math.prod(shape) * wire.itemsize
        return self._bytes[offset:end].view(wire).reshape(tuple(shape))

    def close(self) -> None:
        """Unmaps the segment and releases it on the daemon; safe to call twice."""
        self._bytes = None
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:
                # A view still exists (a traceback's frame may hold one); the pages are unmapped
                # when the last view goes. The name goes now, so nothing is left behind.
                pass
            self._mmap = None
        if self._held and os.getpid() == self._pid:
            self._held = False
            self._calls.release(self.name)

    def __enter__(self) -> "Segment":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def mine(self) -> bool:
        """Whether this process made the segment (a forked child holds its parent's)."""
        return os.getpid() == self._pid

    def __repr__(self) -> str:
        return f"<distarray shared-memory segment {self.name} ({self.nbytes} bytes)>"


class SegmentCache:
    """A client's segments: one idle segment of at most ``max_bytes`` is kept for the next
    transfer, as the C++ SDK's ``ConnectOptions::shared_memory_cache_bytes``.

    Making a 1 GiB segment (allocating, zeroing and mapping 262,144 pages, then freeing them)
    costs several times the copies it carries, so a client that moves large arrays repeatedly
    reuses one. Concurrent transfers each get their own; a transfer that fails closes its segment
    instead of handing it back (the daemon may still be writing into it). ``close`` releases the
    kept one; the daemon removes those of a process killed while it held some when its session
    expires. Kept segments count against the tenant's shared-memory bounds on the daemon.
    Thread-safe.
    """

    def __init__(self, max_bytes: int, calls: SegmentCalls):
        self.max_bytes = max(0, max_bytes)
        self._calls = calls
        self._lock = threading.Lock()
        self._kept: Optional[Segment] = None

    def take(self, nbytes: int) -> Segment:
        """A segment of at least ``nbytes``: the kept one when it is large enough and this
        process made it, else a new one (Segment's errors). A kept one too small is released
        first, so the two never count against the tenant's bounds or /dev/shm at once."""
        with self._lock:
            kept, self._kept = self._kept, None
        if kept is not None:
            if kept.nbytes >= nbytes and kept.mine:
                return kept
            kept.close()  # releases only a segment of this process's own
        return Segment(nbytes, self._calls)

    def give(self, segment: Segment) -> None:
        """Hands ``segment`` back after a transfer that succeeded: kept in place of a smaller one
        when it holds at most ``max_bytes``, closed otherwise."""
        dropped = segment
        if segment.nbytes <= self.max_bytes and segment.mine:
            with self._lock:
                if self._kept is None or self._kept.nbytes < segment.nbytes:
                    dropped, self._kept = self._kept, segment
        if dropped is not None:
            dropped.close()  # outside the lock: unmapping a large segment takes a while

    def close(self) -> None:
        """Releases the kept segment."""
        with self._lock:
            kept, self._kept = self._kept, None
        if kept is not None:
            kept.close()


def check_mode(mode: str) -> str:
    """``mode`` when it is a valid ``shared_memory`` option; ValueError otherwise."""
    if mode not in MODES:
        raise ValueError(f"shared_memory must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    return mode


class SharedMemoryPolicy:
    """Whether a client's transfers go through shared memory (docs/api.md, "The SDKs' choice").

    "auto": a transfer of at least ``min_bytes`` does when the daemon's host id (read at connect)
    equals this process's; a refusal in ``FALLBACK_CODES`` streams instead, and once streaming has
    delivered where shared memory was refused, the client streams from then on. "always": every
    transfer does; FailedPreconditionError when the host ids differ, and the daemon's refusals are
    raised as they are. "never": every transfer streams. A segment the daemon would not make now
    (``SegmentUnavailableError``) streams that transfer only. A client without a session
    (``session=False``) has no segments: it streams. Thread-safe.
    """

    def __init__(self, mode: str, min_bytes: int, daemon_host_id: str, address: str,
                 has_session: bool = True):
        self.mode = check_mode(mode)
        self.min_bytes = min_bytes
        self.has_session = has_session
        self.daemon_host_id = daemon_host_id
        self.local_host_id = local_host_id()
        self._address = address
        self._refusal: Optional[DistarrayError] = None

    @property
    def same_host(self) -> bool:
        """Whether the daemon reported this process's host id: both see the same /dev/shm."""
        return bool(self.daemon_host_id) and self.daemon_host_id == self.local_host_id

    @property
    def available(self) -> bool:
        """Whether transfers may go through shared memory now."""
        return (self.mode != "never" and self.same_host and self.has_session
                and self._refusal is None)

    def wants(self, nbytes: int) -> bool:
        """Whether a transfer of ``nbytes`` should go through shared memory first. In "always"
        mode, FailedPreconditionError when it cannot."""
        if self.mode == "never":
            return False
        if self.mode == "always":
            if not self.has_session:
                raise FailedPreconditionError(
                    grpc.StatusCode.FAILED_PRECONDITION,
                    "shared_memory='always', but this client has no session (session=False): "
                    "the daemon makes segments for a session only; connect with a session or "
                    "shared_memory='auto' to stream")
            if not self.same_host:
                raise FailedPreconditionError(
                    grpc.StatusCode.FAILED_PRECONDITION, self._why_not_same_host()
                )
            return True
        return self.available and nbytes >= self.min_bytes

    def streams_after(self, error: DistarrayError) -> bool:
        """Whether a transfer refused with ``error`` through shared memory should stream."""
        return self.mode == "auto" and (
            error.code in FALLBACK_CODES or isinstance(error, SegmentUnavailableError))

    def turn_off(self, refusal: DistarrayError) -> None:
        """Streams from now on: ``refusal`` came from shared memory, and streaming delivered."""
        if self._refusal is None:
            self._refusal = refusal
            _log.info("distarray: shared memory with %s refused (%s); this client streams from "
                      "now on", self._address, refusal)

    def _why_not_same_host(self) -> str:
        prefix = f"shared_memory='always', but the daemon at {self._address}"
        advice = "; connect with shared_memory='auto' to stream instead"
        if not self.daemon_host_id:
            return (f"{prefix} offers no shared-memory transfers (GetServerInfo's host_id is empty: "
                    f"it runs with --shared_memory=off, or with tenants and without "
                    f"--shared_memory=on, or cannot read /dev/shm){advice}")
        if not self.local_host_id:
            return (f"{prefix} cannot be checked: this process cannot read {BOOT_ID_PATH} or "
                    f"{SHM_DIR} to compute its host id{advice}")
        return (f"{prefix} reports host id {self.daemon_host_id} and this process "
                f"{self.local_host_id}: they do not share {SHM_DIR} (another host, container or "
                f"/dev/shm mount){advice}")


__all__ = [
    "FALLBACK_CODES", "MODES", "Segment", "SegmentCache", "SegmentUnavailableError",
    "SharedMemoryPolicy", "check_mode",
    "SegmentCalls", "compute_host_id", "fnv1a_64", "local_host_id",
]
