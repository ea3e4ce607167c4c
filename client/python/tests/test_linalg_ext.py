"""distarray.linalg, the array API's linalg extension's compositions, against NumPy on fresh
random data over several layouts: diagonal and trace (every offset, stacks), the vector and
matrix norms of every order (the singular-value ones through svdvals), cross along any axis with
broadcasting, matrix_power (negative powers through inv), and the refusals (shapes). The
factorizations themselves: test_linalg_factorizations.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

import distarray
from _layouts import LAYOUTS, check, put
from conftest import random_array


def close(result, expected: np.ndarray, msg: str = "", rtol: float = 1e-12) -> None:
    got = result.to_numpy()
    assert got.shape == expected.shape, msg
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-12, err_msg=msg)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_diagonal_and_trace(client, rng, layout):
    for shape in [(5, 7), (7, 5), (3, 4, 6)]:
        x_np = random_array(rng, shape, np.float64)
        x = put(client, x_np, layout)
        for offset in range(-shape[-2] - 1, shape[-1] + 2):
            want = np.diagonal(x_np, offset, -2, -1)
            check(distarray.linalg.diagonal(x, offset=offset), want, f"{shape} offset {offset}")
            close(distarray.linalg.trace(x, offset=offset), np.trace(x_np, offset, -2, -1),
                  f"trace {shape} offset {offset}")
    ints = rng.integers(-100, 100, (4, 4)).astype(np.int32)
    close(distarray.linalg.trace(put(client, ints, layout)), np.asarray(np.trace(ints)), "int")


@pytest.mark.parametrize("layout", ["rows2", "cols3", "replicated"])
def test_vector_norm(client, rng, layout):
    x_np = random_array(rng, (6, 5), np.float64)
    x_np[0, 0] = 0.0
    x = put(client, x_np, layout)
    for ord_ in (2, 1, math.inf, -math.inf, 0, 3, 0.5):
        for axis in (None, 0, 1, (0, 1)):
            for keepdims in (False, True):
                want = np.linalg.vector_norm(x_np, axis=axis, ord=ord_, keepdims=keepdims)
                close(distarray.linalg.vector_norm(x, axis=axis, ord=ord_, keepdims=keepdims),
                      np.asarray(want), f"ord={ord_} axis={axis} keepdims={keepdims}")
    z_np = x_np + 1j * random_array(rng, (6, 5), np.float64)
    close(distarray.linalg.vector_norm(client.from_numpy(z_np)),
          np.asarray(np.linalg.vector_norm(z_np)), "complex")


@pytest.mark.parametrize("layout", ["rows2", "cols3", "uneven"])
def test_matrix_norm(client, rng, layout):
    x_np = random_array(rng, (2, 5, 4), np.float64)
    x = put(client, x_np, layout)
    for ord_ in ("fro", 1, -1, math.inf, -math.inf):
        for keepdims in (False, True):
            want = np.linalg.matrix_norm(x_np, ord=ord_, keepdims=keepdims)
            close(distarray.linalg.matrix_norm(x, ord=ord_, keepdims=keepdims), want,
                  f"ord={ord_} keepdims={keepdims}")
    # The singular-value norms, through svdvals.
    for ord_ in ("nuc", 2, -2):
        for keepdims in (False, True):
            want = np.linalg.matrix_norm(x_np, ord=ord_, keepdims=keepdims)
            close(distarray.linalg.matrix_norm(x, ord=ord_, keepdims=keepdims), want,
                  f"ord={ord_} keepdims={keepdims}", rtol=1e-10)
    with pytest.raises(ValueError, match="not a matrix norm"):
        distarray.linalg.matrix_norm(x, ord=3)


def test_cross(client, rng):
    a_np = random_array(rng, (4, 3), np.float64)
    b_np = random_array(rng, (4, 3), np.float64)
    a, b = put(client, a_np, "rows2"), put(client, b_np, "cols3")
    close(distarray.linalg.cross(a, b), np.cross(a_np, b_np), "axis -1")
    c_np = random_array(rng, (3, 5), np.float64)
    d_np = random_array(rng, (3, 1), np.float64)
    close(distarray.linalg.cross(client.from_numpy(c_np), client.from_numpy(d_np), axis=0),
          np.cross(c_np, d_np, axis=0), "axis 0, broadcast")
    pairs = client.from_numpy(random_array(rng, (4, 2), np.float64))
    with pytest.raises(ValueError, match="3 elements"):
        distarray.linalg.cross(pairs, pairs)
    with pytest.raises(ValueError):  # shapes that do not broadcast
        distarray.linalg.cross(pairs, a)


def test_matrix_power(client, rng):
    x_np = rng.uniform(-0.5, 0.5, (2, 4, 4))
    x = put(client, x_np, "rows2")
    for n in (0, 1, 2, 5):
        close(distarray.linalg.matrix_power(x, n), np.linalg.matrix_power(x_np, n), f"n={n}",
              rtol=1e-10)
    # Negative powers, through inv.
    for n in (-1, -3):
        close(distarray.linalg.matrix_power(x, n), np.linalg.matrix_power(x_np, n), f"n={n}",
              rtol=1e-8)
    with pytest.raises(ValueError, match="square"):
        distarray.linalg.matrix_power(client.from_numpy(random_array(rng, (2, 3), np.float64)), 2)


def test_the_namespace_has_the_extension(client):
    ns = client.from_numpy(np.ones(3)).__array_namespace__()
    for name in ("cross", "diagonal", "matmul", "matrix_norm", "matrix_power", "matrix_transpose",
                 "outer", "tensordot", "trace", "vecdot", "vector_norm"):
        assert callable(getattr(ns.linalg, name)), name
