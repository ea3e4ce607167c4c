"""a[key] and a[key] = value (NumPy's basic indexing on the devices) against NumPy, on fresh
random data over several layouts; bad keys fail clearly and leave the daemon serving."""

from __future__ import annotations

import numpy as np
import pytest

import distarray
from _layouts import LAYOUTS, assert_intact, bystander, check, put
from conftest import random_array
from distarray._errors import translate_errors
from distarray._indexing import index_key
from distarray.v1 import distarray_pb2 as pb

SHAPE = (7, 6)  # 7 rows: uneven over two devices

# Keys of a 2-D array: ints (Python, NumPy, 0-d), slices of every step sign, empty and
# out-of-range (clamped) slices, None and ..., and tuples of them.
KEYS_2D = [
    0, -1, 3, np.int64(2), np.int8(-3), np.array(4), (),
    slice(None), slice(1, 5), slice(None, None, 2), slice(None, None, -1), slice(5, 1, -2),
    slice(-2, None, -3), slice(-100, 100), slice(-100, 2), slice(5, 100), slice(100, 0, -2),
    slice(None, None, 10), slice(None, None, -10),
    (slice(None), 2), (1, -2), (2, slice(None, None, -1)), (slice(None), slice(4, None, -1)),
    (Ellipsis, 1), (Ellipsis,), (1, Ellipsis), (None,), (None, slice(None), None),
    (Ellipsis, None), (slice(None, None, 2), slice(None, None, -3)), (slice(6, None, -1), 0),
    (slice(1, 6, 2), None, slice(-1, -7, -2)), (None, 3, None, Ellipsis, None), (-7, -6),
]

# Keys selecting nothing: zero-size results, as NumPy's.
EMPTY_KEYS = [slice(100, 200), slice(3, 3), slice(4, 1), slice(-100, -50), (slice(0, 0), 1),
              (slice(None), slice(2, 2)), (Ellipsis, slice(0, 6, -1))]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_get_item_matches_numpy(client, rng, layout):
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, layout)
    for key in KEYS_2D:
        check(a[key], a_np[key], f"{layout} a[{key!r}]")
    np.testing.assert_array_equal(a.to_numpy(), a_np)  # the source is unchanged


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_empty_selections(client, rng, layout):
    """NumPy gives a zero-size array of its shape, with no chunks on any device; assigning to an
    empty selection changes nothing."""
    keep, keep_np = bystander(client, rng)
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, layout)
    for key in EMPTY_KEYS:
        assert a_np[key].size == 0
        got = a[key]
        check(got, a_np[key], f"{layout} a[{key!r}]")
        assert got.devices == ()
        a[key] = 1.0
    np.testing.assert_array_equal(a.to_numpy(), a_np)
    assert_intact(keep, keep_np)


@pytest.mark.parametrize("dtype", [np.bool_, np.int32, np.uint8, np.float32, np.complex64],
                         ids=lambda t: np.dtype(t).name)
def test_get_item_dtypes(client, rng, dtype):
    a_np = random_array(rng, SHAPE, dtype)
    a = put(client, a_np, "rows2")
    for key in [(slice(1, None, 2), slice(None, None, -1)), 3, (None, -1, Ellipsis)]:
        check(a[key], a_np[key], f"{np.dtype(dtype)} a[{key!r}]")


@pytest.mark.parametrize("split_axis", [0, 1, 2])
def test_get_item_3d(client, rng, split_axis):
    a_np = random_array(rng, (5, 4, 6), np.int64)
    a = client.from_numpy(a_np, distarray.split_index_map(a_np.shape, split_axis, [0, 1, 2]))
    keys = [
        (Ellipsis, 2), (1, Ellipsis, slice(None, None, -2)), (slice(None), None, 3),
        (slice(4, 0, -1), slice(None), slice(1, 5)), (-1, -1, -1), (Ellipsis, None, slice(2, 3)),
        (slice(None, None, -1), slice(None, None, -1), slice(None, None, -1)), (0, slice(2, 9)),
    ]
    for key in keys:
        check(a[key], a_np[key], f"split {split_axis}: a[{key!r}]")


def test_get_item_keeps_devices_and_mode(client, rng):
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, "rows2")
    top = a[:3]
    assert top.devices == (0,)  # only device 0 held rows 0..2
    summed = a.change_mode("sum")
    part = summed[1:, ::2]
    assert part.mode == "sum"
    np.testing.assert_allclose(part.to_numpy(), a_np[1:, ::2])


def test_index_objects_with_index(client, rng):
    class Position:
        def __index__(self):
            return 2

    a_np = random_array(rng, SHAPE, np.int16)
    a = put(client, a_np, "cols3")
    check(a[Position()], a_np[2])
    check(a[Position(), Position():], a_np[2, 2:])
    check(a[np.uint64(1):np.int32(-1)], a_np[1:-1])


def test_len_and_iteration(client, rng):
    a_np = random_array(rng, SHAPE, np.float32)
    a = put(client, a_np, "rows2")
    assert len(a) == SHAPE[0]
    rows = list(a)
    assert len(rows) == SHAPE[0]
    for row, expected in zip(rows, a_np):
        check(row, expected)
    scalar = a[0, 0]
    with pytest.raises(TypeError, match="0-d"):
        len(scalar)
    with pytest.raises(TypeError, match="0-d"):
        list(scalar)


def _set_cases(rng, shape, dtype):
    """(key, value as NumPy) pairs: scalars and arrays shaped like the selection or broadcast to
    it."""
    return [
        (0, random_array(rng, (), dtype).item()),
        ((slice(None), -1), random_array(rng, (), dtype).item()),
        ((slice(1, 6, 2), slice(None, None, -1)), random_array(rng, (3, shape[1]), dtype)),
        ((slice(None, None, -2), 1), random_array(rng, (4,), dtype)),
        ((slice(2, 5), slice(1, 4)), random_array(rng, (3,), dtype)),  # broadcast a row
        ((Ellipsis, slice(None, None, -3)), random_array(rng, (shape[0], 1), dtype)),
        ((3, 4), random_array(rng, (), dtype)),
        (slice(100, 200), random_array(rng, (), dtype).item()),  # an empty selection
        ((None, slice(-100, 2)), random_array(rng, (1, 2, shape[1]), dtype)),
    ]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_set_item_matches_numpy(client, rng, layout):
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, layout)
    handle, index_map = a.handle, a.index_map
    expected = a_np.copy()
    for key, value in _set_cases(rng, SHAPE, np.float64):
        if isinstance(value, np.ndarray):
            a[key] = client.from_numpy(value, LAYOUTS[layout](value.shape))
        else:
            a[key] = value
        expected[key] = value
        assert a.handle == handle
        np.testing.assert_array_equal(a.to_numpy(), expected, err_msg=f"a[{key!r}] = ...")
    assert a.index_map == index_map
    assert a.mode == "replica"


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.complex128],
                         ids=lambda t: np.dtype(t).name)
def test_set_item_dtypes(client, rng, dtype):
    a_np = random_array(rng, SHAPE, dtype)
    a = put(client, a_np, "cols3")
    expected = a_np.copy()
    for key, value in _set_cases(rng, SHAPE, dtype):
        if isinstance(value, np.ndarray):
            a[key] = client.from_numpy(value)
        else:
            a[key] = value
        expected[key] = value
        np.testing.assert_array_equal(a.to_numpy(), expected, err_msg=f"a[{key!r}] = ...")


def test_set_item_converts_the_value(client, rng):
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, "rows2")
    v_np = random_array(rng, (SHAPE[1],), np.float32)
    a[2] = client.from_numpy(v_np)
    expected = a_np.copy()
    expected[2] = v_np
    check(a, expected)
    assert a.dtype == np.float64


def test_set_item_refreshes_the_description(client, rng):
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, "rows2").change_mode("sum")
    assert a.mode == "sum"
    a[0, 0] = 1.5
    assert a.mode == "replica"  # set_item's result is REPLICA, and the object says so
    expected = a_np.copy()
    expected[0, 0] = 1.5
    np.testing.assert_allclose(a.to_numpy(), expected)


def test_set_item_refuses_numpy_values(client, rng):
    a = put(client, random_array(rng, SHAPE, np.float64), "rows2")
    before = a.to_numpy()
    for value in (np.ones(SHAPE[1]), [1.0, 2.0], (1.0,)):
        with pytest.raises(TypeError, match="upload"):
            a[0] = value
    np.testing.assert_array_equal(a.to_numpy(), before)


def test_out_of_range_index_names_the_axis(client, rng):
    keep, keep_np = bystander(client, rng)
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, "rows2")
    for key, axis in [(7, 0), (-8, 0), ((0, 6), 1), ((Ellipsis, -7), 1), ((None, 1, 9), 1)]:
        with pytest.raises(IndexError, match=f"axis {axis}"):
            a[key]
        with pytest.raises(IndexError, match=f"axis {axis}"):
            a[key] = 1.0
    np.testing.assert_array_equal(a.to_numpy(), a_np)
    assert_intact(keep, keep_np)


def test_daemon_answers_out_of_range_itself(client, rng):
    """A key the SDK did not check (a raw request) is the daemon's OUT_OF_RANGE: IndexError."""
    keep, keep_np = bystander(client, rng)
    a = put(client, random_array(rng, SHAPE, np.float64), "rows2")
    spec = pb.ManipulationSpec()
    spec.get_item.source.handle = a.handle
    spec.get_item.key.CopyFrom(index_key((0, 6)))
    call = translate_errors(client._rpc.call)
    with pytest.raises(distarray.OutOfRangeError) as raised:
        call("Manipulate", pb.ManipulateRequest(spec=spec))
    assert isinstance(raised.value, IndexError)
    assert_intact(keep, keep_np)


def test_bad_keys_fail_clearly(client, rng):
    keep, keep_np = bystander(client, rng)
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, "cols3")
    mask = a > 0
    cases = [
        (1.5, IndexError, "valid indices"),
        ("x", IndexError, "valid indices"),
        ((0, 1.0), IndexError, "valid indices"),
        ((Ellipsis, Ellipsis), IndexError, "single ellipsis"),
        ((0, 0, 0), IndexError, "too many indices"),
        ((Ellipsis, 0, 0, 0), IndexError, "too many indices"),
        (slice(None, None, 0), ValueError, "step cannot be zero"),
        (slice(0.5, 2), TypeError, "slice start"),
        (slice(0, "2"), TypeError, "slice stop"),
        (True, IndexError, "boolean-mask"),
        (np.ones(SHAPE, bool), IndexError, "boolean-mask"),  # a 2-D mask
        ([True, False], IndexError, "did not match"),  # a 1-D mask of the wrong length
        (np.ones((2, 2), np.int64), IndexError, "integer-array"),  # a 2-D index array
        # Two integer arrays with a slice (NumPy's mixed advanced indexing): not served; with an
        # integer or an array on every axis they are (test_integer_arrays.py).
        (([0, 1], slice(None), [0, 1]), IndexError, "integer-array"),
        (a.astype(np.int64), IndexError, "1-D integer array"),  # a 2-D index on the devices
        ([0, 9], IndexError, "out of bounds"),
        ((0,) * 65, IndexError, "at most 64"),
    ]
    for key, error, message in cases:
        with pytest.raises(error, match=message):
            a[key]
        with pytest.raises(error, match=message):
            a[key] = 0.0
    check(a[mask], a_np[a_np > 0])  # a mask held on the devices is served (test_data_dependent)
    assert "not served yet" in str(pytest.raises(IndexError, a.__getitem__, np.ones(SHAPE, bool)).value)
    np.testing.assert_array_equal(a.to_numpy(), a_np)
    assert_intact(keep, keep_np)
    check(a[1:3, ::-1], a_np[1:3, ::-1])


def test_set_item_value_errors_leave_the_target(client, rng):
    keep, keep_np = bystander(client, rng)
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, "rows2")
    with pytest.raises(ValueError):  # (4,) does not broadcast to the (7,) selection
        a[:, 0] = client.from_numpy(rng.uniform(1, 2, 4))
    with distarray.connect(client.address) as other:
        foreign = other.from_numpy(rng.uniform(1, 2, SHAPE[1]))
        with pytest.raises(ValueError, match="different clients"):
            a[0] = foreign
    np.testing.assert_array_equal(a.to_numpy(), a_np)
    assert_intact(keep, keep_np)


def test_named_result(client, rng):
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, "rows2")
    part = distarray.get_item(a, (slice(2, None), -1), name="indexing-named")
    try:
        check(client.attach("indexing-named"), a_np[2:, -1])
    finally:
        client.delete(part)


def test_get_item_in_a_program(client, rng):
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, "rows2")

    def body(a):
        return a[1:, ::-1][None, 2] * 2

    run = client.run_graph(distarray.trace(body), a=a)
    np.testing.assert_array_equal(run.outputs["out"].to_numpy(), a_np[1:, ::-1][None, 2] * 2)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_integer_arrays_and_masks_match_numpy(client, rng, layout):
    """One 1-D integer array (repeats, negative positions, runs up and down) or 1-D mask per key,
    with basic items around it, read and written, against NumPy on every layout."""
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, layout)
    positions = [3, -1, 0, 0, 2, 4, 6, 5, 1]
    row_mask = rng.uniform(size=SHAPE[0]) > 0.4
    row_mask[0] = True
    for key in [positions, np.array(positions), (slice(None, None, -1), [5, 0, 2]),
                (Ellipsis, [1, 1]), row_mask, (slice(1, None), rng.uniform(size=SHAPE[1]) > -1),
                (2, [0, 3])]:
        check(a[key], a_np[key])
    b_np = a_np.copy()
    b = put(client, b_np, layout)
    b[[6, 0, 3]] = 7.5
    b_np[[6, 0, 3]] = 7.5
    b[:, [4, 1]] = client.from_numpy(np.array([-1.0, -2.0]))
    b_np[:, [4, 1]] = np.array([-1.0, -2.0])
    b[row_mask, 0] = 3.25
    b_np[row_mask, 0] = 3.25
    b[[1, 1]] = client.from_numpy(np.stack([np.full(SHAPE[1], 8.0), np.full(SHAPE[1], 9.0)]))
    b_np[[1]] = 9.0  # repeated positions keep the last value, as NumPy's
    np.testing.assert_array_equal(b.to_numpy(), b_np)
