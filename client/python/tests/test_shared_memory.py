"""Transfers through POSIX shared memory against the real daemon.

Which path a transfer took is read from the daemon's transfer log (``--log_level=debug`` logs
every transfer as ``shared-memory upload <handle>: ...`` or ``upload <handle>: ...``), so a test
that expects shared memory fails when the SDK streamed, and the other way round.
"""

from __future__ import annotations

import gc
import os
import re
import stat
import time
from pathlib import Path
from typing import Iterator, List

import grpc
import ml_dtypes
import numpy as np
import pytest

import distarray
from distarray import _shared_memory, _transfer
from conftest import Daemon, random_array

SERVED = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64]


@pytest.fixture(scope="module")
def shm_daemon() -> Iterator[Daemon]:
    """A daemon that logs every transfer (the flag given last wins over conftest's)."""
    d = Daemon(["--log_level=debug"])
    yield d
    assert d.stop() == 0


@pytest.fixture(scope="module")
def off_daemon() -> Iterator[Daemon]:
    """A daemon run with --shared_memory=off."""
    d = Daemon(["--shared_memory=off", "--log_level=debug"])
    yield d
    assert d.stop() == 0


def path_of(daemon: Daemon, direction: str, handle: str) -> str:
    """'shared-memory' or 'stream': how the daemon logged the `direction` ('upload' or
    'download') of `handle`; waits for the line, which follows the call's end."""
    line = re.compile(rf"\] (shared-memory )?{direction} {re.escape(handle)}: ")
    deadline = time.monotonic() + 10
    while True:
        found = line.findall(Path(daemon.log.name).read_text())
        if found:
            return "shared-memory" if found[-1] else "stream"
        if time.monotonic() > deadline:
            raise AssertionError(f"the daemon logged no {direction} of {handle}")
        time.sleep(0.02)


def transfer_count(daemon: Daemon, direction: str, handle: str, via: str,
                   wait_for: int = 0) -> int:
    """How many `direction` transfers of `handle` the daemon logged through `via`, once there are
    at least `wait_for` (a transfer's line follows its end by up to 40 ms; calls of one array
    closer together than 20 ms are one transfer)."""
    prefix = "shared-memory " if via == "shared-memory" else ""
    line = re.compile(rf"\] {prefix}{direction} {re.escape(handle)}: ")
    deadline = time.monotonic() + 10
    while True:
        count = len(line.findall(Path(daemon.log.name).read_text()))
        if count >= wait_for or time.monotonic() > deadline:
            return count
        time.sleep(0.02)


#: The names the daemon gave this test's clients (CreateSharedMemory), in order.
MADE: List[str] = []


def own_segments() -> List[str]:
    """The segments the daemon made for this test's clients that are still in /dev/shm (names
    without the leading "/")."""
    return sorted(n[1:] for n in MADE if os.path.lexists(os.path.join(_shared_memory.SHM_DIR,
                                                                      n[1:])))


@pytest.fixture(autouse=True)
def no_segment_left_behind(monkeypatch):
    """Records every segment the daemon makes for the test's clients; the test ends with none of
    them left in /dev/shm (each released by the SDK)."""
    MADE.clear()
    real = _shared_memory.SegmentCalls.create

    def recording(self, nbytes):
        name = real(self, nbytes)
        MADE.append(name)
        return name

    monkeypatch.setattr(_shared_memory.SegmentCalls, "create", recording)
    yield
    assert own_segments() == []


def calls_of(client) -> "_shared_memory.SegmentCalls":
    """The client's segment calls (its session's CreateSharedMemory / ReleaseSharedMemory)."""
    return client._rpc.segments._calls


# ---- the host id ----------------------------------------------------------------------------------


def test_fnv1a_64_reference_values():
    # The FNV-1a 64-bit test vectors of the algorithm's authors.
    assert _shared_memory.fnv1a_64(b"") == 0xCBF29CE484222325
    assert _shared_memory.fnv1a_64(b"a") == 0xAF63DC4C8601EC8C
    assert _shared_memory.fnv1a_64(b"foobar") == 0x85944171F73967E8


def test_host_id_rule(tmp_path):
    boot_id = tmp_path / "boot_id"
    boot_id.write_bytes(b" 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 \n")
    shm = tmp_path / "shm"
    shm.mkdir()
    st = os.stat(shm)
    key = f"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0:{st.st_dev}:{st.st_ino}".encode()
    host_id = _shared_memory.compute_host_id(str(boot_id), str(shm))
    assert host_id == f"{_shared_memory.fnv1a_64(key):016x}"
    assert re.fullmatch(r"[0-9a-f]{16}", host_id)
    # Another /dev/shm (another inode) is another host id; nothing readable is none.
    other = tmp_path / "other"
    other.mkdir()
    assert _shared_memory.compute_host_id(str(boot_id), str(other)) not in ("", host_id)
    assert _shared_memory.compute_host_id(str(tmp_path / "missing"), str(shm)) == ""
    assert _shared_memory.compute_host_id(str(boot_id), str(tmp_path / "missing")) == ""
    boot_id.write_bytes(b"  \n")
    assert _shared_memory.compute_host_id(str(boot_id), str(shm)) == ""


def test_host_id_is_the_daemons(client):
    """The same inputs as the daemon (this machine's boot id and /dev/shm) give its host id."""
    local = _shared_memory.local_host_id()
    assert re.fullmatch(r"[0-9a-f]{16}", local)
    assert client.server_info().host_id == local
    assert _shared_memory.compute_host_id() == local
    assert client.shared_memory_available
    assert "upload_from_shared_memory" in client.features
    assert "download_to_shared_memory" in client.features


# ---- segments -----------------------------------------------------------------------------------


def test_segment_names_are_the_daemons_unguessable_ones(shm_daemon):
    with distarray.connect(shm_daemon.address) as client:
        names = []
        for _ in range(40):  # a few at a time: a tenant holds at most 16 (the default)
            with _shared_memory.Segment(16, calls_of(client)) as a, \
                    _shared_memory.Segment(16, calls_of(client)) as b:
                names += [a.name, b.name]
        assert len(set(names)) == len(names) == 80
        for name in names:
            assert re.fullmatch(r"/distarray-shm-[0-9a-f]{32}", name)
            assert re.fullmatch(r"/[A-Za-z0-9._-]{1,200}", name)  # docs/api.md's name check


def test_segment_is_private_and_released(shm_daemon):
    with distarray.connect(shm_daemon.address) as client:
        with _shared_memory.Segment(10_000, calls_of(client)) as segment:
            st = os.lstat(Path(_shared_memory.SHM_DIR) / segment.name[1:])
            assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
            assert st.st_uid == os.geteuid() and st.st_size == 10_000
            assert own_segments() == [segment.name[1:]]
            view = segment.view(np.dtype(">i4"), (2, 5), offset=40)
            view[...] = np.arange(10).reshape(2, 5)
            assert view.dtype == np.dtype("<i4")  # the calls' byte order, whatever was asked
            assert segment.range(40, 40) == distarray.v1.distarray_pb2.SharedMemoryRange(
                name=segment.name, segment_bytes=10_000, offset=40, bytes=40)
            del view
        assert own_segments() == []
        segment.close()  # twice is fine


def test_segment_released_on_errors_and_with_views_alive(shm_daemon, monkeypatch):
    with distarray.connect(shm_daemon.address) as client:
        with pytest.raises(ZeroDivisionError):
            with _shared_memory.Segment(4096, calls_of(client)) as segment:
                kept = segment.view(np.uint8, (4096,))  # a view outliving the segment
                1 / 0
        assert own_segments() == []
        assert kept.sum() == 0  # still mapped while the view lives; unmapped when it goes

        empty = _shared_memory.Segment(0, calls_of(client))
        assert empty.range() == distarray.v1.distarray_pb2.SharedMemoryRange(name=empty.name)
        empty.close()

        # A segment this process cannot open (another user's daemon): released at once.
        real_open = os.open

        def denied(path, *args, **kwargs):
            if str(path).startswith(_shared_memory.SHM_DIR):
                raise PermissionError(13, "Permission denied")
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", denied)
        with pytest.raises(distarray.FailedPreconditionError, match="open: Permission denied"):
            _shared_memory.Segment(1 << 20, calls_of(client))
        assert len(MADE) == 3 and own_segments() == []


# ---- round trips --------------------------------------------------------------------------------


def layouts(shape):
    out = {f"split{axis}": distarray.split_index_map(shape, axis, [0, 1, 2])
           for axis in range(len(shape))}
    out["replicated"] = distarray.replicated_index_map(len(shape), [0, 1, 2, 3])
    out["one_device"] = distarray.on_device(len(shape), 3)
    return out


@pytest.mark.parametrize("dtype", SERVED, ids=lambda t: np.dtype(t).name)
def test_round_trips_of_every_dtype(shm_daemon, rng, dtype):
    with distarray.connect(shm_daemon.address, shared_memory="always") as client:
        for shape in [(7, 5), (4, 3, 5)]:
            values = random_array(rng, shape, dtype)
            for label, index_map in layouts(shape).items():
                a = client.from_numpy(values, index_map)
                back = a.to_numpy()
                assert back.dtype == np.dtype(dtype), label
                np.testing.assert_array_equal(back, values, err_msg=label)
                assert path_of(shm_daemon, "upload", a.handle) == "shared-memory", label
                assert path_of(shm_daemon, "download", a.handle) == "shared-memory", label


def test_automatic_above_the_threshold_streaming_below(shm_daemon, rng):
    with distarray.connect(shm_daemon.address) as client:
        assert client.options.shared_memory == "auto"
        assert client.options.shared_memory_min_bytes == 1 << 20
        large = rng.uniform(size=(256, 512))  # 1 MiB exactly
        small = rng.uniform(size=(255, 512))
        big, little = client.from_numpy(large), client.from_numpy(small)
        np.testing.assert_array_equal(big.to_numpy(), large)
        np.testing.assert_array_equal(little.to_numpy(), small)
        assert path_of(shm_daemon, "upload", big.handle) == "shared-memory"
        assert path_of(shm_daemon, "download", big.handle) == "shared-memory"
        assert path_of(shm_daemon, "upload", little.handle) == "stream"
        assert path_of(shm_daemon, "download", little.handle) == "stream"
    with distarray.connect(shm_daemon.address, shared_memory="never") as client:
        assert not client.shared_memory_available
        a = client.from_numpy(large)
        np.testing.assert_array_equal(a.to_numpy(), large)
        assert path_of(shm_daemon, "upload", a.handle) == "stream"
        assert path_of(shm_daemon, "download", a.handle) == "stream"
    with pytest.raises(ValueError, match="shared_memory must be one of"):
        distarray.connect(shm_daemon.address, shared_memory="sometimes")


@pytest.mark.parametrize("streams", [1, 3])
def test_row_ranges_in_parallel_through_one_segment(shm_daemon, rng, monkeypatch, streams):
    """The split rule with a low threshold: one segment, one call per row range at its offset;
    inputs of any layout and byte order, broadcast writes, and out= downloads."""
    calls = []
    real_call = _transfer._shm_upload_start

    def recording_call(client, conn, header, source, timeout):
        calls.append((source.name, source.segment_bytes, source.offset, source.bytes,
                      own_segments()))
        return real_call(client, conn, header, source, timeout)

    monkeypatch.setattr(_transfer, "_shm_upload_start", recording_call)
    with distarray.connect(shm_daemon.address, shared_memory="always", parallel_min_bytes=1024,
                           parallel_streams=streams) as client:
        values = rng.integers(-1000, 1000, (1001, 67)).astype(np.int64)  # rows do not divide
        a = client.from_numpy(values, distarray.split_index_map(values.shape, 1, [0, 2]))
        np.testing.assert_array_equal(a.to_numpy(), values)
        assert {c[0] for c in calls} == {calls[0][0]} and len(calls) == streams
        row_bytes = 67 * 8
        bounds = [1001 * i // streams for i in range(streams + 1)]
        assert sorted((c[2], c[3]) for c in calls) == [
            (begin * row_bytes, (end - begin) * row_bytes)
            for begin, end in zip(bounds, bounds[1:])]
        assert all(c[1] == values.nbytes and c[4] == [calls[0][0][1:]] for c in calls)
        # Ranges that overlap in time log as one transfer, others each on its own line.
        assert transfer_count(shm_daemon, "upload", a.handle, "shared-memory", wait_for=1) >= 1
        assert transfer_count(shm_daemon, "upload", a.handle, "stream") == 0

        into = np.zeros_like(values)
        assert a.to_numpy(out=into) is into
        np.testing.assert_array_equal(into, values)
        a.write(values[::-1].astype(">i8"))  # reversed rows, big-endian: converted in the copy
        np.testing.assert_array_equal(a.to_numpy(), values[::-1])
        a.write(7)  # broadcast: never materialized before the segment
        np.testing.assert_array_equal(a.to_numpy(), np.full_like(values, 7))
        strided = values.astype(np.float32)[::3, ::-2]
        b = client.from_numpy(strided)
        np.testing.assert_array_equal(b.to_numpy(), strided)
        assert transfer_count(shm_daemon, "download", a.handle, "shared-memory", wait_for=1) >= 1
        assert transfer_count(shm_daemon, "download", a.handle, "stream") == 0
        assert transfer_count(shm_daemon, "upload", a.handle, "stream") == 0
        scalar = client.from_numpy(np.float64(2.5))
        assert scalar.shape == () and scalar.to_numpy() == 2.5
        assert path_of(shm_daemon, "upload", scalar.handle) == "shared-memory"


def test_pieces_of_whole_rows(shm_daemon, rng, monkeypatch):
    """Each stream's range goes in calls of at most SHARED_MEMORY_PIECE_BYTES of whole rows (one
    row where a row is larger), which together cover the array once."""
    monkeypatch.setattr(_transfer, "SHARED_MEMORY_PIECE_BYTES", 10_000)
    calls = []
    for name in ("_shm_upload_start", "_shm_download_start"):
        real = getattr(_transfer, name)

        def recording(*args, _real=real, _name=name):
            destination = args[-2]
            calls.append((_name, destination.offset, destination.bytes))
            return _real(*args)

        monkeypatch.setattr(_transfer, name, recording)
    with distarray.connect(shm_daemon.address, shared_memory="always", parallel_min_bytes=1024,
                           parallel_streams=3) as client:
        for shape, row_bytes, per_piece in [((1001, 67), 536, 18), ((5, 4000), 32000, 1)]:
            values = rng.integers(-9, 9, shape).astype(np.int64)
            calls.clear()
            a = client.from_numpy(values)
            np.testing.assert_array_equal(a.to_numpy(), values)
            rows = shape[0]
            ranges = [(rows * i // 3, rows * (i + 1) // 3) for i in range(3)]
            expected = sorted((r * row_bytes, (min(end, r + per_piece) - r) * row_bytes)
                              for begin, end in ranges for r in range(begin, end, per_piece))
            for name in ("_shm_upload_start", "_shm_download_start"):
                got = sorted((o, n) for c, o, n in calls if c == name)
                assert got == expected, (shape, name)
                assert sum(n for _, n in got) == values.nbytes, (shape, name)
                assert all(n <= max(10_000, row_bytes) and n % row_bytes == 0 for _, n in got)
    assert list(_transfer._row_pieces(0, 1, 0, 10**9)) == [(0, 1, 0, 10**9)]


def test_regions_through_shared_memory(shm_daemon, rng):
    values = rng.integers(-50, 50, (9, 7, 6)).astype(np.int32)
    regions = [
        (slice(None, None, -2), slice(2, 6)),
        (slice(3, 4),),
        (slice(-1, 2, -3), slice(None), slice(5, None, 1)),
        (slice(0, 9, 2**63 - 1), slice(-7, -1, 4)),
        (slice(None, None, -(2**63)), slice(6, None, -1), slice(None, None, -5)),
        (slice(8, None, -1),),
    ]
    with distarray.connect(shm_daemon.address, shared_memory="always") as client:
        a = client.from_numpy(values, distarray.split_index_map(values.shape, 0, [0, 1, 2]))
        for region in regions:
            got = a.to_numpy(region)
            np.testing.assert_array_equal(got, values[region], err_msg=str(region))
            assert got.shape == values[region].shape
        a.write(np.full((2, 3, 6), 9, np.int16), (slice(1, 5, 2), slice(None, None, -3)))
        values[1:5:2, ::-3] = 9
        np.testing.assert_array_equal(a.to_numpy(), values)
        # Every call went through shared memory (back-to-back calls may share a line).
        assert transfer_count(shm_daemon, "download", a.handle, "shared-memory", wait_for=1) >= 1
        assert transfer_count(shm_daemon, "upload", a.handle, "shared-memory", wait_for=1) >= 1
        assert transfer_count(shm_daemon, "download", a.handle, "stream") == 0
        assert transfer_count(shm_daemon, "upload", a.handle, "stream") == 0


def test_region_shapes_match_numpy():
    shape = (9, 1, 6)
    for region in [(slice(None),) * 3, (slice(-3, None), slice(0, 1), slice(None, None, -4)),
                   (slice(8, -10, -1), slice(None), slice(1, 6, 100))]:
        proto = distarray._array._region_proto(region, 3)
        assert _transfer._region_shape(proto, shape) == np.empty(shape)[region].shape
    assert _transfer._region_shape(distarray.v1.distarray_pb2.Region(), shape) == shape


# ---- when shared memory cannot be used ------------------------------------------------------------


def test_daemon_with_shared_memory_off(off_daemon, rng):
    values = rng.uniform(size=(512, 512))  # 2 MiB
    with distarray.connect(off_daemon.address) as client:
        assert client.server_info().host_id == ""
        assert "upload_from_shared_memory" not in client.features
        assert not client.shared_memory_available
        a = client.from_numpy(values)
        np.testing.assert_array_equal(a.to_numpy(), values)
        assert path_of(off_daemon, "upload", a.handle) == "stream"
        assert path_of(off_daemon, "download", a.handle) == "stream"
    with distarray.connect(off_daemon.address, shared_memory="always") as client:
        with pytest.raises(distarray.FailedPreconditionError,
                           match="no shared-memory transfers.*--shared_memory=off") as e:
            client.from_numpy(values)
        assert isinstance(e.value, distarray.DistarrayError)
        assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION
        zeros = client.zeros((512, 512))  # made on the daemon: no transfer
        with pytest.raises(distarray.FailedPreconditionError, match="--shared_memory=off"):
            zeros.to_numpy()


def test_refusal_falls_back_and_is_remembered(off_daemon, rng):
    """A daemon that refuses (here --shared_memory=off behind a matching host id, as an older
    daemon or another /dev/shm would): "auto" streams and keeps streaming; "always" raises the
    daemon's refusal as it is."""
    values = rng.uniform(size=(512, 512))
    with distarray.connect(off_daemon.address) as client:
        policy = client._shared_memory
        policy.daemon_host_id = policy.local_host_id  # as if the daemon had reported it
        assert client.shared_memory_available
        a = client.from_numpy(values)
        np.testing.assert_array_equal(a.to_numpy(), values)
        assert path_of(off_daemon, "upload", a.handle) == "stream"
        assert not client.shared_memory_available  # the refusal is remembered
    with distarray.connect(off_daemon.address, shared_memory="always") as client:
        client._shared_memory.daemon_host_id = client._shared_memory.local_host_id
        refusal = r"shared-memory transfers are off on this daemon \(--shared_memory=off\)"
        with pytest.raises(distarray.FailedPreconditionError, match=refusal):
            client.from_numpy(values)
        assert client.shared_memory_available  # "always" keeps trying


def test_host_ids_that_differ(shm_daemon, rng, monkeypatch):
    monkeypatch.setattr(_shared_memory, "local_host_id", lambda: "0123456789abcdef")
    values = rng.uniform(size=(512, 512))
    with distarray.connect(shm_daemon.address) as client:
        assert not client.shared_memory_available
        a = client.from_numpy(values)
        np.testing.assert_array_equal(a.to_numpy(), values)
        assert path_of(shm_daemon, "upload", a.handle) == "stream"
        assert path_of(shm_daemon, "download", a.handle) == "stream"
    with distarray.connect(shm_daemon.address, shared_memory="always") as client:
        with pytest.raises(distarray.FailedPreconditionError,
                           match="host id [0-9a-f]{16} and this process 0123456789abcdef: they do "
                                 "not share /dev/shm"):
            client.from_numpy(values)
    monkeypatch.setattr(_shared_memory, "local_host_id", lambda: "")
    with distarray.connect(shm_daemon.address, shared_memory="always") as client:
        with pytest.raises(distarray.FailedPreconditionError, match="cannot read"):
            client.from_numpy(values)


def test_segments_past_the_tenants_bounds_stream_that_transfer_only(rng):
    """RESOURCE_EXHAUSTED from CreateSharedMemory: "auto" streams and keeps trying shared memory,
    "always" raises it."""
    d = Daemon(["--log_level=debug", "--shared_memory_max_bytes=1MiB"])
    try:
        values = rng.uniform(size=(512, 512))  # 2 MiB: above the bound
        small = rng.uniform(size=(128, 1024))  # 1 MiB: within it
        with distarray.connect(d.address) as client:
            assert client.server_info().limits.max_shared_memory_bytes == 1 << 20
            a = client.from_numpy(values)
            np.testing.assert_array_equal(a.to_numpy(), values)
            assert path_of(d, "upload", a.handle) == "stream"
            assert client.shared_memory_available
            b = client.from_numpy(small)
            assert path_of(d, "upload", b.handle) == "shared-memory"
            np.testing.assert_array_equal(b.to_numpy(), small)
        with distarray.connect(d.address, shared_memory="always") as client:
            with pytest.raises(distarray.ResourceExhaustedError, match="--shared_memory_max_bytes"):
                client.from_numpy(values)
    finally:
        assert d.stop() == 0


def test_segment_this_process_cannot_open_falls_back(shm_daemon, rng, monkeypatch):
    """A segment the daemon made that this process cannot open (as a client of another user):
    released, "auto" streams and, once streaming delivered, keeps streaming; "always" raises."""
    real_open = os.open

    def denied(path, *args, **kwargs):
        if str(path).startswith(_shared_memory.SHM_DIR):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    values = rng.uniform(size=(512, 512))
    with distarray.connect(shm_daemon.address) as client:
        a = client.from_numpy(values)
        np.testing.assert_array_equal(a.to_numpy(), values)
        assert path_of(shm_daemon, "upload", a.handle) == "stream"
        assert not client.shared_memory_available
    with distarray.connect(shm_daemon.address, shared_memory="always") as client:
        with pytest.raises(distarray.FailedPreconditionError, match="run as its user"):
            client.from_numpy(values)
    assert MADE and own_segments() == []


def test_a_client_without_a_session_streams(shm_daemon, rng):
    values = rng.uniform(size=(512, 512))
    with distarray.connect(shm_daemon.address, session=False) as client:
        assert not client.shared_memory_available
        a = client.from_numpy(values, name=f"no-session-{os.getpid()}")
        try:
            np.testing.assert_array_equal(a.to_numpy(), values)
            assert path_of(shm_daemon, "upload", a.handle) == "stream"
        finally:
            a.delete()
    with distarray.connect(shm_daemon.address, session=False, shared_memory="always") as client:
        with pytest.raises(distarray.FailedPreconditionError, match="no session"):
            client.from_numpy(values)
    assert MADE == []


def test_the_arrays_own_refusal_is_not_remembered(shm_daemon, rng):
    """An upload into a SUM array is FAILED_PRECONDITION through either path: raised, and
    shared memory stays on (streaming did not deliver either, so the refusal was not shared
    memory's)."""
    values = rng.uniform(size=(512, 512))
    with distarray.connect(shm_daemon.address) as client:
        s = client.from_numpy(values, mode="sum")
        with pytest.raises(distarray.FailedPreconditionError, match="REPLICA|replica"):
            s.write(values)
        assert client.shared_memory_available
        b = client.from_numpy(values)
        assert path_of(shm_daemon, "upload", b.handle) == "shared-memory"


# ---- the kept segment -----------------------------------------------------------------------------


def test_the_last_segment_is_kept_for_the_next_transfer(shm_daemon, rng):
    values = rng.uniform(size=(512, 512))  # 2 MiB
    with distarray.connect(shm_daemon.address) as client:
        assert client.options.shared_memory_cache_bytes == 1 << 30
        a = client.from_numpy(values)
        kept = own_segments()
        assert len(kept) == 1
        np.testing.assert_array_equal(a.to_numpy(), values)
        np.testing.assert_array_equal(a.to_numpy(slice(0, 256)), values[:256])  # 1 MiB region
        client.from_numpy(values[:256])
        assert own_segments() == kept  # the same segment served every transfer since
        bigger = np.concatenate([values, values])
        client.from_numpy(bigger)  # too large for the kept one: a new one, kept in its place
        assert len(own_segments()) == 1 and own_segments() != kept
    assert own_segments() == []  # removed when the client closes

    with distarray.connect(shm_daemon.address, shared_memory_cache_bytes=0) as client:
        a = client.from_numpy(values)
        assert own_segments() == []
        assert path_of(shm_daemon, "upload", a.handle) == "shared-memory"
    with distarray.connect(shm_daemon.address, shared_memory_cache_bytes=3 << 20) as client:
        client.from_numpy(values)
        kept = own_segments()
        client.from_numpy(bigger)  # above the cap: removed after its transfer, and the kept
        assert own_segments() == []  # one was removed before it was made (room in /dev/shm)
        client.from_numpy(values)
        assert len(own_segments()) == 1 and own_segments() != kept

    client = distarray.connect(shm_daemon.address)
    a = client.from_numpy(values)
    assert len(own_segments()) == 1
    other = distarray.connect(shm_daemon.address)  # the module's default now: it lets go of client
    del a, client
    gc.collect()
    assert own_segments() == []  # a client collected without close() removes it too
    other.close()


def test_a_kept_segment_too_small_is_released_before_a_new_one_is_made(shm_daemon):
    with distarray.connect(shm_daemon.address) as client:
        seen = []
        calls = calls_of(client)

        class Recording:
            def create(self, nbytes):
                seen.append(own_segments())
                return calls.create(nbytes)

            def release(self, name):
                calls.release(name)

        cache = _shared_memory.SegmentCache(1 << 20, Recording())
        small = cache.take(4096)
        cache.give(small)
        large = cache.take(8192)
        assert large.nbytes == 8192
        assert seen == [[], []]  # when the new one was asked for, the small one was gone
        large.close()
        cache.close()
    assert own_segments() == []


def test_a_forked_child_never_releases_the_parents_segment(shm_daemon, rng, monkeypatch):
    values = rng.uniform(size=(512, 512))
    with distarray.connect(shm_daemon.address) as client:
        a = client.from_numpy(values)
        kept = own_segments()
        assert len(kept) == 1
        parent = os.getpid()
        with monkeypatch.context() as child:
            child.setattr(os, "getpid", lambda: parent + 1)  # as in a child after fork()
            fresh = client._rpc.segments.take(1)
            assert fresh.nbytes == 1  # the child makes its own rather than use the parent's
            fresh.close()
            client._rpc.segments.close()  # as the child's exit would
        assert kept[0] in os.listdir(_shared_memory.SHM_DIR)
        # The parent's cache let go of it in this simulation (a real child has a copy of the
        # cache); release it by hand, and the next transfer makes a new one.
        calls_of(client).release("/" + kept[0])
        np.testing.assert_array_equal(a.to_numpy(), values)


# ---- errors and cleanup ---------------------------------------------------------------------------


def failing_calls(client):
    """Calls that fail on the daemon, each with the exception class it must raise."""
    values = np.arange(63.0).reshape(9, 7)
    a = client.from_numpy(values)
    gone = client.from_numpy(values)
    gone.delete()
    stale = distarray.DistributedArray(client, gone.info, owned=False)
    return [
        ("deleted handle", distarray.NotFoundError, lambda: stale.to_numpy()),
        ("deleted handle, region", distarray.NotFoundError, lambda: stale.to_numpy(slice(1, 3))),
        ("region outside", distarray.OutOfRangeError, lambda: a.to_numpy(slice(0, 10))),
        ("empty region", distarray.InvalidArgumentError, lambda: a.to_numpy(slice(4, 2))),
        ("zero step", distarray.InvalidArgumentError, lambda: a.to_numpy(slice(None, None, 0))),
        ("wrong size write", distarray.InvalidArgumentError,
         lambda: a.write(np.zeros((3, 7)), (slice(0, 2),))),
        ("write outside", distarray.OutOfRangeError,
         lambda: a.write(np.zeros((1, 7)), (slice(9, 10),))),
        ("no such device", distarray.InvalidArgumentError,
         lambda: client.from_numpy(values, distarray.on_device(2, 99))),
        ("into a SUM array", distarray.FailedPreconditionError,
         lambda: client.from_numpy(values, mode="sum").write(values)),
    ]


def test_zero_size_round_trip(shm_daemon):
    """A zero-size array moves no bytes through shared memory or the streams."""
    for use in ("always", "never"):
        with distarray.connect(shm_daemon.address, shared_memory=use) as c:
            for values in (np.zeros((0, 3)), np.zeros((4, 0), np.int16), np.zeros(0, bool)):
                a = c.from_numpy(values)
                assert a.devices == ()
                got = a.to_numpy()
                assert got.shape == values.shape and got.dtype == values.dtype, use
                a.write(values)


def test_errors_are_mapped_as_when_streaming(shm_daemon, monkeypatch):
    """Each failing call raises the same class through shared memory as through the streams,
    from the daemon's answer to the shared-memory call, and leaves no segment behind."""
    shm_calls = []
    for name in ("_shm_upload_start", "_shm_download_start"):
        real = getattr(_transfer, name)

        def counted(*args, _real=real, _name=name):
            shm_calls.append(_name)
            return _real(*args)

        monkeypatch.setattr(_transfer, name, counted)
    with distarray.connect(shm_daemon.address, shared_memory="always") as shm, \
            distarray.connect(shm_daemon.address, shared_memory="never") as streams:
        shm_cases = failing_calls(shm)
        stream_cases = failing_calls(streams)
        for (label, cls, call), (_, _, streamed) in zip(shm_cases, stream_cases):
            shm_calls.clear()
            with pytest.raises(cls) as through_shm:
                call()
            assert shm_calls, label  # the daemon answered a shared-memory call
            shm_calls.clear()
            with pytest.raises(cls) as through_streams:
                streamed()
            assert not shm_calls, label
            assert type(through_shm.value) is type(through_streams.value), label
            assert own_segments() == [], label


def test_segment_removed_when_a_range_fails_mid_transfer(shm_daemon, rng, monkeypatch):
    seen = []
    real_call = _transfer._shm_download_start

    def failing_call(client, conn, handle, region, destination, timeout):
        seen.append(own_segments())
        if destination.offset > 0:
            raise RuntimeError("the call broke")
        return real_call(client, conn, handle, region, destination, timeout)

    monkeypatch.setattr(_transfer, "_shm_download_start", failing_call)
    values = rng.uniform(size=(300, 40))
    with distarray.connect(shm_daemon.address, shared_memory="always", parallel_min_bytes=1024,
                           parallel_streams=3) as client:
        a = client.from_numpy(values)
        with pytest.raises(RuntimeError, match="the call broke"):
            a.to_numpy()
    assert len(seen) == 3 and all(len(s) == 1 for s in seen)  # present during the calls
    assert own_segments() == []  # and gone after


class Interrupted(BaseException):
    """Stands for KeyboardInterrupt, which pytest would take as the user's."""


def test_interrupted_copy_removes_the_segment(shm_daemon):
    class Values(np.ndarray):
        def __array_function__(self, func, types, args, kwargs):
            if func is np.copyto:
                assert len(own_segments()) == 1
                raise Interrupted
            return super().__array_function__(func, types, args, kwargs)

    with distarray.connect(shm_daemon.address, shared_memory="always") as client:
        with pytest.raises(Interrupted):
            _transfer.upload_new(client._rpc, np.ones((4, 4)).view(Values),
                                 client._spec((4, 4), np.float64, None, "replica", None))


def test_overlapped_calls_order_and_cancel():
    """Each piece: before, start; the previous piece's result and after run while the next
    piece's call is in flight; an error cancels the call left in flight."""
    events = []

    class Call:
        def __init__(self, piece, fail=False):
            self.piece, self.fail = piece, fail

        def result(self):
            events.append(("result", self.piece))
            if self.fail:
                raise distarray.NotFoundError(grpc.StatusCode.NOT_FOUND, "gone")

        def cancel(self):
            events.append(("cancel", self.piece))

    def run(pieces, fail_at=None):
        events.clear()
        _transfer._overlapped(iter(pieces), lambda p: Call(p, p == fail_at),
                              lambda p: events.append(("before", p)),
                              lambda p: events.append(("after", p)))
        return events

    assert run([1, 2, 3]) == [
        ("before", 1), ("before", 2), ("result", 1), ("after", 1), ("before", 3),
        ("result", 2), ("after", 2), ("result", 3), ("after", 3)]
    with pytest.raises(distarray.NotFoundError):
        run([1, 2, 3], fail_at=1)
    assert events == [("before", 1), ("before", 2), ("result", 1), ("cancel", 2)]
    assert run([]) == []
