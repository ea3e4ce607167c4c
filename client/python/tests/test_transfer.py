"""Round trips of every dtype the daemon serves through several layouts."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import distarray
from conftest import random_array

SERVED = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64,
          np.complex128]


def layouts(shape):
    """Split on each axis, 2-d blocks, replicated, one device, overlapping."""
    out = {f"split{axis}": distarray.split_index_map(shape, axis, [0, 1, 2])
           for axis in range(len(shape))}
    out["blocks"] = distarray.make_2d_index_map([0, 2, shape[0]], [0, 3, shape[1]],
                                                [[0, 1], [2, {3, 0}]]) if len(shape) == 2 else None
    out["replicated"] = distarray.replicated_index_map(len(shape), [0, 1, 2, 3])
    out["one_device"] = distarray.on_device(len(shape), 3)
    return {k: v for k, v in out.items() if v is not None}


def test_served_dtypes_match_server(client):
    served = {np.dtype(t) for t in SERVED}
    from distarray._types import from_proto_dtype

    assert {from_proto_dtype(t) for t in client.server_info().implemented_dtypes} == served


@pytest.mark.parametrize("dtype", SERVED, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("shape", [(7, 5), (4, 3, 5)], ids=["2d", "3d"])
def test_round_trip(client, rng, dtype, shape):
    values = random_array(rng, shape, dtype)
    for label, index_map in layouts(shape).items():
        a = client.from_numpy(values, index_map)
        assert a.shape == shape and a.dtype == np.dtype(dtype) and a.mode == "replica", label
        back = a.to_numpy()
        assert back.dtype == np.dtype(dtype), label
        np.testing.assert_array_equal(back, values, err_msg=label)
        np.testing.assert_array_equal(np.asarray(a), values, err_msg=label)


def test_index_map_form(client):
    index_map = distarray.split_index_map((10, 4), 0, [0, 1])
    a = client.from_numpy(np.zeros((10, 4), np.float32), index_map)
    assert a.index_map == {0: [(slice(0, 5), slice(0, 4))], 1: [(slice(5, 10), slice(0, 4))]}
    assert a.devices == (0, 1)
    assert a.bytes_per_device == {0: 80, 1: 80}
    # The shorthand forms: one tuple per device, trailing axes whole, negative bounds.
    b = client.from_numpy(np.ones((10, 4)), {0: (slice(0, -5),), 1: [(slice(5, None),)]})
    assert b.index_map == a.index_map


def test_op_modes_and_reshard(client, rng):
    values = rng.uniform(-1, 1, (8, 6))
    a = client.from_numpy(values, distarray.split_index_map(values.shape, 1, [0, 1]), mode="sum")
    assert a.mode == "sum"
    np.testing.assert_array_equal(a.to_numpy(), values)
    b = a.reshard(distarray.make_2d_index_map([0, 4, 8], [0, 3, 6], [[0, 1], [2, 3]]), "replica")
    assert b.mode == "replica" and b.devices == (0, 1, 2, 3) and b.handle != a.handle
    np.testing.assert_array_equal(b.to_numpy(), values)
    handle = b.handle
    b.reshard(distarray.on_device(2, 1), in_place=True)
    assert b.handle == handle and b.devices == (1,)
    c = b.change_mode("max")
    assert c.mode == "max"
    np.testing.assert_array_equal(c.to_numpy(), values)
    b.change_mode("min", in_place=True)
    assert b.mode == "min" and b.handle == handle


def test_regions_and_write(client, rng):
    values = rng.integers(-50, 50, (9, 7)).astype(np.int32)
    a = client.from_numpy(values, distarray.split_index_map(values.shape, 0, [0, 1, 2]))
    np.testing.assert_array_equal(a.to_numpy((slice(None, None, -2), slice(2, 6))),
                                  values[::-2, 2:6])
    np.testing.assert_array_equal(a.to_numpy(slice(3, 4)), values[3:4])
    a.write(np.full((2, 7), 7), (slice(1, 3),))
    values[1:3] = 7
    np.testing.assert_array_equal(a.to_numpy(), values)
    a.write(5)  # broadcast over the whole array
    np.testing.assert_array_equal(a.to_numpy(), np.full_like(values, 5))


def test_fills(client):
    m = distarray.split_index_map((6, 4), 0, [0, 1])
    np.testing.assert_array_equal(client.zeros((6, 4), np.int16, m).to_numpy(), np.zeros((6, 4)))
    np.testing.assert_array_equal(client.ones((6, 4), np.float32, m).to_numpy(), np.ones((6, 4)))
    np.testing.assert_array_equal(client.full((6, 4), 3, np.uint8, m).to_numpy(), np.full((6, 4), 3))
    np.testing.assert_array_equal(client.arange((6, 4), 1, 2, np.float64, m).to_numpy(),
                                  (1 + 2 * np.arange(24.0)).reshape(6, 4))
    u = client.uniform((6, 4), 2, 3, seed=7, index_map=m).to_numpy()
    assert ((u >= 2) & (u < 3)).all() and len(np.unique(u)) > 1
    same = client.uniform((6, 4), 2, 3, seed=7, index_map=distarray.on_device(2, 3)).to_numpy()
    np.testing.assert_array_equal(u, same)


def test_zero_d_and_non_contiguous_inputs(client, rng):
    scalar = client.from_numpy(np.float64(2.5))
    assert scalar.shape == () and scalar.to_numpy() == 2.5 and float(scalar) == 2.5
    base = rng.uniform(size=(8, 10))
    strided = base[::2, ::-3]  # neither C-contiguous nor positive strides
    a = client.from_numpy(strided, distarray.split_index_map(strided.shape, 1, [0, 1]))
    np.testing.assert_array_equal(a.to_numpy(), strided)
    big_endian = np.arange(12, dtype=">i4").reshape(3, 4)
    np.testing.assert_array_equal(client.from_numpy(big_endian).to_numpy(), big_endian)


@pytest.mark.parametrize("streams", [1, 3])
def test_parallel_streams(daemon, rng, streams):
    """The split rule with a low threshold: rows cut over `streams` connections both ways."""
    with distarray.connect(daemon.address, parallel_min_bytes=1024, parallel_streams=streams,
                           upload_message_bytes=1000) as client:
        values = rng.uniform(size=(101, 33)).astype(np.float32)  # 13 KB, rows not divisible
        a = client.from_numpy(values, distarray.split_index_map(values.shape, 1, [0, 2]))
        np.testing.assert_array_equal(a.to_numpy(), values)
        assert len(client._rpc._bulk) == (streams if streams > 1 else 0)
        into = np.zeros_like(values)
        assert a.to_numpy(out=into) is into
        np.testing.assert_array_equal(into, values)
        with pytest.raises(ValueError, match="C-contiguous"):
            a.to_numpy(out=np.zeros((101, 33), np.float64))
        with pytest.raises(ValueError, match="C-contiguous"):
            a.to_numpy(out=np.zeros((33, 101), np.float32).T)
        # A one-row array takes one stream whatever its size.
        row = rng.uniform(size=(1, 600))
        np.testing.assert_array_equal(client.from_numpy(row).to_numpy(), row)
        # Op-mode uploads go through one stream and change mode on the daemon.
        s = client.from_numpy(values, mode="sum")
        np.testing.assert_array_equal(s.to_numpy(), values)


def test_parts_rule():
    from distarray import _transfer

    class Opts:
        parallel_min_bytes = 64 << 20
        parallel_streams = 4

    class FakeClient:
        options = Opts()

    assert _transfer._parts(FakeClient(), (1000, 10), (64 << 20) - 1) == 1
    assert _transfer._parts(FakeClient(), (1000, 10), 64 << 20) == 4
    assert _transfer._parts(FakeClient(), (3, 10), 1 << 30) == 3
    assert _transfer._parts(FakeClient(), (), 1 << 30) == 1


def test_progress_bar_only_when_asked_or_on_a_terminal(daemon, rng, capfd, monkeypatch):
    monkeypatch.setattr(distarray._transfer, "PROGRESS_MIN_BYTES", 1)
    with distarray.connect(daemon.address) as client:
        values = rng.uniform(size=(64, 64))
        a = client.from_numpy(values)  # stderr is not a terminal here: no bar
        a.to_numpy()
        assert capfd.readouterr().err == ""
        np.testing.assert_array_equal(a.to_numpy(progress=True), values)
        assert "download" in capfd.readouterr().err  # tqdm's bar, forced on


def test_index_map_helpers():
    # Block i of n is [len*i//n, len*(i+1)//n), as the C++ Split: with more devices than
    # columns, device 0's block is empty and it gets nothing.
    assert distarray.split_index_map((2, 3), -1, [0, 1, 2, 3]) == {
        1: [(slice(None), slice(0, 1))], 2: [(slice(None), slice(1, 2))],
        3: [(slice(None), slice(2, 3))]}
    assert distarray.replicated_index_map(2, [1, 3]) == {
        1: [(slice(None), slice(None))], 3: [(slice(None), slice(None))]}
    blocks = distarray.make_2d_index_map([0, 1, 4], [0, 2], [[0], [{1, 2}]])
    assert blocks == {0: [(slice(0, 1), slice(0, 2))], 1: [(slice(1, 4), slice(0, 2))],
                      2: [(slice(1, 4), slice(0, 2))]}
    with pytest.raises(ValueError, match="grid"):
        distarray.make_2d_index_map([0, 1, 4], [0, 2], [[0]])
    with pytest.raises(ValueError, match="axis"):
        distarray.split_index_map((2, 3), 2, [0])
    with pytest.raises(TypeError, match="tuple of slices"):
        from distarray._index_map import to_proto_index_map

        to_proto_index_map({0: [(0, 1)]}, 2)
