"""The functions whose result shape depends on the values (``nonzero``, boolean masks, the
``unique_*`` functions, ``repeat`` with an array of counts), composed from the daemon's ops,
against NumPy on fresh random data over several layouts; and ``asarray`` of nested lists of
arrays, joined on the daemon."""

from __future__ import annotations

import numpy as np
import pytest

import distarray
from _layouts import LAYOUTS, check, put

SHAPES = [(11,), (6, 5), (3, 4, 5)]
DTYPES = [np.bool_, np.int8, np.int64, np.uint16, np.float32, np.float64, np.complex128]


def sparse(rng: np.random.Generator, shape, dtype, density: float = 0.4) -> np.ndarray:
    """Random values of ``dtype`` with about ``1 - density`` of them zero (False)."""
    dtype = np.dtype(dtype)
    keep = rng.random(shape) < density
    if dtype == np.bool_:
        return keep
    if dtype.kind == "c":
        values = rng.integers(-5, 6, shape) + 1j * rng.integers(-5, 6, shape)
    elif dtype.kind == "u":
        values = rng.integers(1, 100, shape)
    else:
        values = rng.integers(-50, 50, shape)
    return np.where(keep, values, 0).astype(dtype)


# ---- nonzero -------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_matches_numpy(client, rng, layout, shape, dtype):
    values = sparse(rng, shape, dtype)
    result = distarray.nonzero(put(client, values, layout))
    expected = np.nonzero(values)
    assert isinstance(result, tuple) and len(result) == len(expected)
    for axis, (got, want) in enumerate(zip(result, expected)):
        check(got, want.astype(np.int64), f"nonzero {layout} {shape} {dtype} axis {axis}")


def test_nonzero_counts_nan_and_negative_zero_as_numpy(client):
    values = np.array([0.0, np.nan, -0.0, 1e-300, -np.inf, 0.0])
    (got,) = distarray.nonzero(client.from_numpy(values))
    check(got, np.nonzero(values)[0])
    values = np.array([0j, complex(0, -1), complex(-0.0, 0.0), complex(np.nan, 0)])
    (got,) = distarray.nonzero(client.from_numpy(values))
    check(got, np.nonzero(values)[0])


@pytest.mark.parametrize("shape", [(0,), (3, 0), (4, 3)])
def test_nonzero_of_nothing(client, shape):
    """Zero-size inputs and inputs without a nonzero element: one empty int64 array per axis."""
    values = np.zeros(shape)
    result = distarray.nonzero(client.from_numpy(values))
    assert len(result) == len(shape)
    for got in result:
        check(got, np.zeros(0, np.int64))


def test_nonzero_all_true_split(client, rng):
    values = np.ones((9, 4), bool)
    x = client.from_numpy(values, distarray.split_index_map((9, 4), 0, [0, 1, 2, 3]))
    for got, want in zip(distarray.nonzero(x), np.nonzero(values)):
        check(got, want)


def test_nonzero_of_0d_is_value_error(client):
    with pytest.raises(ValueError, match="0-d"):
        distarray.nonzero(client.from_numpy(np.array(3.0)))


# ---- asarray of nested lists of arrays -----------------------------------------------------------


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_asarray_of_0d_elements_joins_on_the_daemon(client, rng, layout):
    """The array API suite's way to build an expected matrix: a nested list of 0-d arrays
    (``x[i, j]``), here the transpose."""
    values = rng.integers(-100, 100, (4, 3)).astype(np.int32)
    x = put(client, values, layout)
    got = distarray.asarray([[x[i, j] for i in range(4)] for j in range(3)], dtype=x.dtype)
    check(got, values.T.copy())
    assert len(got.index_map) == 1 and sum(len(v) for v in got.index_map.values()) == 1


def test_asarray_of_arrays_scalars_and_dtype(client, rng):
    a = rng.uniform(-1, 1, (2, 3))
    x = client.from_numpy(a, distarray.split_index_map((2, 3), 0, [0, 1]))
    rows = [x[0], x[1], x[0] * 2]
    check(distarray.asarray(rows), np.asarray([a[0], a[1], a[0] * 2]))
    check(distarray.asarray([[x[0, 0], 2.5], (x[1, 2], -1.0)], dtype=np.float32),
          np.asarray([[a[0, 0], 2.5], [a[1, 2], -1.0]], np.float32))
    named = distarray.asarray([x[0, 0], x[1, 1]], name="asarray-joined")
    try:
        assert named.name == "asarray-joined"
        check(named, np.asarray([a[0, 0], a[1, 1]]))
    finally:
        client.delete("asarray-joined")
    placed = distarray.asarray([x[0, 0], x[1, 1], x[0, 2], x[1, 0]],
                               index_map=distarray.split_index_map((4,), 0, [2, 3]))
    assert placed.devices == (2, 3)
    check(placed, np.asarray([a[0, 0], a[1, 1], a[0, 2], a[1, 0]]))


def test_asarray_of_many_0d_elements(client, rng):
    """More leaves than one concat takes (1,024)."""
    values = rng.integers(0, 10, 1100)
    x = client.from_numpy(values)
    check(distarray.asarray([x[i] for i in range(1100)]), values)


def test_asarray_of_ragged_arrays_is_value_error(client):
    x = client.from_numpy(np.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match="ragged"):
        distarray.asarray([x[0], x[0, 0]])
    with pytest.raises(ValueError, match="ragged"):
        distarray.asarray([[x[0, 0]], [x[0, 1], x[0, 2]]])
    with pytest.raises(ValueError, match="copy=False"):
        distarray.asarray([x[0, 0]], copy=False)


# ---- DLPack --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint32, np.float32, np.complex128])
def test_from_dlpack_uploads_numpy(client, rng, dtype):
    values = (rng.uniform(-10, 10, (5, 4)) > 0 if dtype == np.bool_
              else rng.uniform(-10, 10, (5, 4)).astype(dtype))
    got = distarray.from_dlpack(values.T)  # a strided view: uploaded in C order
    check(got, values.T.copy())
    assert got.devices == (0,)
    placed = distarray.from_dlpack(values, index_map=distarray.split_index_map((5, 4), 0, [1, 2]))
    assert placed.devices == (1, 2)
    check(placed, values)


def test_from_dlpack_copy_and_device(client, rng):
    values = rng.uniform(size=3)
    with pytest.raises(ValueError, match="copy=False"):
        distarray.from_dlpack(values, copy=False)
    with pytest.raises(ValueError, match="device"):
        distarray.from_dlpack(values, device="cuda:0")
    check(distarray.from_dlpack(values, device=distarray.Device(), copy=True), values)
    x = client.from_numpy(values)
    assert distarray.from_dlpack(x) is x
    assert distarray.from_dlpack(x, copy=True).handle != x.handle
    with pytest.raises(TypeError, match="__dlpack__"):
        distarray.from_dlpack([1, 2])


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_dlpack_exports_a_host_copy(client, rng, layout):
    values = rng.integers(-1000, 1000, (6, 5)).astype(np.int32)
    x = put(client, values, layout)
    device = x.__dlpack_device__()
    assert device == (1, 0) and device[0].name == "kDLCPU"
    got = np.from_dlpack(x)
    assert got.dtype == values.dtype
    np.testing.assert_array_equal(got, values)
    got[0, 0] += 1  # a copy: the daemon's array is untouched
    np.testing.assert_array_equal(x.to_numpy(), values)
    # The round trip through DLPack on both sides.
    check(distarray.from_dlpack(np.from_dlpack(x)), values)


def test_dlpack_refuses_to_share(client):
    x = client.from_numpy(np.arange(4.0))
    with pytest.raises(BufferError, match="copy"):
        x.__dlpack__(copy=False)
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0))  # kDLCUDA: the daemon's GPUs are not this process's
    capsule = x.__dlpack__(max_version=(1, 0), dl_device=(1, 0))
    assert "dltensor" in repr(capsule)


# ---- boolean masks -------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.bool_, np.int16, np.uint8, np.float32, np.complex64])
def test_set_masked_scalar(client, rng, layout, dtype):
    values = sparse(rng, (6, 5), dtype, density=0.9)
    mask = rng.random((6, 5)) < 0.5
    x = put(client, values, layout)
    handle = x.handle
    scalar = {np.bool_: True, np.int16: -7, np.uint8: 200, np.float32: 2.5,
              np.complex64: 1 - 2j}[dtype]
    x[put(client, mask, "cols3")] = scalar
    values[mask] = scalar
    assert x.handle == handle
    check(x, values, f"{layout} {dtype}")


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_set_masked_leading_axes_and_arrays(client, rng, layout):
    values = rng.uniform(-1, 1, (4, 3, 2))
    x = put(client, values, layout)
    # A mask of the first axis, a 0-d value of another dtype.
    rows = rng.random(4) < 0.5
    x[client.from_numpy(rows)] = client.from_numpy(np.array(7, np.int32))
    values[rows] = 7
    check(x, values)
    # A mask of two axes, a value of the trailing shape.
    plane = rng.random((4, 3)) < 0.5
    row = rng.uniform(-1, 1, 2)
    x[(client.from_numpy(plane),)] = client.from_numpy(row)
    values[plane] = row
    check(x, values)
    # Every element, none, and a float into an integer array (NumPy's truncation).
    ints = rng.integers(-9, 9, (4, 3, 2))
    y = put(client, ints, layout)
    y[client.from_numpy(np.zeros((4, 3, 2), bool))] = 100
    check(y, ints)
    y[client.from_numpy(np.ones((4, 3, 2), bool))] = 3.9
    check(y, np.full_like(ints, 3))


def test_set_masked_errors(client):
    x = client.from_numpy(np.zeros((3, 2), np.int8))
    with pytest.raises(IndexError, match="did not match"):
        x[client.from_numpy(np.ones(2, bool))] = 1
    with pytest.raises(IndexError, match="too many indices"):
        x[client.from_numpy(np.ones((3, 2, 1), bool))] = 1
    with pytest.raises(OverflowError):
        x[client.from_numpy(np.ones((3, 2), bool))] = 1000
    check(x, np.zeros((3, 2), np.int8))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.uint64, np.float64, np.complex64])
def test_get_masked_matches_numpy(client, rng, layout, dtype):
    values = sparse(rng, (6, 5, 3), dtype, density=0.9)
    x = put(client, values, layout)
    for k in (1, 2, 3):
        mask = rng.random(values.shape[:k]) < 0.4
        got = x[put(client, mask, layout)]
        check(got, values[mask], f"{layout} {dtype} mask of {k} axes")
    # The mask's own layout does not matter.
    mask = rng.random(values.shape) < 0.5
    check(x[client.from_numpy(mask, distarray.split_index_map(mask.shape, 1, [3, 2]))],
          values[mask])


def test_get_masked_edges(client, rng):
    values = rng.uniform(-1, 1, (4, 3))
    x = client.from_numpy(values, distarray.split_index_map((4, 3), 0, [0, 1]))
    # Nothing selected, everything selected.
    check(x[client.from_numpy(np.zeros((4, 3), bool))], values[np.zeros((4, 3), bool)])
    check(x[client.from_numpy(np.ones(4, bool))], values)
    # A 0-d mask: a new leading axis of length 1 or 0, as NumPy's x[True], x[False].
    check(x[client.from_numpy(np.array(True))], values[np.array(True)])
    check(x[client.from_numpy(np.array(False))], values[np.array(False)])
    scalar = client.from_numpy(np.array(2.5))
    check(scalar[client.from_numpy(np.array(True))], np.array([2.5]))
    # Zero-size arrays and masks.
    empty = client.from_numpy(np.zeros((0, 3)))
    check(empty[client.from_numpy(np.zeros((0, 3), bool))], np.zeros((0,)))
    check(empty[client.from_numpy(np.zeros(0, bool))], np.zeros((0, 3)))
    with pytest.raises(IndexError, match="did not match"):
        x[client.from_numpy(np.ones(3, bool))]
    with pytest.raises(IndexError, match="too many indices"):
        x[client.from_numpy(np.ones((4, 3, 1), bool))]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_set_masked_one_value_per_element(client, rng, layout):
    values = rng.integers(-100, 100, (5, 4, 2))
    x = put(client, values, layout)
    for k in (1, 2, 3):
        mask = rng.random(values.shape[:k]) < 0.5
        n = int(mask.sum())
        new = rng.integers(1000, 2000, (n,) + values.shape[k:])
        x[client.from_numpy(mask)] = put(client, new, layout)
        values[mask] = new
        check(x, values, f"{layout} mask of {k} axes")
    # A value broadcast to every selected element: one per selected row, the same columns.
    mask = rng.random(5) < 0.6
    mask[0] = True  # a value of count + 1 rows must not be one of a single row
    column = rng.integers(-5, 5, (int(mask.sum()), 1, 1))
    x[client.from_numpy(mask)] = client.from_numpy(column)
    values[mask] = column
    check(x, values)
    with pytest.raises(ValueError, match="broadcasts neither"):
        x[client.from_numpy(mask)] = client.from_numpy(np.zeros((int(mask.sum()) + 1, 4, 2),
                                                                 np.int64))
    check(x, values)


# ---- unique_* ------------------------------------------------------------------------------------


def numpy_unique_all(values: np.ndarray):
    """NumPy's unique_all with the array API's NaN rule (each NaN its own value, sorted last),
    which NumPy 2 follows for ``equal_nan=False``."""
    out = np.unique(values.reshape(-1), return_index=True, return_inverse=True,
                    return_counts=True, equal_nan=False)
    return out[0], out[1].astype(np.int64), out[2].reshape(values.shape).astype(np.int64), \
        out[3].astype(np.int64)


def with_repeats(rng, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.3
    pool = rng.integers(-6, 6, 5)
    if dtype.kind == "u":
        pool = np.abs(pool)
    if dtype.kind == "c":
        return (rng.choice(pool, shape) + 1j * rng.choice(pool[:2], shape)).astype(dtype)
    return rng.choice(pool, shape).astype(dtype)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint32, np.int64, np.float32,
                                   np.float64, np.complex128])
def test_unique_matches_numpy(client, rng, layout, dtype):
    values = with_repeats(rng, (7, 4), dtype)
    x = put(client, values, layout)
    want_values, want_indices, want_inverse, want_counts = numpy_unique_all(values)
    msg = f"{layout} {dtype}"
    check(distarray.unique_values(x), want_values, msg)
    counts = distarray.unique_counts(x)
    check(counts.values, want_values, msg)
    check(counts.counts, want_counts, msg)
    inverse = distarray.unique_inverse(x)
    check(inverse.values, want_values, msg)
    check(inverse.inverse_indices, want_inverse, msg)
    everything = distarray.unique_all(x)
    assert type(everything).__name__ == "UniqueAllResult"
    check(everything.values, want_values, msg)
    check(everything.indices, want_indices, msg)  # the first occurrences: a stable sort
    check(everything.inverse_indices, want_inverse, msg)
    check(everything.counts, want_counts, msg)


def test_unique_nans_are_distinct(client, rng):
    values = np.array([[np.nan, 1.0, -0.0], [0.0, np.nan, 1.0], [np.inf, np.nan, -np.inf]])
    x = client.from_numpy(values, distarray.split_index_map((3, 3), 1, [0, 1, 2]))
    out = distarray.unique_all(x)
    got = out.values.to_numpy()
    np.testing.assert_array_equal(got, [-np.inf, 0.0, 1.0, np.inf, np.nan, np.nan, np.nan])
    check(out.counts, np.array([1, 2, 2, 1, 1, 1, 1]))
    check(out.indices, np.array([8, 2, 1, 6, 0, 4, 7]))
    # Every NaN is its own value, and values[inverse] rebuilds x (NaNs at NaNs).
    inverse = out.inverse_indices.to_numpy()
    assert sorted(inverse[np.isnan(values)].tolist()) == [4, 5, 6]
    np.testing.assert_array_equal(got[inverse], values)


@pytest.mark.parametrize("shape", [(), (1,), (0,), (2, 0)])
def test_unique_small_and_empty(client, shape):
    values = np.full(shape, 3.5)
    x = client.from_numpy(values)
    want = numpy_unique_all(values)
    out = distarray.unique_all(x)
    for got, expected, name in zip(out, want, out._fields):
        check(got, expected, f"{shape} {name}")
    check(distarray.unique_values(x), want[0])
    check(distarray.unique_counts(x).counts, want[3])
    check(distarray.unique_inverse(x).inverse_indices, want[2])


# ---- repeat with an array of counts --------------------------------------------------------------


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_repeat_counts_on_the_devices(client, rng, layout, axis):
    values = rng.uniform(-1, 1, (5, 4, 3)).astype(np.float32)
    x = put(client, values, layout)
    n = values.size if axis is None else values.shape[axis]
    counts = rng.integers(0, 4, n).astype(np.int16)
    r = client.from_numpy(counts, distarray.split_index_map((n,), 0, [2, 0]))
    check(distarray.repeat(x, r, axis=axis), np.repeat(values, counts, axis=axis),
          f"{layout} axis {axis}")
    # The same counts from the host: listed positions.
    check(distarray.repeat(x, counts, axis=axis), np.repeat(values, counts, axis=axis))
    # One count in an array of one element, and in a 0-d array.
    check(distarray.repeat(x, client.from_numpy(np.array([2])), axis=axis),
          np.repeat(values, 2, axis=axis))
    check(distarray.repeat(x, client.from_numpy(np.array(3, np.uint8)), axis=axis),
          np.repeat(values, 3, axis=axis))


def test_repeat_counts_edges(client, rng):
    values = rng.integers(0, 9, (3, 2))
    x = client.from_numpy(values)
    zeros = np.zeros(3, np.int64)
    check(distarray.repeat(x, client.from_numpy(zeros), axis=0), np.repeat(values, zeros, axis=0))
    check(distarray.repeat(x, zeros, axis=0), np.repeat(values, zeros, axis=0))
    empty = client.from_numpy(np.zeros((0, 2)))
    check(distarray.repeat(empty, client.from_numpy(np.zeros(0, np.int64)), axis=0),
          np.zeros((0, 2)))
    with pytest.raises(ValueError, match="negative"):
        distarray.repeat(x, client.from_numpy(np.array([1, -1, 2])), axis=0)
    with pytest.raises(ValueError, match="negative"):
        distarray.repeat(x, np.array([1, -1, 2]), axis=0)
    with pytest.raises(ValueError, match="axis of length 3"):
        distarray.repeat(x, client.from_numpy(np.array([1, 2])), axis=0)
    with pytest.raises(TypeError, match="integer"):
        distarray.repeat(x, client.from_numpy(np.array([1.0, 2.0, 3.0])), axis=0)


# ---- gathers in batches --------------------------------------------------------------------------


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_scattered_positions_gather_in_batches(client, rng, layout, monkeypatch):
    """Scattered positions are one piece each in a take; gather joins batches of them, each
    gathered into one piece per device (the batch made small here, so a few dozen positions
    span several). The results stay few chunks."""
    from distarray import _api_searching

    monkeypatch.setattr(_api_searching, "GATHER_BATCH", 7)
    values = rng.integers(0, 6, (9, 8))
    x = put(client, values, layout)
    mask = rng.random((9, 8)) < 0.5
    got = x[client.from_numpy(mask)]
    check(got, values[mask])
    assert sum(len(b) for b in got.index_map.values()) <= 4 * (-(-int(mask.sum()) // 7))
    want = numpy_unique_all(values)
    out = distarray.unique_all(x)
    for got_part, expected, name in zip(out, want, out._fields):
        check(got_part, expected, name)
    counts = rng.integers(0, 3, 9)
    check(distarray.repeat(x, client.from_numpy(counts), axis=0),
          np.repeat(values, counts, axis=0))
    check(distarray.repeat(x, counts, axis=0), np.repeat(values, counts, axis=0))
    new = rng.integers(100, 200, int(mask.sum()))
    x[client.from_numpy(mask)] = client.from_numpy(new)
    values[mask] = new
    check(x, values)
