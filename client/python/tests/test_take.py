"""take, take_along_axis, and x[idx] / x[idx] = v with the index a DistributedArray held in the
daemon, against NumPy on fresh random data over several layouts (the index on other devices than
the source); bad indices fail clearly and leave the arrays intact."""

from __future__ import annotations

import numpy as np
import pytest

import distarray
from _layouts import LAYOUTS, assert_intact, bystander, check, put
from conftest import random_array

SHAPE = (7, 6)
INDEX_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def held(client, values: np.ndarray, devices=(3, 2)):
    """An index array split over ``devices`` (other than most layouts' first ones)."""
    return client.from_numpy(values, distarray.split_index_map(values.shape, 0, list(devices)))


def random_positions(rng, count: int, n: int, dtype) -> np.ndarray:
    low = -n if np.issubdtype(dtype, np.signedinteger) else 0
    return rng.integers(low, n, size=count).astype(dtype)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_take_matches_numpy(client, rng, layout):
    keep, keep_np = bystander(client, rng)
    x_np = random_array(rng, SHAPE, np.float64)
    x = put(client, x_np, layout)
    for axis in (0, 1, -1):
        n = SHAPE[axis]
        for dtype in (np.int64, np.int32, np.uint16):
            i_np = random_positions(rng, 11, n, dtype)  # repeats and negatives
            i = held(client, i_np)
            check(distarray.take(x, i, axis=axis), np.take(x_np, i_np, axis=axis), f"{axis}")
            np.testing.assert_array_equal(i.to_numpy(), i_np)
        # Listed (NumPy) indices take the same path with listed positions.
        check(distarray.take(x, [0, -1, 2], axis=axis), np.take(x_np, [0, -1, 2], axis=axis))
    np.testing.assert_array_equal(x.to_numpy(), x_np)
    assert_intact(keep, keep_np)


def test_take_of_1d_needs_no_axis(client, rng):
    x_np = random_array(rng, (40,), np.float32)
    x = client.from_numpy(x_np, distarray.split_index_map((40,), 0, [0, 1, 2]))
    for dtype in INDEX_DTYPES:
        i_np = random_positions(rng, 25, 40, dtype)
        check(distarray.take(x, held(client, i_np)), np.take(x_np, i_np), str(dtype))
    empty = held(client, np.zeros(0, np.int64), devices=(1,))
    check(distarray.take(x, empty), x_np[np.zeros(0, np.int64)])
    with pytest.raises(ValueError, match="give axis"):
        distarray.take(client.from_numpy(np.ones((2, 2))), held(client, np.array([0])))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_getitem_and_setitem_with_a_held_index(client, rng, layout):
    x_np = random_array(rng, SHAPE, np.float64)
    x = put(client, x_np, layout)
    rows_np = random_positions(rng, 9, SHAPE[0], np.int64)
    cols_np = random_positions(rng, 4, SHAPE[1], np.int32)
    rows, cols = held(client, rows_np), held(client, cols_np, devices=(1,))
    for key, key_np in [(rows, rows_np), ((slice(None), cols), (slice(None), cols_np)),
                        ((rows, 2), (rows_np, 2)), ((slice(None, None, -1), cols),
                                                    (slice(None, None, -1), cols_np)),
                        ((None, Ellipsis, cols), (None, Ellipsis, cols_np))]:
        check(x[key], x_np[key], repr(key_np))
    y_np = x_np.copy()
    y = put(client, y_np, layout)
    y[rows] = 2.5
    y_np[rows_np] = 2.5
    value_np = rng.uniform(size=(SHAPE[0], cols_np.size))
    y[:, cols] = client.from_numpy(value_np)
    # Repeated positions keep the last value written, as NumPy's.
    y_np[:, cols_np] = value_np
    np.testing.assert_array_equal(y.to_numpy(), y_np)
    np.testing.assert_array_equal(x.to_numpy(), x_np)
    np.testing.assert_array_equal(rows.to_numpy(), rows_np)


def test_many_random_positions(client, rng):
    """More positions than a request may list, random: the result is compact and usable."""
    n, count = 5000, 70000
    x_np = random_array(rng, (n,), np.float32)
    x = client.from_numpy(x_np, distarray.split_index_map((n,), 0, [0, 1, 2, 3]))
    i_np = rng.integers(-n, n, size=count)
    got = distarray.take(x, held(client, i_np))
    check(got, x_np[i_np])
    assert len(got.index_map) <= 4
    np.testing.assert_allclose(float(got.sum().to_numpy()), x_np[i_np].sum(dtype=np.float64),
                               rtol=1e-4)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_take_along_axis_matches_numpy(client, rng, axis):
    shape = (4, 5, 3)
    x_np = random_array(rng, shape, np.float64)
    x = client.from_numpy(x_np, distarray.split_index_map(shape, 1, [0, 1]))
    n = shape[axis]
    for ishape in [shape[:axis % 3] + (6,) + shape[axis % 3 + 1:],
                   tuple(1 if d != axis % 3 else 2 for d in range(3))]:
        i_np = rng.integers(-n, n, size=ishape)
        i = client.from_numpy(i_np, distarray.replicated_index_map(3, [2, 3]))
        check(distarray.take_along_axis(x, i, axis=axis),
              np.take_along_axis(x_np, i_np, axis=axis), f"{ishape}")
    # argsort's indices sort along the axis: take_along_axis(x, argsort(x)) is sort(x).
    order = distarray.argsort(x, axis=axis)
    check(distarray.take_along_axis(x, order, axis=axis), np.sort(x_np, axis=axis))
    np.testing.assert_array_equal(x.to_numpy(), x_np)


def test_bad_indices_fail_clearly(client, rng):
    keep, keep_np = bystander(client, rng)
    x_np = random_array(rng, SHAPE, np.float64)
    x = put(client, x_np, "rows2")
    past = held(client, np.array([0, 7], np.int64))
    with pytest.raises(IndexError, match=r"index 7 is out of bounds for axis 0 with size 7"):
        distarray.take(x, past, axis=0)
    with pytest.raises(IndexError, match="out of bounds"):
        x[past] = 1.0
    with pytest.raises(TypeError, match="integer dtype"):
        distarray.take(x, client.from_numpy(np.array([0.0, 1.0])), axis=0)
    with pytest.raises(ValueError, match="1-D"):
        distarray.take(x, client.from_numpy(np.zeros((2, 2), np.int64)), axis=0)
    with pytest.raises(IndexError, match="1-D integer array"):
        x[client.from_numpy(np.zeros((2, 2), np.int64))]
    with pytest.raises(IndexError, match="out of bounds"):
        distarray.take_along_axis(x, client.from_numpy(np.full((7, 1), 7)), axis=0)
    with pytest.raises(ValueError, match="rank"):
        distarray.take_along_axis(x, client.from_numpy(np.zeros(3, np.int64)), axis=0)
    # Not inside programs: the daemon's plan would depend on the index's values.
    i = held(client, np.array([1, 0], np.int64))
    with pytest.raises(distarray.DistarrayError, match="items\\[0\\].array"):
        client.run_graph(distarray.trace(lambda a: a[i]), a=x)
    np.testing.assert_array_equal(x.to_numpy(), x_np)
    assert_intact(keep, keep_np)
