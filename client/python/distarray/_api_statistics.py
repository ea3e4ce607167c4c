"""The array API's reductions where they differ from NumPy's methods: ``sum``/``prod`` with
``dtype=``, ``std``/``var`` with ``correction``, ``count_nonzero``, ``diff``. Composed from the
daemon's reductions and elementwise ops (no download)."""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any, Optional, Tuple

import numpy as np

from . import _functions as f
from ._api_elementwise import imag, real
from ._indexing import normalize_axes
from ._manipulation import concat
from ._ops import Axis


def _axes(x: Any, axis: Axis) -> Tuple[int, ...]:
    if axis is None:
        return tuple(range(x.ndim))
    return normalize_axes(axis, x.ndim)


def _no_axes(axis: Axis) -> bool:
    """``axis=()``: the array API's reduction over no axis, an elementwise copy (the daemon's
    empty axis list means every axis)."""
    return isinstance(axis, (tuple, list)) and len(axis) == 0


def _reduce_in(name: str, x: Any, axis: Axis, dtype: Any, keepdims: bool, options: dict) -> Any:
    if _no_axes(axis):
        # The dtype NumPy's reduction gives, applied to each element.
        model = getattr(np, name)(np.zeros(1, x.dtype), dtype=dtype)
        return x.astype(model.dtype)
    if dtype is not None:
        dtype = np.dtype(dtype)
        if x.dtype != dtype:
            x = x.astype(dtype)
    out = getattr(f, name)(x, axis, keepdims=keepdims, **options)
    # The daemon sums small integers in 64 bits; the array API gives the asked dtype.
    if dtype is not None and out.dtype != dtype:
        out = out.astype(dtype)
    return out


def sum(x: Any, /, axis: Axis = None, *, dtype: Any = None,  # noqa: A001: the array API's name
        keepdims: bool = False, **options: Any) -> Any:
    """Sum over ``axis``; ``dtype``: the dtype to sum in and return (the input converted first).
    ``options``: the module reduction's (``combine=``, ``name=``)."""
    return _reduce_in("sum", x, axis, dtype, keepdims, options)


def prod(x: Any, /, axis: Axis = None, *, dtype: Any = None, keepdims: bool = False,
         **options: Any) -> Any:
    """Product over ``axis``; ``dtype`` and ``options`` as ``sum``'s."""
    return _reduce_in("prod", x, axis, dtype, keepdims, options)


def var(x: Any, /, *, axis: Axis = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Variance: ``sum(|x - mean|**2) / (N - correction)`` over ``axis``; of a complex array,
    real: the variance of the real part plus that of the imaginary part (NumPy's)."""
    if np.dtype(x.dtype).kind == "c":
        return f.add(var(real(x), axis=axis, correction=correction, keepdims=keepdims),
                     var(imag(x), axis=axis, correction=correction, keepdims=keepdims))
    axes = _axes(x, axis)
    n = math.prod(x.shape[a] for a in axes)
    if axes:
        centered = f.subtract(x, f.mean(x, axes, keepdims=True))
        squares = f.sum(f.multiply(centered, centered), axes, keepdims=keepdims)
    else:  # no axis: each element is its own mean (x - x: NaN for infinities, as NumPy's)
        centered = f.subtract(x, x)
        squares = f.multiply(centered, centered)
    return f.divide(squares, float(builtins.max(n - correction, 0)))


def std(x: Any, /, *, axis: Axis = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    """Standard deviation: ``sqrt(var(x, axis=, correction=))``."""
    return f.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def _elementwise_reduction(name: str, each: Any) -> Any:
    """The module's reduction ``name``, with ``axis=()`` as ``each(x)`` on every element."""
    reduce = getattr(f, name)

    def reduction(x: Any, /, axis: Axis = None, *, keepdims: bool = False,
                  **options: Any) -> Any:
        if _no_axes(axis):
            return each(x)
        return reduce(x, axis, keepdims=keepdims, **options)

    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = reduce.__doc__
    return reduction


max = _elementwise_reduction("max", lambda x: x.astype(x.dtype))  # noqa: A001
min = _elementwise_reduction("min", lambda x: x.astype(x.dtype))  # noqa: A001
mean = _elementwise_reduction("mean", lambda x: x.astype(x.dtype))
all = _elementwise_reduction("all", lambda x: f.not_equal(x, 0))  # noqa: A001
any = _elementwise_reduction("any", lambda x: f.not_equal(x, 0))  # noqa: A001


def count_nonzero(x: Any, /, *, axis: Axis = None, keepdims: bool = False) -> Any:
    """How many elements over ``axis`` are not zero (int64)."""
    if _no_axes(axis):
        return f.not_equal(x, 0).astype(np.int64)
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


__all__ = ["all", "any", "count_nonzero", "diff", "max", "mean", "min", "prod", "std", "sum",
           "var"]
