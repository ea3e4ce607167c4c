"""The array API's ``cumulative_sum`` and ``cumulative_prod``, which the daemon has no op for:
an inclusive scan in ceil(log2(n)) steps (Hillis and Steele), each adding (or multiplying) the
array shifted by 1, 2, 4... along the axis, the vacated places filled with the identity. Each step
is a slice, a concat and an elementwise request on the daemon; floats sum in another order than a
sequential loop, so their last bits may differ from NumPy's ``cumsum``."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _functions as f
from ._indexing import normalize_axis
from ._like import new_like, ones_fill, zeros_fill
from ._manipulation import concat


def _identity_block(y: Any, axis: int, length: int, fill: Any) -> Any:
    shape = list(y.shape)
    shape[axis] = length
    return new_like(y, fill, shape=tuple(shape))


def _scan(name: str, x: Any, axis: Optional[int], dtype: Any, include_initial: bool) -> Any:
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"{name}: axis is required for an array of {x.ndim} axes")
        axis = 0
    axis = normalize_axis(axis, x.ndim)
    reduce = np.sum if name == "cumulative_sum" else np.prod
    out_dtype = reduce(np.zeros(1, x.dtype), dtype=dtype).dtype  # the reduction's dtype
    y = x if x.dtype == out_dtype else x.astype(out_dtype)
    op, fill = (f.add, zeros_fill) if name == "cumulative_sum" else (f.multiply, ones_fill)
    n = x.shape[axis]
    head = (slice(None),) * axis
    step = 1
    while step < n:
        shifted = concat([_identity_block(y, axis, step, fill()), y[head + (slice(0, n - step),)]],
                         axis=axis)
        y = op(y, shifted)
        step *= 2
    if y is x:
        y = x.astype(x.dtype)  # a new array, as for every other length
    if include_initial:
        y = concat([_identity_block(y, axis, 1, fill()), y], axis=axis)
    return y


def cumulative_sum(x: Any, /, *, axis: Optional[int] = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
    """Running sums along ``axis`` (optional for 1-D arrays); dtypes as ``sum``'s;
    ``include_initial``: a leading 0."""
    return _scan("cumulative_sum", x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: Optional[int] = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    """Running products along ``axis``; dtypes as ``prod``'s; ``include_initial``: a leading 1."""
    return _scan("cumulative_prod", x, axis, dtype, include_initial)


__all__ = ["cumulative_prod", "cumulative_sum"]
