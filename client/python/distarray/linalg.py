"""The array API's ``linalg`` extension (``distarray.linalg``), the part that needs no
factorization: ``matmul``, ``matrix_transpose``, ``outer``, ``tensordot``, ``vecdot`` (the main
namespace's), and ``cross``, ``diagonal``, ``trace``, ``vector_norm``, ``matrix_norm`` (every
order but the singular-value ones) and ``matrix_power`` (n >= 0), composed from the daemon's
elementwise ops, reductions, matmul and slices. Factorizations and solvers (``cholesky``,
``inv``, ``solve``, ``svd`` ...) are not served; docs/api.md says so.

``diagonal`` is a strided slice of the matrices laid end to end (``reshape`` to (..., n*m), then
``[offset::m+1]``), so it works on every layout; it moves the matrices when their split does not
survive the reshape.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Optional, Union

import numpy as np

from . import _functions as f
from ._api_manipulation import broadcast_to
from ._api_linalg import matmul, outer, tensordot, vecdot
from ._api_statistics import max as _max
from ._api_statistics import min as _min
from ._api_statistics import sum as _sum
from ._indexing import normalize_axis
from ._like import new_like
from ._manipulation import matrix_transpose, reshape, stack
from .v1 import distarray_pb2 as pb


def _matrices(x: Any, what: str) -> None:
    if x.ndim < 2:
        raise ValueError(f"linalg.{what} takes arrays of at least two axes, not {x.ndim}")


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The ``offset``-th diagonal of each matrix (the last two axes), as ``numpy.diagonal``
    with axis1=-2, axis2=-1 (a copy)."""
    _matrices(x, "diagonal")
    offset = operator.index(offset)
    n, m = x.shape[-2], x.shape[-1]
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    start = offset if offset >= 0 else -offset * m
    flat = reshape(x, tuple(x.shape[:-2]) + (n * m,))
    if length == 0:
        return flat[..., 0:0]
    return flat[..., start:start + (length - 1) * (m + 1) + 1:m + 1]


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """The sum of each matrix's ``offset``-th diagonal, in ``dtype`` (default: sum's)."""
    return _sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def _float_abs(x: Any) -> Any:
    """|x| in a floating dtype: complex magnitudes, integers converted to float64 first."""
    kind = np.dtype(x.dtype).kind
    if kind in "biu":
        x = x.astype(np.float64)
    return f.abs(x)


def vector_norm(x: Any, /, *, axis: Union[None, int, tuple] = None, keepdims: bool = False,
                ord: Union[int, float] = 2) -> Any:  # noqa: A002: the array API's name
    """The vector ``ord``-norm over ``axis`` (None: every element): 2 (Euclidean), 1, inf,
    -inf, 0 (the count of nonzero elements) or any other p (sum of |x|^p to the 1/p)."""
    a = _float_abs(x)
    if ord == math.inf:
        return _max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return _min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _sum(f.not_equal(a, 0).astype(a.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return _sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return f.sqrt(_sum(f.multiply(a, a), axis=axis, keepdims=keepdims))
    return f.pow(_sum(f.pow(a, ord), axis=axis, keepdims=keepdims), 1.0 / ord)


def matrix_norm(x: Any, /, *, keepdims: bool = False,
                ord: Union[int, float, str, None] = "fro") -> Any:  # noqa: A002
    """The matrix norm of each matrix (the last two axes): 'fro' (Frobenius), 1 and -1 (the
    largest and smallest column sums of |x|), inf and -inf (row sums). 'nuc', 2 and -2 need the
    singular values (an SVD), which the daemon does not compute: NotImplementedError."""
    _matrices(x, "matrix_norm")
    if ord is None:
        ord = "fro"
    a = _float_abs(x)
    if ord == "fro":
        out = f.sqrt(_sum(f.multiply(a, a), axis=(-2, -1), keepdims=True))
    elif ord in (1, -1, math.inf, -math.inf):
        along, across = (-2, -1) if ord in (1, -1) else (-1, -2)
        pick = _max if ord > 0 else _min
        out = pick(_sum(a, axis=along, keepdims=True), axis=across, keepdims=True)
    elif ord in ("nuc", 2, -2):
        raise NotImplementedError(
            f"linalg.matrix_norm(ord={ord!r}) needs the singular values (an SVD), which the "
            "daemon does not compute; 'fro', 1, -1, inf and -inf are served")
    else:
        raise ValueError(f"linalg.matrix_norm: ord={ord!r} is not a matrix norm")
    return out if keepdims else reshape(out, tuple(out.shape[:-2]))


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The cross product of 3-element vectors along ``axis`` (the operands broadcast)."""
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    axis = normalize_axis(axis, len(shape))

    def component(x: Any, i: int) -> Any:
        own = axis - (len(shape) - x.ndim)  # the axis in x's own numbering
        if own < 0 or x.shape[own] != 3:
            raise ValueError(f"linalg.cross: axis {axis} of the broadcast shapes {x1.shape} and "
                             f"{x2.shape} must hold 3 elements in both")
        key = [slice(None)] * x.ndim
        key[own] = i
        return x[tuple(key)]

    a = [component(x1, i) for i in range(3)]
    b = [component(x2, i) for i in range(3)]
    parts = [f.subtract(f.multiply(a[1], b[2]), f.multiply(a[2], b[1])),
             f.subtract(f.multiply(a[2], b[0]), f.multiply(a[0], b[2])),
             f.subtract(f.multiply(a[0], b[1]), f.multiply(a[1], b[0]))]
    return stack(parts, axis=axis)


def matrix_power(x: Any, n: int, /) -> Any:
    """``x`` (square matrices) to the integer power ``n`` >= 0, by repeated squaring with
    matmul; ``n`` = 0 gives identities. A negative power needs an inverse: NotImplementedError."""
    _matrices(x, "matrix_power")
    n = operator.index(n)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"linalg.matrix_power takes square matrices, not {x.shape[-2:]}")
    if n < 0:
        raise NotImplementedError(
            "linalg.matrix_power with a negative power needs an inverse, which the daemon does "
            "not compute")
    if n == 0:
        identity = new_like(x, pb.Fill(eye=pb.Fill.Eye(k=0)), shape=x.shape[-2:])
        return identity if x.ndim == 2 else broadcast_to(identity, tuple(x.shape))
    result, square = None, x
    while n:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if n:
            square = matmul(square, square)
    return result


__all__ = ["cross", "diagonal", "matmul", "matrix_norm", "matrix_power", "matrix_transpose",
           "outer", "tensordot", "trace", "vecdot", "vector_norm"]
