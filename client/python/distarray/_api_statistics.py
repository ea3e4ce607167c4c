"""The array API's reductions where they differ from NumPy's methods: ``sum``/``prod`` with
``dtype=``, ``std``/``var`` with ``correction``, ``count_nonzero``, ``diff``. Composed from the
daemon's reductions and elementwise ops (no download)."""

from __future__ import annotations

import math
import operator
from typing import Any, Optional, Tuple

import numpy as np

from . import _functions as f
from ._indexing import normalize_axes
from ._manipulation import concat
from ._ops import Axis


def _axes(x: Any, axis: Axis) -> Tuple[int, ...]:
    if axis is None:
        return tuple(range(x.ndim))
    return normalize_axes(axis, x.ndim)


def _reduce_in(name: str, x: Any, axis: Axis, dtype: Any, keepdims: bool) -> Any:
    if dtype is not None:
        dtype = np.dtype(dtype)
        if x.dtype != dtype:
            x = x.astype(dtype)
    out = getattr(f, name)(x, axis, keepdims=keepdims)
    # The daemon sums small integers in 64 bits; the array API gives the asked dtype.
    if dtype is not None and out.dtype != dtype:
        out = out.astype(dtype)
    return out


def sum(x: Any, /, *, axis: Axis = None, dtype: Any = None,  # noqa: A001: the array API's name
        keepdims: bool = False) -> Any:
    """Sum over ``axis``; ``dtype``: the dtype to sum in and return (the input converted first)."""
    return _reduce_in("sum", x, axis, dtype, keepdims)


def prod(x: Any, /, *, axis: Axis = None, dtype: Any = None, keepdims: bool = False) -> Any:
    """Product over ``axis``; ``dtype`` as ``sum``'s."""
    return _reduce_in("prod", x, axis, dtype, keepdims)


def var(x: Any, /, *, axis: Axis = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Variance: ``sum((x - mean)**2) / (N - correction)`` over ``axis``."""
    axes = _axes(x, axis)
    n = math.prod(x.shape[a] for a in axes)
    centered = f.subtract(x, f.mean(x, axes, keepdims=True))
    squares = f.sum(f.multiply(centered, centered), axes, keepdims=keepdims)
    return f.divide(squares, float(max(n - correction, 0)))


def std(x: Any, /, *, axis: Axis = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Standard deviation: ``sqrt(var(x, axis=, correction=))``."""
    return f.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def count_nonzero(x: Any, /, *, axis: Axis = None, keepdims: bool = False) -> Any:
    """How many elements over ``axis`` are not zero (int64)."""
    return f.sum(f.not_equal(x, 0), axis, keepdims=keepdims)


def diff(x: Any, /, *, axis: int = -1, n: int = 1, prepend: Optional[Any] = None,
         append: Optional[Any] = None) -> Any:
    """The ``n``-th forward difference along ``axis`` (``prepend``/``append`` joined first)."""
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: n must be non-negative, not {n}")
    axis = normalize_axes(axis, x.ndim)[0]
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat(parts, axis=axis)
    head = (slice(None),) * axis
    for _ in range(n):
        x = f.subtract(x[head + (slice(1, None),)], x[head + (slice(None, -1),)])
    return x


__all__ = ["count_nonzero", "diff", "prod", "std", "sum", "var"]
