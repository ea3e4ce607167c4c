"""Same-host transfers through POSIX shared memory: the host id, a segment, and the choice.

When the client and the daemon see the same ``/dev/shm``, the bytes of a transfer need not cross
gRPC: the client puts them in a shared-memory segment of its own and names it in
``UploadFromSharedMemory`` / ``DownloadToSharedMemory``, and the daemon copies between the segment
and the devices (docs/api.md, "Transfers through shared memory"). This module holds the pieces the
transfer seam (``_transfer``) needs:

* ``local_host_id``: this process's host id by the daemon's rule, compared with
  ``GetServerInfoResponse.host_id`` to know whether both see the same ``/dev/shm``;
* ``Segment``: a segment of this process's own, always removed in the end;
* ``SegmentCache``: a client's last segment kept for its next transfer, since making one costs
  more than the copies it saves;
* ``SharedMemoryPolicy``: a client's ``shared_memory`` option ("auto", "always", "never") and
  whether a transfer goes through shared memory, including the refusal remembered for the
  client's lifetime (as the C++ SDK's ``ConnectOptions::shared_memory``).
"""

from __future__ import annotations

import functools
import logging
import math
import mmap
import os
import secrets
import threading
from typing import Optional, Sequence

import grpc
import numpy as np

from ._errors import DistarrayError, FailedPreconditionError
from .v1 import distarray_pb2 as pb

_log = logging.getLogger("distarray")

#: Where POSIX shared memory lives on Linux: shm_open("/x") is open("/dev/shm/x").
SHM_DIR = "/dev/shm"
BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id"

#: The values of ``connect(shared_memory=...)``.
MODES = ("auto", "always", "never")

#: Refusals after which an "auto" client streams instead (another /dev/shm, another user, an
#: older daemon or one run with --shared_memory=off), as the C++ SDK.
FALLBACK_CODES = frozenset({
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.UNIMPLEMENTED,
})

# The daemon takes only segments of its own user that no one else may write (docs/api.md).
_SEGMENT_MODE = 0o600

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


def new_segment_name() -> str:
    """A fresh name by the SDKs' rule, ``/distarray-<pid>-<32 random hex digits>``: one
    component of /dev/shm in the daemon's alphabet, the pid telling whose a leftover is, and 128
    random bits so no two calls of any process or thread pick the same one."""
    return f"/distarray-{os.getpid()}-{secrets.token_hex(16)}"


class SegmentUnavailableError(FailedPreconditionError):
    """This process could not make a shared-memory segment (its /dev/shm missing, full or not
    writable). The transfer streams, and unlike a daemon's refusal this is not remembered: the
    next transfer tries shared memory again."""


class Segment:
    """A shared-memory segment of this process's own, mapped read-write, for one transfer at a
    time.

    Created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and mode 0600 (never someone else's file,
    never through a link), sized with ``ftruncate`` and reserved with ``posix_fallocate``, so a
    full /dev/shm is an error here (``SegmentUnavailableError``) rather than a SIGBUS when a page
    is first touched. ``close`` unlinks and unmaps it (a context manager closes it on every path);
    only the process that made it unlinks it, so a forked child never removes its parent's.
    """

    def __init__(self, nbytes: int):
        if nbytes < 0:
            raise ValueError(f"a segment's size cannot be negative, got {nbytes}")
        self.name = new_segment_name()
        self.nbytes = nbytes
        self._pid = os.getpid()
        self._path = os.path.join(SHM_DIR, self.name[1:])
        self._created = False
        self._mmap: Optional[mmap.mmap] = None
        self._bytes: Optional[np.ndarray] = np.empty(0, np.uint8)
        step = "open"
        fd = -1
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(self._path, flags, _SEGMENT_MODE)
            self._created = True
            step = "fchmod"
            os.fchmod(fd, _SEGMENT_MODE)  # the mode exactly, whatever the umask took away
            if nbytes > 0:  # an empty file cannot be mapped; nothing is read or written then
                step = "ftruncate"
                os.ftruncate(fd, nbytes)
                step = "posix_fallocate (is /dev/shm full?)"
                os.posix_fallocate(fd, 0, nbytes)
                step = "mmap"
                self._mmap = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED,
                                       prot=mmap.PROT_READ | mmap.PROT_WRITE)
                self._bytes = np.frombuffer(self._mmap, dtype=np.uint8)
        except OSError as e:
            self.close()
            raise SegmentUnavailableError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"shared-memory segment {self.name}: {step}: {e.strerror or e}",
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
        """Unlinks and unmaps the segment; safe to call twice."""
        if self._created and os.getpid() == self._pid:
            self._created = False
            try:
                os.unlink(self._path)
            except FileNotFoundError:  # removed by someone else: nothing of ours is left
                pass
        self._bytes = None
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:
                # A view still exists (a traceback's frame may hold one); the pages are unmapped
                # when the last view goes. The name is gone already, so nothing is left behind.
                pass
            self._mmap = None

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
    instead of handing it back (the daemon may still be writing into it). ``close`` removes the
    kept one; a process killed while one is kept leaves it in /dev/shm (its pid is in the name).
    Thread-safe.
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = max(0, max_bytes)
        self._lock = threading.Lock()
        self._kept: Optional[Segment] = None

    def take(self, nbytes: int) -> Segment:
        """A segment of at least ``nbytes``: the kept one when it is large enough and this
        process made it, else a new one (SegmentUnavailableError when it cannot be made). A kept
        one too small is removed first, so the two never hold /dev/shm at once (with both, a full
        /dev/shm refused the new one)."""
        with self._lock:
            kept, self._kept = self._kept, None
        if kept is not None:
            if kept.nbytes >= nbytes and kept.mine:
                return kept
            kept.close()  # unlinks only a segment of this process's own
        return Segment(nbytes)

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
        """Removes the kept segment."""
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
    raised as they are. "never": every transfer streams. Thread-safe.
    """

    def __init__(self, mode: str, min_bytes: int, daemon_host_id: str, address: str):
        self.mode = check_mode(mode)
        self.min_bytes = min_bytes
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
        return self.mode != "never" and self.same_host and self._refusal is None

    def wants(self, nbytes: int) -> bool:
        """Whether a transfer of ``nbytes`` should go through shared memory first. In "always"
        mode, FailedPreconditionError when it cannot."""
        if self.mode == "never":
            return False
        if self.mode == "always":
            if not self.same_host:
                raise FailedPreconditionError(
                    grpc.StatusCode.FAILED_PRECONDITION, self._why_not_same_host()
                )
            return True
        return self.available and nbytes >= self.min_bytes

    def streams_after(self, error: DistarrayError) -> bool:
        """Whether a transfer refused with ``error`` through shared memory should stream."""
        return self.mode == "auto" and error.code in FALLBACK_CODES

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
                    f"it runs with --shared_memory=off or cannot read /dev/shm){advice}")
        if not self.local_host_id:
            return (f"{prefix} cannot be checked: this process cannot read {BOOT_ID_PATH} or "
                    f"{SHM_DIR} to compute its host id{advice}")
        return (f"{prefix} reports host id {self.daemon_host_id} and this process "
                f"{self.local_host_id}: they do not share {SHM_DIR} (another host, container or "
                f"/dev/shm mount){advice}")


__all__ = [
    "FALLBACK_CODES", "MODES", "Segment", "SegmentCache", "SegmentUnavailableError",
    "SharedMemoryPolicy", "check_mode",
    "compute_host_id", "fnv1a_64", "local_host_id", "new_segment_name",
]
