"""Shape ops (transpose, reshape, flatten, expand_dims, squeeze, flip, concat, stack) against
NumPy on fresh random data over several layouts; bad arguments fail clearly."""

from __future__ import annotations

import numpy as np
import pytest

import distarray
from _layouts import LAYOUTS, assert_intact, bystander, check, put
from conftest import random_array

SHAPE = (7, 6)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_transposes(client, rng, layout):
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, layout)
    check(a.T, a_np.T, "T")
    check(a.mT, a_np.mT, "mT")
    check(a.transpose(), a_np.transpose(), "transpose()")
    check(a.transpose(1, 0), a_np.transpose(1, 0), "transpose(1, 0)")
    check(distarray.permute_dims(a, (1, 0)), np.permute_dims(a_np, (1, 0)), "permute_dims")
    check(distarray.matrix_transpose(a), a_np.mT, "matrix_transpose")
    check(a.T.T, a_np, "T.T")


@pytest.mark.parametrize("split_axis", [0, 1, 2])
def test_permute_dims_3d(client, rng, split_axis):
    a_np = random_array(rng, (3, 5, 4), np.int32)
    a = client.from_numpy(a_np, distarray.split_index_map(a_np.shape, split_axis, [0, 1]))
    for axes in [(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 2, 1), (2, 0, 1), (-1, 0, -2)]:
        check(distarray.permute_dims(a, axes), np.transpose(a_np, axes), f"axes {axes}")
    check(a.mT, a_np.mT, "mT")
    check(a.swapaxes(0, 2), a_np.swapaxes(0, 2), "swapaxes")
    check(distarray.moveaxis(a, 0, -1), np.moveaxis(a_np, 0, -1), "moveaxis")
    with pytest.raises(ValueError, match="2-D"):
        a.T
    with pytest.raises(ValueError, match="permutation"):
        distarray.permute_dims(a, (0, 1))
    with pytest.raises(ValueError, match="permutation"):
        distarray.permute_dims(a, (0, 1, 1))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_reshape(client, rng, layout):
    a_np = random_array(rng, (6, 4), np.float32)
    a = put(client, a_np, layout)
    for shape in [(24,), (4, 6), (2, 3, 4), (3, -1), (-1, 2, 2), (1, 24, 1), (2, 2, 2, 3)]:
        check(a.reshape(shape), a_np.reshape(shape), f"reshape {shape}")
        check(distarray.reshape(a, shape), np.reshape(a_np, shape), f"distarray.reshape {shape}")
    check(a.reshape(8, 3), a_np.reshape(8, 3), "reshape(8, 3)")
    check(a.flatten(), a_np.flatten(), "flatten")
    check(a.ravel(), a_np.ravel(), "ravel")
    check(distarray.ravel(a[::-1]), np.ravel(a_np[::-1]), "ravel of a flipped copy")
    check(a.reshape(24)[5:17].reshape(3, 4), a_np.reshape(24)[5:17].reshape(3, 4), "chained")


def test_reshape_errors(client, rng):
    keep, keep_np = bystander(client, rng)
    a = put(client, random_array(rng, (6, 4), np.float64), "rows2")
    with pytest.raises(ValueError):
        a.reshape(5, 5)  # 25 elements for 24: the daemon's INVALID_ARGUMENT
    with pytest.raises(ValueError, match="one unknown"):
        a.reshape(-1, -1)
    with pytest.raises(ValueError, match="negative"):
        a.reshape(-2, -12)
    with pytest.raises(ValueError, match="order"):
        a.reshape(24, order="F")
    assert_intact(keep, keep_np)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_expand_dims_and_squeeze(client, rng, layout):
    a_np = random_array(rng, SHAPE, np.int64)
    a = put(client, a_np, layout)
    for axis in [0, 1, 2, -1, -3, (0, 2), (0, -1), (1, 3)]:
        check(distarray.expand_dims(a, axis), np.expand_dims(a_np, axis), f"expand_dims {axis}")
    b_np = random_array(rng, (1, 7, 1, 6, 1), np.int64)
    b = put(client, b_np, layout)
    check(b.squeeze(), b_np.squeeze(), "squeeze()")
    for axis in [0, 2, -1, (0, 4), (0, 2, -1)]:
        check(b.squeeze(axis), b_np.squeeze(axis), f"squeeze {axis}")
        check(distarray.squeeze(b, axis), np.squeeze(b_np, axis), f"distarray.squeeze {axis}")
    with pytest.raises(ValueError, match="length is 7"):
        b.squeeze(1)
    with pytest.raises(np.exceptions.AxisError):
        distarray.expand_dims(a, 3)
    with pytest.raises(np.exceptions.AxisError):
        b.squeeze(5)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_flip(client, rng, layout):
    a_np = random_array(rng, SHAPE, np.float64)
    a = put(client, a_np, layout)
    for axis in [None, 0, 1, -1, (0, 1)]:
        check(distarray.flip(a, axis), np.flip(a_np, axis), f"flip {axis}")
    check(distarray.flip(a[1:6:2], 0), np.flip(a_np[1:6:2], 0), "flip of a strided copy")


@pytest.mark.parametrize("axis", [0, 1, -1, -2, None])
def test_concat_over_layouts(client, rng, axis):
    parts_np = [random_array(rng, SHAPE, np.float64) for _ in LAYOUTS]
    parts = [put(client, p, layout) for p, layout in zip(parts_np, sorted(LAYOUTS))]
    check(distarray.concat(parts, axis), np.concatenate(parts_np, axis), f"concat axis {axis}")
    check(distarray.concatenate(parts[:2], axis=axis), np.concatenate(parts_np[:2], axis=axis))


def test_concat_uneven_and_promoted(client, rng):
    a_np = random_array(rng, (2, 6), np.int32)
    b_np = random_array(rng, (5, 6), np.float32)
    c_np = random_array(rng, (1, 6), np.uint8)
    a, b, c = put(client, a_np, "rows2"), put(client, b_np, "cols3"), put(client, c_np, "uneven")
    check(distarray.concat([a, b, c]), np.concatenate([a_np, b_np, c_np]), "promoted")
    check(distarray.concat([a]), a_np, "one source")
    check(distarray.concat([a, a[1:], c]), np.concatenate([a_np, a_np[1:], c_np]), "overlap")
    check(distarray.concat([a.T, c.T], axis=1), np.concatenate([a_np.T, c_np.T], axis=1))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_stack(client, rng, axis):
    parts_np = [random_array(rng, SHAPE, np.complex64) for _ in LAYOUTS]
    parts = [put(client, p, layout) for p, layout in zip(parts_np, sorted(LAYOUTS))]
    check(distarray.stack(parts, axis), np.stack(parts_np, axis), f"stack axis {axis}")
    row_np = [random_array(rng, (4,), np.int16) for _ in range(3)]
    rows = [client.from_numpy(r, distarray.split_index_map((4,), 0, [0, 1])) for r in row_np]
    if -2 <= axis <= 1:
        check(distarray.stack(rows, axis), np.stack(row_np, axis), f"stack of rows axis {axis}")


def test_join_errors(client, rng):
    keep, keep_np = bystander(client, rng)
    a = put(client, random_array(rng, SHAPE, np.float64), "rows2")
    b = put(client, random_array(rng, (3, 5), np.float64), "rows2")
    with pytest.raises(ValueError):
        distarray.concat([a, b], axis=0)  # 6 and 5 columns: the daemon's INVALID_ARGUMENT
    with pytest.raises(ValueError):
        distarray.stack([a, a[1:]])
    with pytest.raises(ValueError, match="at least one"):
        distarray.concat([])
    with pytest.raises(TypeError, match="list or tuple"):
        distarray.concat(a)
    with pytest.raises(TypeError, match="upload"):
        distarray.concat([a, np.ones(SHAPE)])
    with pytest.raises((ValueError, IndexError)):
        distarray.concat([a, a], axis=2)
    assert_intact(keep, keep_np)


def test_shape_ops_in_a_program(client, rng):
    a_np = random_array(rng, (4, 6), np.float64)
    a = put(client, a_np, "rows2")

    def body(a):
        joined = distarray.concat([a, a[::-1]], axis=1)
        return distarray.permute_dims(joined.reshape(4, 3, 4), (2, 0, 1)) + 1

    run = client.run_graph(distarray.trace(body), a=a)
    expected = np.transpose(np.concatenate([a_np, a_np[::-1]], 1).reshape(4, 3, 4), (2, 0, 1)) + 1
    np.testing.assert_array_equal(run.outputs["out"].to_numpy(), expected)
