"""Zero-size arrays (an axis of length 0) through the SDK against NumPy: creation in any layout,
elementwise ops and their broadcasting, reductions (the identity of an empty reduction, NaN for
mean, ValueError where NumPy raises one), matmul with an empty axis, indexing and shape ops."""

from __future__ import annotations

import numpy as np
import pytest

import distarray
from _layouts import LAYOUTS, check

SHAPES = [(0,), (3, 0), (0, 3), (2, 0, 4)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_creation_in_every_layout(client, shape, layout):
    for dtype in [np.float64, np.int32, np.bool_, np.complex64]:
        values = np.zeros(shape, dtype)
        a = client.from_numpy(values, LAYOUTS[layout](shape))
        check(a, values, f"{shape} {layout} {dtype.__name__}")
        assert a.size == 0 and a.shape == shape
        assert a.devices == () and a.bytes_per_device == {}


def test_module_level_creation(client):
    check(distarray.zeros((0, 3)), np.zeros((0, 3)))
    check(distarray.ones((3, 0), dtype=distarray.int8), np.ones((3, 0), np.int8))
    check(distarray.empty(0), np.empty(0))
    check(distarray.full((2, 0), 7), np.full((2, 0), 7))
    check(distarray.asarray([]), np.asarray([]))
    check(distarray.asarray(np.empty((0, 3), np.int32)), np.empty((0, 3), np.int32))
    check(distarray.asarray([[], []]), np.asarray([[], []]))
    check(distarray.arange(5, 5), np.arange(5, 5))
    check(distarray.arange(0, dtype=distarray.uint8), np.arange(0, dtype=np.uint8))
    check(distarray.linspace(0, 1, 0), np.linspace(0, 1, 0))
    check(distarray.eye(0), np.eye(0))
    check(distarray.eye(0, 3), np.eye(0, 3))
    a = distarray.zeros((0, 3))
    check(distarray.ones_like(a), np.ones((0, 3)))
    check(distarray.zeros_like(a, dtype=distarray.int64), np.zeros((0, 3), np.int64))


def test_elementwise_broadcasts_as_numpy(client):
    e = distarray.zeros(0)
    e3_np = np.zeros((0, 3))
    e3 = distarray.asarray(e3_np)
    row_np = np.arange(3.0).reshape(1, 3)
    row = distarray.asarray(row_np)
    check(e + distarray.ones(1), np.zeros(0) + np.ones(1))
    check(distarray.ones(1) * e, np.ones(1) * np.zeros(0))
    check(e3 - row, e3_np - row_np)
    check(e3 < row, e3_np < row_np)
    check(-e3, -e3_np)
    check(distarray.sqrt(e3), np.sqrt(e3_np))
    check(e3 * 2, e3_np * 2)
    check(distarray.where(e3 > 0, e3, 1.0), np.where(e3_np > 0, e3_np, 1.0))
    check(e3.astype(distarray.int16), e3_np.astype(np.int16))
    with pytest.raises(ValueError, match="broadcast"):
        e + distarray.ones(2)


@pytest.mark.parametrize("name", ["sum", "prod", "any", "all", "mean"])
def test_reductions_of_nothing(client, name):
    x_np = np.zeros((3, 0))
    x = distarray.asarray(x_np)
    ours, theirs = getattr(distarray, name), getattr(np, name)
    with np.errstate(all="ignore"), _quiet():
        for axis in [None, 0, 1, (0, 1)]:
            for keepdims in [False, True]:
                want = np.asarray(theirs(x_np, axis=axis, keepdims=keepdims))
                got = ours(x, axis=axis, keepdims=keepdims)
                check(got, want, f"{name}(axis={axis}, keepdims={keepdims})")


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin"])
def test_reductions_without_identity(client, name):
    x_np = np.zeros((3, 0))
    x = distarray.asarray(x_np)
    ours, theirs = getattr(distarray, name), getattr(np, name)
    for axis in [None, 1]:
        with pytest.raises(ValueError):
            theirs(x_np, axis=axis)
        with pytest.raises(ValueError, match="no identity"):
            ours(x, axis=axis)
    # Over the axis of length 3 the result is zero-size, as NumPy's.
    check(ours(x, axis=0), theirs(x_np, axis=0))


def test_matmul_with_an_empty_axis(client):
    for a_shape, b_shape in [((2, 0), (0, 3)), ((0,), (0,)), ((0, 4), (4, 3)), ((2, 4), (4, 0)),
                             ((0, 2, 4), (4, 3)), ((5, 0), (0,))]:
        a_np, b_np = np.ones(a_shape), np.ones(b_shape)
        check(distarray.asarray(a_np) @ distarray.asarray(b_np), np.asarray(a_np @ b_np),
              f"{a_shape} @ {b_shape}")


def test_indexing_and_shape_ops(client):
    a_np = np.arange(12.0).reshape(4, 3)
    a = distarray.asarray(a_np)
    check(a[[]], a_np[[]])
    check(a[np.zeros(4, bool)], a_np[np.zeros(4, bool)])
    check(a[2:2, 1:], a_np[2:2, 1:])
    e_np = np.zeros((3, 0))
    e = distarray.asarray(e_np)
    check(e[1], e_np[1])
    check(e[1:, None], e_np[1:, None])
    check(e.T, e_np.T)
    check(distarray.reshape(e, (0, 5)), e_np.reshape(0, 5))
    check(distarray.reshape(e, (-1, 3)), e_np.reshape(-1, 3))
    check(distarray.concat([distarray.zeros((0, 3)), a]), np.concatenate([np.zeros((0, 3)), a_np]))
    check(distarray.stack([distarray.zeros(0)] * 3), np.stack([np.zeros(0)] * 3))
    check(distarray.broadcast_to(distarray.ones(1), (0,)), np.broadcast_to(np.ones(1), (0,)))
    check(distarray.expand_dims(e, axis=0), np.expand_dims(e_np, 0))
    check(distarray.flip(e), np.flip(e_np))
    a[2:2] = 5.0
    check(a, a_np)
    e[...] = 1.0
    check(e, e_np)


class _quiet:
    """NumPy warns about the mean of an empty slice; the comparison is of values."""

    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        return self._catch.__exit__(*exc)
